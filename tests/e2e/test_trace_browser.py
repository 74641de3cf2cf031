"""The Label page in headless Chromium reading OpenTelemetry traces: spans made by
the real OpenTelemetry SDK with OpenInference attributes, written as the Collector's
OTLP JSON, uploaded like any log; a document without id is named by span id."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from playwright.sync_api import expect
from st_browser import grid_rows, grid_with_column
from test_label_browser import upload_log

pytestmark = pytest.mark.e2e


def otlp_file(path) -> str:
    """Two retriever spans of three documents; the second span's document 1 has no id."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    broken = ""
    for turn, drop in enumerate((None, 1)):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, "RETRIEVER")
            span.set_attribute(SpanAttributes.USER_ID, "sam")
            for index in range(3):
                prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{index}."
                if index != drop:
                    span.set_attribute(prefix + DocumentAttributes.DOCUMENT_ID, f"sam-0{index + 1 + turn}")
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_SCORE, 0.6 - index / 10)
            broken = format(span.get_span_context().span_id, "016x")
    request = MessageToDict(encode_spans(exporter.get_finished_spans()))
    for span in request["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["spanId"] = base64.b64decode(span["spanId"]).hex()
        span["traceId"] = base64.b64decode(span["traceId"]).hex()
    path.write_text(json.dumps(request) + "\n")
    return broken


def test_an_otlp_trace_upload_becomes_rows_and_names_the_broken_span(page, tmp_path):
    path = tmp_path / "agent-traces.json"
    broken = otlp_file(path)
    upload_log(page, path)
    expect(page.get_by_text("agent-traces.json: imported 5 rows in 2 turns from 6 read; 1 bad row(s) skipped")).to_be_visible()
    problems = grid_rows(grid_with_column(page, "problem"))
    assert [(r["line"], r["field"]) for r in problems] == [("1", "retrieval.documents.1.document.id")]
    assert broken in problems[0]["problem"]
