"""Retrieval traces in and out: spans made by the real OpenTelemetry SDK with
OpenInference (and GenAI) attribute names, encoded by opentelemetry-proto and
written as the Collector's file exporter writes OTLP JSON; imported like any log;
the read log exported with `memlens logs export --otlp` and read back."""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest
from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.labels.sampling import save_session
from dashboard.logs import otlp
from dashboard.logs.log_files import COLUMNS
from dashboard.logs.read_log import logged_query, read_records
from dashboard.logs.retrieval_log import read_log_bytes

QUESTIONS = [
    "Which UI theme does the user prefer?",
    "Where does the user live?",
    "What is the user's favourite pizza topping?",
]


def tracer_and_exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("agent.memory"), exporter


def retriever_span(tracer, query: str, user: str, hits, *, drop_id_at: int | None = None):
    """One OpenInference RETRIEVER span as an instrumented agent records it."""
    with tracer.start_as_current_span("retrieve") as span:
        span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
        span.set_attribute(SpanAttributes.INPUT_VALUE, query)
        span.set_attribute(SpanAttributes.USER_ID, user)
        for index, hit in enumerate(hits):
            prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{index}."
            if index != drop_id_at:
                span.set_attribute(prefix + DocumentAttributes.DOCUMENT_ID, hit.memory_id)
            span.set_attribute(prefix + DocumentAttributes.DOCUMENT_SCORE, hit.score)
            span.set_attribute(prefix + DocumentAttributes.DOCUMENT_CONTENT, hit.text)
        return format(span.get_span_context().span_id, "016x")


def collector_json_lines(spans, *, hex_ids: bool = True) -> bytes:
    """OTLP JSON, one ExportTraceServiceRequest per line (one per span batch here).
    The OTLP/JSON spec writes trace and span ids as hex where protobuf's own JSON
    mapping writes base64; the Collector writes hex."""
    lines = []
    for batch in ([s] for s in spans):
        request = MessageToDict(encode_spans(batch))
        if hex_ids:
            for resource_spans in request["resourceSpans"]:
                for scope_spans in resource_spans["scopeSpans"]:
                    for span in scope_spans["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in span:
                                span[key] = base64.b64decode(span[key]).hex()
        lines.append(json.dumps(request))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def traced(demo_store):
    """Three real retrievals from the demo store, traced, and the same retrievals as
    a memlens JSONL log (message_id = the span id)."""
    tracer, exporter = tracer_and_exporter()
    jsonl = []
    for question in QUESTIONS:
        hits = demo_store.query(question, user_id="sam", k=5).hits
        span_id = retriever_span(tracer, question, "sam", hits)
        for hit in hits:
            jsonl.append({"message_id": span_id, "memory_id": hit.memory_id, "rank": hit.rank, "score": hit.score,
                          "user_id": "sam", "store": "agent"})
    spans = exporter.get_finished_spans()
    jsonl_bytes = "".join(json.dumps(row) + "\n" for row in jsonl).encode()
    return spans, jsonl_bytes


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["message_id", "memory_id", "rank", "score", "user_id", "store"]].reset_index(drop=True)


@pytest.mark.parametrize("hex_ids", [True, False], ids=["collector-hex", "protobuf-base64"])
def test_traces_give_the_same_rows_as_the_equivalent_jsonl_log(traced, hex_ids):
    spans, jsonl_bytes = traced
    traces = read_log_bytes(collector_json_lines(spans, hex_ids=hex_ids), "traces.json")
    log = read_log_bytes(jsonl_bytes, "log.jsonl")
    assert not traces.issues and traces.turns == 3 and len(traces.rows) == 15
    pd.testing.assert_frame_equal(comparable(traces.rows), comparable(log.rows))
    assert traces.rows["timestamp"].notna().all()
    assert traces.rows["query"].isna().all(), "the query text stays out unless the reviewer opts in"


def test_query_text_only_when_opted_in(traced):
    spans, _ = traced
    traces = read_log_bytes(collector_json_lines(spans), "traces.json", include_query=True)
    assert list(dict.fromkeys(traces.rows["query"])) == QUESTIONS


def test_trace_rows_become_a_labelling_session(traced, tmp_path):
    spans, jsonl_bytes = traced
    db = AppDatabase(tmp_path / "labels.sqlite")
    from_traces = save_session(db, "traces", read_log_bytes(collector_json_lines(spans), "t.json").rows,
                               method="turns", size=100, seed=1)
    from_log = save_session(db, "jsonl", read_log_bytes(jsonl_bytes, "l.jsonl").rows, method="turns", size=100, seed=1)
    assert from_traces.size == from_log.size == 15

    def items(name):
        return [(i.message_id, i.memory_id, i.rank, i.score, i.user_id, i.query_text) for i in db.sessions.items(name)]

    assert items("traces") == items("jsonl")
    db.close()


def test_a_document_without_id_is_named_by_line_and_span_id_and_the_rest_kept(demo_store):
    tracer, exporter = tracer_and_exporter()
    good = retriever_span(tracer, QUESTIONS[0], "sam", demo_store.query(QUESTIONS[0], user_id="sam", k=3).hits)
    broken = retriever_span(tracer, QUESTIONS[1], "sam", demo_store.query(QUESTIONS[1], user_id="sam", k=3).hits, drop_id_at=1)
    with tracer.start_as_current_span("llm") as span:  # not a retriever: not a turn, not an issue
        span.set_attribute(SpanAttributes.OPENINFERENCE_SPAN_KIND, "LLM")
    data = collector_json_lines(exporter.get_finished_spans()) + b"{not json\n"
    log = read_log_bytes(data, "traces.json")
    assert [str(i) for i in log.issues] == [
        f"traces.json: line 2, field 'retrieval.documents.1.document.id': span {broken}: the document has no id "
        "(not guessed from its text)",
        "traces.json: line 4, field '(line)': not valid JSON: Expecting property name enclosed in double quotes at column 2",
    ]
    assert log.turns == 2 and len(log.rows) == 5  # 3 + the 2 documents that have ids
    assert set(log.rows["message_id"]) == {good, broken}
    assert log.bad_rows == 2
    assert "imported 5 rows in 2 turns" in log.summary()


def test_genai_retrieval_spans_with_a_documents_list(demo_store):
    tracer, exporter = tracer_and_exporter()
    hits = demo_store.query(QUESTIONS[0], user_id="sam", k=4).hits
    with tracer.start_as_current_span("retrieval memories") as span:
        span.set_attribute("gen_ai.operation.name", "retrieval")
        span.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": h.memory_id, "score": h.score} for h in hits]))
        span_id = format(span.get_span_context().span_id, "016x")
    log = read_log_bytes(collector_json_lines(exporter.get_finished_spans()), "genai.json")
    assert log.rows["message_id"].tolist() == [span_id] * 4
    assert log.rows["memory_id"].tolist() == [h.memory_id for h in hits]
    assert log.rows["rank"].tolist() == [1, 2, 3, 4]
    assert log.rows["score"].tolist() == pytest.approx([h.score for h in hits])


def test_read_log_round_trip_through_the_export_command_loses_no_id_rank_or_score(demo_store, tmp_path, capsys):
    read_log = tmp_path / "reads.jsonl"
    for question in QUESTIONS:
        logged_query(demo_store, question, user_id="sam", k=5, store_fingerprint="embedded:demo", source="inspect",
                     log_path=read_log)
    exported = tmp_path / "reads-otlp.json"
    assert main(["logs", "export", "--otlp", str(exported), "--read-log", str(read_log)]) == 0
    assert capsys.readouterr().out == f"wrote 3 span(s) from 3 read(s) of {read_log} to {exported}\n"
    text = exported.read_text()
    # ids, scores and hashes only: no query, memory or user text
    assert not any(q in text for q in QUESTIONS) and "Prefers light UI theme" not in text and '"sam"' not in text
    records, _ = read_records(read_log)
    back = read_log_bytes(exported.read_bytes(), exported.name)
    assert not back.issues
    expected = [(hit["memory_id"], hit["rank"], hit["score"]) for r in records for hit in r["top_k"]]
    assert list(zip(back.rows["memory_id"], back.rows["rank"], back.rows["score"], strict=True)) == expected
    assert back.turns == 3 and set(back.rows["store"]) == {"embedded:demo"}
    # and `logs check` says the same
    assert main(["logs", "check", str(exported)]) == 0
    assert capsys.readouterr().out.startswith(f"{exported}: imported 15 rows in 3 turns from 15 read; 0 bad row(s)")


def test_logs_check_names_bad_lines_and_exits_2(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text('{"message_id": "m1", "memory_id": "a", "rank": 1, "score": 0.5}\n'
                   '{"message_id": "m1", "memory_id": "b", "rank": "two", "score": 0.4}\n')
    assert main(["logs", "check", str(log)]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{log}: imported 1 rows in 1 turns from 2 read; 1 bad row(s) skipped; 0 duplicate row(s) merged"
    assert out[1] == f"  {log}: line 2, field 'rank': \"two\" is not a whole number"
    assert main(["logs", "check", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read the file" in capsys.readouterr().err


def test_export_spans_follow_both_conventions():
    record = {"at": "2026-01-02T03:04:05.000+00:00", "store": "s:1", "query_hash": "abc", "k": 2, "latency_ms": 12.5,
              "top_k": [{"memory_id": "m-1", "rank": 1, "score": 0.8}, {"memory_id": "m-2", "rank": 2, "score": 0.3}],
              "error": None}
    request = otlp.export_requests([record])[0]
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    attributes = {a["key"]: a["value"] for a in span["attributes"]}
    assert attributes["openinference.span.kind"] == {"stringValue": "RETRIEVER"}
    assert attributes["gen_ai.operation.name"] == {"stringValue": "retrieval"}
    assert attributes["retrieval.documents.1.document.id"] == {"stringValue": "m-2"}
    assert attributes["retrieval.documents.1.document.score"] == {"doubleValue": 0.3}
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    assert int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]) == 12_500_000
    assert set(COLUMNS) >= {"message_id", "memory_id", "rank", "score"}


# ------------------------------------------------------------------ hostile traces


def span_line(span_id: str, documents: list[tuple[str, str]], *, start: str = '"1767225600000000000"',
              extra_attribute: str | None = None) -> str:
    """One request line with one OpenInference retriever span, written as text so a
    test can put in what json.dumps would refuse to build (deep nesting, long numbers);
    `documents` are (id, score as JSON text)."""
    attributes = ['{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}}']
    for index, (memory_id, score) in enumerate(documents):
        prefix = f"retrieval.documents.{index}.document."
        attributes.append(f'{{"key": "{prefix}id", "value": {{"stringValue": "{memory_id}"}}}}')
        attributes.append(f'{{"key": "{prefix}score", "value": {score}}}')
    if extra_attribute is not None:
        attributes.append(f'{{"key": "deep", "value": {extra_attribute}}}')
    span = f'{{"traceId": "{"a" * 32}", "spanId": "{span_id}", "name": "retrieve", "startTimeUnixNano": {start}, "attributes": [{", ".join(attributes)}]}}'
    return f'{{"resourceSpans": [{{"resource": {{}}, "scopeSpans": [{{"spans": [{span}]}}]}}]}}'


def kvlist(depth: int) -> str:
    """An AnyValue holding `depth` kvlistValues inside each other."""
    return '{"kvlistValue": {"values": [{"key": "k", "value": ' * depth + '{"stringValue": "x"}' + "}]}}" * depth


GOOD = [("a", '{"doubleValue": 0.9}'), ("b", '{"doubleValue": 0.5}')]
LONG = "9" * 5000


@pytest.mark.parametrize(
    "bad_line, field, message",
    [
        (span_line("2" * 16, GOOD, extra_attribute=kvlist(50_000)), "(line)", "nested more than 64 levels deep"),
        (span_line("2" * 16, GOOD, start=LONG), "(line)", "a number too long to read"),
        (span_line("2" * 16, GOOD, start=f'"{LONG}"'), "startTimeUnixNano", "span 2222222222222222: a number of 5,000 characters"),
        (span_line("2" * 16, GOOD, start='"18446744073709551616"'), "startTimeUnixNano", "span 2222222222222222: '18446744073709551616' is out of range"),
        (span_line("2" * 16, GOOD, start='"soon"'), "startTimeUnixNano", "span 2222222222222222: 'soon' is not a whole number"),
        (span_line("2" * 16, [("a", f'{{"doubleValue": {LONG}}}')]), "(line)", "a number too long to read"),
        (span_line("2" * 16, [("a", f'{{"doubleValue": "{LONG}"}}')]), "retrieval.documents.0.document.score", "span 2222222222222222: a number of 5,000 characters"),
        (span_line("2" * 16, [("a", f'{{"intValue": "{LONG}"}}')]), "retrieval.documents.0.document.score", "span 2222222222222222: a number of 5,000 characters"),
        (span_line("2" * 16, [("a", '{"doubleValue": "high"}')]), "retrieval.documents.0.document.score", "span 2222222222222222: doubleValue 'high' is not a number"),
    ],
    ids=["kvlist-50000-deep", "start-5000-digit-number", "start-5000-digit-string", "start-past-uint64", "start-text",
         "score-5000-digit-number", "score-5000-digit-string", "score-5000-digit-int", "score-text"],
)
def test_a_hostile_trace_line_is_named_and_the_good_lines_are_kept(bad_line, field, message, tmp_path, capsys):
    data = "\n".join([span_line("1" * 16, GOOD), bad_line, span_line("3" * 16, GOOD)]).encode() + b"\n"
    log = read_log_bytes(data, "traces.json")
    assert [(i.line, i.field) for i in log.issues] == [(2, field)]
    assert log.issues[0].message.startswith(message)
    assert log.rows["message_id"].tolist() == ["1" * 16] * 2 + ["3" * 16] * 2
    assert log.rows["score"].tolist() == [0.9, 0.5, 0.9, 0.5]
    path = tmp_path / "traces.json"
    path.write_bytes(data)
    assert main(["logs", "check", str(path)]) == 2
    out = capsys.readouterr().out
    assert "imported 4 rows in 2 turns" in out and f"line 2, field '{field}': {message}" in out


def test_genai_documents_text_past_the_bounds_is_named():
    def genai(span_id: str, documents: str) -> str:
        attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": "retrieval"}},
                      {"key": "gen_ai.retrieval.documents", "value": {"stringValue": documents}}]
        span = {"spanId": span_id, "startTimeUnixNano": "1", "attributes": attributes}
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})

    lines = [
        genai("1" * 16, json.dumps([{"id": "a", "score": 0.5}])),
        genai("2" * 16, '[{"id": "a", "score": ' + LONG + "}]"),
        genai("3" * 16, "[" * 100_000 + "]" * 100_000),
        genai("4" * 16, '[{"id": "a", "score": 1' + "0" * 400 + "}]"),
    ]
    log = read_log_bytes("\n".join(lines).encode(), "genai.json")
    assert log.rows["message_id"].tolist() == ["1" * 16]
    assert [(i.line, i.field) for i in log.issues] == [
        (2, "gen_ai.retrieval.documents"), (3, "gen_ai.retrieval.documents"), (4, "gen_ai.retrieval.documents[0].score")
    ]
    assert "a number too long to read" in log.issues[0].message
    assert "nested more than 64 levels deep" in log.issues[1].message
