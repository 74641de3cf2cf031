"""`memlens phoenix pull|push` against a real `phoenix serve` on loopback: retriever
spans sent over OTLP come back as a retrieval log (a span a turn, a document a row, a
span with no documents an empty turn) that the log reader and the monitor read; labels
from a real label database go back as document annotations `relevance` that Phoenix's
own GraphQL API shows (its precision computed from the judge's, which Phoenix's
retrieval metrics read), and a re-run replaces them instead of adding more."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from phoenix_server import PhoenixServer

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.logs.retrieval_log import read_log

PROJECT = "agent-memory"
DAY = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
# (turn, day offset, documents (id, score)); turn 2 retrieved nothing
TURNS = [
    (0, 0, [("mem-a", 0.82), ("mem-b", 0.41), ("mem-c", 0.30)]),
    (1, 0, [("mem-d", 0.55), ("mem-a", 0.20)]),
    (2, 1, []),
    (3, 1, [("mem-e", 0.66)]),
    (4, 2, [("mem-f", 0.71), ("mem-g", 0.12)]),
]


def send_spans(url: str) -> dict[int, str]:
    """The turns as OpenInference retriever spans (plus one LLM span that is no turn)
    over OTLP/HTTP, as an instrumented agent sends them; turn -> span id."""
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("memlens-test")
    ids = {}
    for turn, day, documents in TURNS:
        start = DAY + timedelta(days=day, minutes=turn)
        nanos = int(start.timestamp() * 1e9)
        span = tracer.start_span("memory.search", start_time=nanos)
        span.set_attribute("openinference.span.kind", "RETRIEVER")
        span.set_attribute("input.value", f"secret question {turn}")
        for position, (memory_id, score) in enumerate(documents):
            span.set_attribute(f"retrieval.documents.{position}.document.id", memory_id)
            span.set_attribute(f"retrieval.documents.{position}.document.score", score)
            span.set_attribute(f"retrieval.documents.{position}.document.content", f"private memory text {memory_id}")
        span.end(end_time=nanos + 5_000_000)
        ids[turn] = format(span.get_span_context().span_id, "016x")
    other = tracer.start_span("llm.call", start_time=int(DAY.timestamp() * 1e9))
    other.set_attribute("openinference.span.kind", "LLM")
    other.end(end_time=int(DAY.timestamp() * 1e9) + 1000)
    provider.shutdown()
    return ids


@pytest.fixture(scope="module")
def phoenix():
    server = PhoenixServer().start()
    server.span_ids = send_spans(server.url)
    # spans are written by a background inserter: wait until all six are there
    deadline = time.monotonic() + 60
    query = '{ projects { edges { node { name spans(first: 20) { edges { node { spanId } } } } } } }'
    while time.monotonic() < deadline:
        projects = server.graphql(query)["projects"]["edges"]
        found = [p["node"]["spans"]["edges"] for p in projects if p["node"]["name"] == PROJECT]
        if found and len(found[0]) == 6:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError("Phoenix did not store the spans within 60 s")
    yield server
    server.stop()


def test_pull_reads_each_retriever_span_as_a_turn(phoenix, tmp_path, capsys):
    out = tmp_path / "phoenix.jsonl"
    assert main(["phoenix", "pull", "--project", PROJECT, "--url", phoenix.url, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"phoenix pull: 5 turn(s) (1 with no document), 8 row(s) from project {PROJECT} -> {out}"
    )
    log = read_log(out)
    assert not log.issues
    ids = phoenix.span_ids
    # Phoenix hands a score back within a rounding error (0.82 as 0.8200000000000001)
    got = sorted((r.message_id, r.memory_id, int(r.rank), round(float(r.score), 12)) for r in log.rows.itertuples())
    want = sorted(
        (ids[turn], memory_id, position + 1, score)
        for turn, _, documents in TURNS
        for position, (memory_id, score) in enumerate(documents)
    )
    assert got == want
    assert list(log.empty_turns["message_id"]) == [ids[2]]
    # ids and scores only: neither the question nor the documents' text leave Phoenix
    text = out.read_text()
    assert "secret question" not in text and "private memory text" not in text
    assert set(log.rows["store"]) == {f"phoenix:{PROJECT}"}


def test_pull_takes_a_time_range_and_the_monitor_reads_the_log(phoenix, tmp_path, capsys):
    out = tmp_path / "day2.jsonl"
    argv = ["phoenix", "pull", "--project", PROJECT, "--url", phoenix.url, "--out", str(out), "--from", "2026-01-02", "--to", "2026-01-03"]
    assert main(argv) == 0
    assert "2 turn(s) (1 with no document), 1 row(s)" in capsys.readouterr().out
    assert main(["monitor", str(out), "--floor", "0.5", "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "floor 0.5, 1d windows, 1 window(s) from 1 file(s)"
    assert lines[3].split()[:4] == ["2026-01-02", "2", "1", "50.0%"]  # one turn of two left with no memory


def test_pull_refuses_a_range_over_its_limit_instead_of_cutting_it(phoenix, tmp_path, capsys):
    out = tmp_path / "cut.jsonl"
    assert main(["phoenix", "pull", "--project", PROJECT, "--url", phoenix.url, "--out", str(out), "--limit", "3"]) == 2
    assert "3 retriever spans or more in the range: narrow --from/--to, or raise --limit" in capsys.readouterr().err
    assert not out.exists()


DOCUMENTS = """
{ projects { edges { node { name spans(first: 20) { edges { node {
  spanId
  documentEvaluations { name label score annotatorKind documentPosition metadata }
  documentRetrievalMetrics(evaluationName: "relevance") { precision(k: 2) }
} } } } } } }
"""


def annotations_in_phoenix(phoenix) -> dict[str, dict]:
    projects = phoenix.graphql(DOCUMENTS)["projects"]["edges"]
    spans = next(p["node"]["spans"]["edges"] for p in projects if p["node"]["name"] == PROJECT)
    return {s["node"]["spanId"]: s["node"] for s in spans}


def test_push_writes_labels_as_document_annotations_and_a_rerun_replaces_them(phoenix, tmp_path, capsys):
    ids = phoenix.span_ids
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    # ana labels turn 0 on the Label page; a judge graded one of its memories; one
    # label is of a pair Phoenix does not have
    db.labels.save(message_id=ids[0], memory_id="mem-a", label="relevant", reviewer="ana", store=f"phoenix:{PROJECT}", rank=1, score=0.82)
    db.labels.save(message_id=ids[0], memory_id="mem-b", label="not_relevant", reviewer="ana", store=f"phoenix:{PROJECT}", rank=2, score=0.41)
    db.labels.save(message_id="live-0000", memory_id="mem-z", label="relevant", reviewer="ana", store="embedded:1")
    db.judge_labels.save(message_id=ids[0], memory_id="mem-c", source="judge:strict@small", grade=3, reason="mentions the memory text")
    # a person's label of a document wins over the judge's on the same document
    db.judge_labels.save(message_id=ids[0], memory_id="mem-b", source="judge:strict@small", grade=3, reason="-")
    # turn 1 only a judge graded: one of its two documents relevant
    db.judge_labels.save(message_id=ids[1], memory_id="mem-d", source="judge:strict@small", grade=2, reason="-")
    db.judge_labels.save(message_id=ids[1], memory_id="mem-a", source="judge:strict@small", grade=1, reason="-")
    db.close()
    argv = ["phoenix", "push", "--project", PROJECT, "--url", phoenix.url, "--labels", str(labels)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"phoenix push: 5 annotation(s) 'relevance' on 2 span(s) of project {PROJECT} (2 HUMAN, 3 LLM)"
    assert "1 label(s) not sent" in captured.err
    span = annotations_in_phoenix(phoenix)[ids[0]]
    seen = sorted((a["documentPosition"], a["name"], a["label"], a["score"], a["annotatorKind"]) for a in span["documentEvaluations"])
    assert seen == [
        (0, "relevance", "relevant", 1.0, "HUMAN"),
        (1, "relevance", "not_relevant", 0.0, "HUMAN"),
        (2, "relevance", "relevant", 1.0, "LLM"),
    ]
    judged = annotations_in_phoenix(phoenix)[ids[1]]
    assert sorted((a["documentPosition"], a["label"], a["annotatorKind"]) for a in judged["documentEvaluations"]) == [
        (0, "relevant", "LLM"),
        (1, "not_relevant", "LLM"),
    ]
    # Phoenix's own retrieval metrics read the LLM annotations: precision@2 of turn 1
    assert judged["documentRetrievalMetrics"][0]["precision"] == pytest.approx(0.5)

    # ana changes her mind, and bo agrees with her; the push runs again (cron): one
    # annotation a document, updated
    db = AppDatabase(labels)
    db.labels.save(message_id=ids[0], memory_id="mem-b", label="relevant", reviewer="ana", store=f"phoenix:{PROJECT}", rank=2, score=0.41)
    db.labels.save(message_id=ids[0], memory_id="mem-b", label="relevant", reviewer="bo", store=f"phoenix:{PROJECT}", rank=2, score=0.41)
    db.close()
    assert main(argv) == 0
    assert main(argv) == 0
    capsys.readouterr()
    span = annotations_in_phoenix(phoenix)[ids[0]]
    assert len(span["documentEvaluations"]) == 3
    assert {(a["documentPosition"], a["label"]) for a in span["documentEvaluations"]} == {(0, "relevant"), (1, "relevant"), (2, "relevant")}
    assert len(annotations_in_phoenix(phoenix)[ids[1]]["documentEvaluations"]) == 2


def test_push_people_only_sends_no_judge_label(phoenix, tmp_path, capsys):
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    db.judge_labels.save(message_id=phoenix.span_ids[4], memory_id="mem-f", source="judge:strict@small", grade=0, reason="-")
    db.close()
    argv = ["phoenix", "push", "--project", PROJECT, "--url", phoenix.url, "--labels", str(labels), "--people-only"]
    assert main(argv) == 0
    assert "0 annotation(s)" in capsys.readouterr().out
    assert annotations_in_phoenix(phoenix)[phoenix.span_ids[4]]["documentEvaluations"] == []


def test_an_unreachable_phoenix_exits_2_and_never_prints_the_api_key(tmp_path, monkeypatch, capsys):
    from ports import free_port

    monkeypatch.setenv("PHOENIX_API_KEY", "phx-key-41-secret")
    closed = f"http://127.0.0.1:{free_port()}"
    code = main(["phoenix", "pull", "--project", PROJECT, "--url", closed, "--out", str(tmp_path / "x.jsonl")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.startswith(f"memlens phoenix: Phoenix spans: Phoenix at {closed} refused the connection")
    assert "phx-key-41-secret" not in captured.out + captured.err
    assert not (tmp_path / "x.jsonl").exists()
    with pytest.raises(httpx.ConnectError):  # the port really was closed
        httpx.get(closed, timeout=2)


def test_a_refusal_names_the_status_and_the_server_s_reason_on_one_terminal_safe_line(tmp_path, capsys):
    from hostile_server import HostileServer

    # a 500 whose body, as text, retitles and paints the terminal
    with HostileServer(mode="control", control_body="no \x1b]0;pwned\x07 \x1b[31mred\x1b[0m") as server:
        code = main(["phoenix", "pull", "--project", PROJECT, "--url", server.url(), "--out", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("memlens phoenix: Phoenix spans: HTTP 500 to POST /v1/spans: "), err
    assert "\\x1b]0;pwned\\x07" in err and "\x1b" not in err and err.count("\n") == 1


def test_an_api_key_with_a_control_character_is_refused_before_anything_is_sent(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    monkeypatch.setenv("PHOENIX_API_KEY", "phx-key-41\nsecret")
    with HostileServer(mode="ok") as server:
        code = main(["phoenix", "pull", "--project", PROJECT, "--url", server.url(), "--out", str(tmp_path / "x.jsonl")])
        assert server.received == []
    err = capsys.readouterr().err
    assert code == 2 and "$PHOENIX_API_KEY holds a control character (\\n at position 11 of 17)" in err
    assert "phx-key-41" not in err


def test_round_trip_spans_in_a_session_labelled_annotations_in_phoenix(phoenix, tmp_path, capsys):
    """Spans in, a labelling session drawn from them and labelled as the Label page
    records it, the labels out, and Phoenix showing them on the span's document."""
    from dashboard.labels.labelling import load_queue, record
    from dashboard.labels.sampling import save_session

    out = tmp_path / "day2.jsonl"
    argv = ["phoenix", "pull", "--project", PROJECT, "--url", phoenix.url, "--out", str(out), "--from", "2026-01-02", "--to", "2026-01-03"]
    assert main(argv) == 0
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    save_session(db, "phoenix day 2", read_log(out).rows, method="turns", size=10, seed=7, reviewers=["ana"], source=str(out))
    queue = load_queue(db, "phoenix day 2", "ana")
    assert [(item.message_id, item.memory_id) for item in queue.items] == [(phoenix.span_ids[3], "mem-e")]
    record(db, queue.session, queue.items[0], "ana", "relevant")
    db.close()
    capsys.readouterr()
    assert main(["phoenix", "push", "--project", PROJECT, "--url", phoenix.url, "--labels", str(labels)]) == 0
    assert "1 annotation(s) 'relevance' on 1 span(s)" in capsys.readouterr().out
    span = annotations_in_phoenix(phoenix)[phoenix.span_ids[3]]
    assert [(a["documentPosition"], a["label"], a["score"], a["annotatorKind"]) for a in span["documentEvaluations"]] == [
        (0, "relevant", 1.0, "HUMAN")
    ]
    assert span["documentEvaluations"][0]["metadata"]["memory_id"] == "mem-e"


# ------------------------------------------------------------------ hostile answers (issue 52)

KEY = "phx-key-0123456789abcdef"


def _forms_of(secret: str) -> list[str]:
    import base64

    middle = len(secret) // 2
    return [secret, base64.b64encode(secret.encode()).decode().rstrip("="), secret[::-1],
            secret[:middle] + "\n" + secret[middle:], secret[:middle] + "\\n" + secret[middle:]]


def _pull(url: str, out, *extra: str) -> list[str]:
    return ["phoenix", "pull", "--project", PROJECT, "--url", url, "--out", str(out), *extra]


def test_pull_refuses_a_200_html_page_instead_of_writing_an_empty_log(tmp_path, capsys):
    from hostile_server import HostileServer

    out = tmp_path / "x.jsonl"
    with HostileServer(mode="html") as server:
        assert main(_pull(server.url(), out)) == 2
    err = capsys.readouterr().err
    assert "answered POST /v1/spans with 200 text/html, not multipart/mixed or application/json" in err, err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_a_401_echoing_the_key_in_any_form_prints_none_of_them(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    monkeypatch.setenv("PHOENIX_API_KEY", KEY)
    with HostileServer(mode="echo401") as server:
        assert main(_pull(server.url(), tmp_path / "x.jsonl")) == 2
    captured = capsys.readouterr()
    assert "HTTP 401" in captured.err
    for form in _forms_of(KEY):
        assert form not in captured.out + captured.err, (form, captured.err)


def test_pull_against_a_gzip_bomb_exits_2_in_bounded_memory(tmp_path):
    """The figure the issue asks for: the peak memory of `phoenix pull` against a 2 MB
    gzip answer that decompresses to 2 GB (printed with -s)."""
    import subprocess
    import sys

    from hostile_server import HostileServer, gzip_bomb

    # The pull's own peak, reported by the process itself as the kernel's high-water mark
    # of its memory (VmHWM, which starts anew at exec). Not getrusage: RUSAGE_CHILDREN is
    # the largest of every child this worker started (a Phoenix server among them), and
    # Linux carries ru_maxrss across exec, so a child forked from a large worker reported
    # the worker's size.
    pull = (
        "import sys; from dashboard.cli.main import main; code = main(sys.argv[1:]); "
        "print('peak-kib', next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:'))); "
        "sys.exit(code)"
    )
    gzip_bomb()  # built before the clock and the child start
    with HostileServer(mode="bomb") as server:
        run = subprocess.run(
            [sys.executable, "-c", pull, *_pull(server.url(), tmp_path / "x.jsonl")],
            capture_output=True, text=True, timeout=120,
        )
    peak = int(run.stdout.split("peak-kib", 1)[1].split()[0]) * 1024
    print(f"\nphoenix pull against a {len(gzip_bomb()) / 1e6:.1f} MB gzip answer (2 GB inflated): peak RSS {peak / 2**20:.0f} MiB")
    assert run.returncode == 2, run.stderr
    assert "decompresses to more than 67,108,864 bytes" in run.stderr and "Traceback" not in run.stderr
    assert peak < 1 << 30


def _span_table(frame) -> bytes:
    """A multipart answer holding one table-schema JSON part, as Phoenix sends a span query's."""
    part = frame.to_json(orient="table")
    return f"--b\r\nContent-Type: application/json\r\n\r\n{part}\r\n--b--\r\n".encode()


@pytest.mark.parametrize("case", ["other columns", "start_time a number"])
def test_pull_of_another_shape_is_one_line_and_exit_2(case, tmp_path, capsys):
    import pandas as pd
    from hostile_server import HostileServer

    index = pd.Index(["span-1"], name="x_context.span_id")
    if case == "other columns":
        frame = pd.DataFrame({"x_name": ["memory.search"]}, index=index)
        said = "expected columns start_time indexed by span id; got columns name"
    else:
        frame = pd.DataFrame({"x_start_time": [12]}, index=index)
        said = "span span-1 has start_time 12, not a time memlens reads"
    with HostileServer(mode="answer", body=_span_table(frame), content_type="multipart/mixed; boundary=b") as server:
        assert main(_pull(server.url(), tmp_path / "x.jsonl")) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.splitlines()) == 1, err


def test_pull_names_a_read_timeout_as_the_limit_that_ended_it(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    from dashboard.logs import phoenix as phoenix_logs

    monkeypatch.setattr(phoenix_logs, "READ_SECONDS", 0.5)
    with HostileServer(mode="drip", interval=2.0, drip_for=4.0) as server:
        assert main(_pull(server.url(), tmp_path / "x.jsonl")) == 2
    err = capsys.readouterr().err
    assert "sent nothing for 0.5 s on POST /v1/spans (memlens waits 0.5 s per read, 300 s in all)" in err, err


@pytest.mark.parametrize("out", ["/dev/full", "missing/x.jsonl", "."])
def test_pull_that_cannot_write_its_log_is_one_line_and_exit_2(phoenix, out, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(_pull(phoenix.url, out)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens phoenix: {out}: cannot write the log (") and len(err.splitlines()) == 1, err


def test_a_document_without_an_id_is_a_bad_row_not_memory_nan(phoenix, tmp_path, capsys):
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "openinference.project.name": "no-ids"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix.url}/v1/traces")))
    span = provider.get_tracer("memlens-test").start_span("memory.search", start_time=int(DAY.timestamp() * 1e9))
    span.set_attribute("openinference.span.kind", "RETRIEVER")
    span.set_attribute("retrieval.documents.0.document.id", "mem-x")
    span.set_attribute("retrieval.documents.0.document.score", 0.9)
    span.set_attribute("retrieval.documents.1.document.score", 0.4)  # no id
    span.end(end_time=int(DAY.timestamp() * 1e9) + 1000)
    provider.shutdown()
    out = tmp_path / "no-ids.jsonl"
    argv = ["phoenix", "pull", "--project", "no-ids", "--url", phoenix.url, "--out", str(out)]
    deadline = time.monotonic() + 60
    while main(argv) == 0 and "0 turn(s)" in capsys.readouterr().out and time.monotonic() < deadline:
        time.sleep(0.5)  # Phoenix writes spans in the background
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "1 turn(s) (0 with no document), 1 row(s)" in captured.out
    assert "1 document(s) without an id written as bad rows" in captured.err
    assert "nan" not in out.read_text()
    log = read_log(out)
    assert list(log.rows["memory_id"]) == ["mem-x"]
    assert [(issue.line, issue.field) for issue in log.issues] == [(2, "memory_id")]
