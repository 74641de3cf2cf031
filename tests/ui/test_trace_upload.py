"""OpenTelemetry traces on the pages: the Label page reads an OTLP JSON upload made
by the real OpenTelemetry SDK (query text only when the reviewer opts in, a
document without id named by line and span id); the Quality page offers the read
log as OTLP traces."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from markdown_text import seen
from openinference.semconv.trace import DocumentAttributes, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

PAGE = str(Path(__file__).resolve().parents[2] / "dashboard" / "views" / "label.py")
QUESTION = "Which UI theme does the user prefer?"


@pytest.fixture(scope="module")
def traces(demo_store) -> tuple[bytes, str]:
    """Two retriever spans from real demo-store answers; the second's document 0 has no id."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    span_ids = []
    for drop in (None, 0):
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, "RETRIEVER")
            span.set_attribute(SpanAttributes.INPUT_VALUE, QUESTION)
            for index, hit in enumerate(demo_store.query(QUESTION, user_id="sam", k=3).hits):
                prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{index}."
                if index != drop:
                    span.set_attribute(prefix + DocumentAttributes.DOCUMENT_ID, hit.memory_id)
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_SCORE, hit.score)
            span_ids.append(format(span.get_span_context().span_id, "016x"))
    request = MessageToDict(encode_spans(exporter.get_finished_spans()))
    for scope in request["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            span["spanId"] = base64.b64decode(span["spanId"]).hex()
            span["traceId"] = base64.b64decode(span["traceId"]).hex()
    return (json.dumps(request) + "\n").encode(), span_ids[1]


def upload(data_dir, traces, *, include_query: bool):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.run()
    at.radio(key="log_source").set_value("Upload a log file").run()
    at.file_uploader(key="log_upload").set_value(("traces.json", traces[0], "application/json")).run()
    at.checkbox(key="log_include_query").set_value(include_query).run()
    at.button(key="log_read").click().run()
    assert not at.exception, at.exception
    return at


def test_label_page_reads_otlp_traces_and_names_the_broken_span(data_dir, traces):
    at = upload(data_dir, traces, include_query=False)
    assert "imported 5 rows in 2 turns from 6 read; 1 bad row(s) skipped" in seen(" ".join(at.caption.values))
    issues = at.dataframe[0].value
    assert list(zip(issues["line"], issues["field"], strict=True)) == [(1, "retrieval.documents.0.document.id")]
    assert traces[1] in issues["problem"].iloc[0]
    log = at.session_state["label_log"]
    assert log.rows["query"].isna().all()


def test_label_page_keeps_the_span_query_only_when_asked(data_dir, traces):
    at = upload(data_dir, traces, include_query=True)
    assert set(at.session_state["label_log"].rows["query"]) == {QUESTION}


def test_quality_page_offers_the_read_log_as_otlp_traces(app, data_dir):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    at.button(key="quality_run_demo").click().run()  # reads to log: opening the page sends none
    assert not at.exception, at.exception
    assert any(b.label == "Download as OpenTelemetry traces (OTLP JSON)" for b in at.download_button)


def test_label_page_names_a_trace_line_nested_50000_deep_and_keeps_the_others(data_dir, traces):
    """A kvlistValue 50,000 levels deep is a bad line on the page, not a traceback,
    and the good line before it is imported."""
    deep = '{"kvlistValue": {"values": [{"key": "k", "value": ' * 50_000 + '{"stringValue": "x"}' + "}]}}" * 50_000
    bad = '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "2222222222222222", "attributes": [{"key": "deep", "value": ' + deep + "}]}]}]}]}\n"
    at = upload(data_dir, (traces[0] + bad.encode(), traces[1]), include_query=False)
    assert not at.exception, at.exception
    assert "imported 5 rows in 2 turns" in seen(" ".join(at.caption.values))
    issues = at.dataframe[0].value
    assert (2, "(line)") in list(zip(issues["line"], issues["field"], strict=True))
    assert "nested more than 64 levels deep" in " ".join(issues["problem"])
