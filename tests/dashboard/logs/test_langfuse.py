"""`memlens langfuse pull|push` over real HTTP on loopback against a server answering
Langfuse's public API as Langfuse does (tests/langfuse_server.py): RETRIEVER
observations in as a retrieval log, through the cursor pages and the time range;
labels out as scores on the observation with the memory id in their metadata, the
same ids on a re-run; the keys never printed."""

from __future__ import annotations

import base64

import pytest
from langfuse_server import LangfuseServer

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.logs.langfuse import score_id
from dashboard.logs.retrieval_log import read_log

PUBLIC, SECRET = "pk-lf-41-public", "sk-lf-41-secret"


@pytest.fixture
def langfuse(monkeypatch):
    server = LangfuseServer(PUBLIC, SECRET)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    yield server
    server.close()


def test_pull_reads_each_retriever_observation_as_a_turn(langfuse, tmp_path, capsys):
    out = tmp_path / "langfuse.jsonl"
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"langfuse pull: 5 turn(s) (1 with no document), 6 row(s) -> {out}"
    log = read_log(out)
    assert not log.issues
    rows = sorted((r.message_id, r.memory_id, int(r.rank), float(r.score)) for r in log.rows.itertuples())
    assert rows == [
        ("obs-r1", "mem-a", 1, 0.82),
        ("obs-r1", "mem-b", 2, 0.41),
        ("obs-r2", "mem-a", 2, 0.2),  # {"documents": [...]} with memory_id
        ("obs-r2", "mem-c", 1, 0.55),
        ("obs-r4", "mem-d", 1, 0.66),  # the output as a JSON string, OpenInference names
        ("obs-r5", "mem-e", 1, 0.71),
    ]
    assert list(log.empty_turns["message_id"]) == ["obs-r3"]
    assert "secret question" not in out.read_text() and "private memory text" not in out.read_text()
    # three pages of at most two: the cursor was followed, only RETRIEVER asked for
    pages = [path for method, path in langfuse.requests if method == "GET"]
    assert len(pages) == 3 and all("type=RETRIEVER" in path for path in pages)


def test_pull_takes_a_time_range(langfuse, tmp_path, capsys):
    out = tmp_path / "day2.jsonl"
    assert main(["langfuse", "pull", "--url", langfuse.url, "--from", "2026-01-02", "--to", "2026-01-03", "--out", str(out)]) == 0
    assert "2 turn(s) (1 with no document), 1 row(s)" in capsys.readouterr().out
    assert main(["monitor", str(out), "--floor", "0.5"]) == 0
    assert capsys.readouterr().out.splitlines()[3].split()[:4] == ["2026-01-02", "2", "1", "50.0%"]


def test_push_writes_scores_on_the_observation_and_a_rerun_replaces_them(langfuse, tmp_path, capsys):
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    db.labels.save(message_id="obs-r1", memory_id="mem-a", label="relevant", reviewer="ana", store="langfuse", rank=1, score=0.82)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="not_relevant", reviewer="ana", store="langfuse", rank=2, score=0.41)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="not_relevant", reviewer="bo", store="langfuse", rank=2, score=0.41)
    db.labels.save(message_id="obs-r9", memory_id="mem-z", label="relevant", reviewer="ana", store="langfuse")  # not in Langfuse
    db.judge_labels.save(message_id="obs-r2", memory_id="mem-c", source="judge:strict@small", grade=3, reason="quotes the memory")
    db.close()
    argv = ["langfuse", "push", "--url", langfuse.url, "--labels", str(labels)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "langfuse push: 3 score(s) 'relevance' on 2 observation(s) (2 from people, 1 from judges)"
    assert "1 label(s) not sent" in captured.err
    sent = {(s["observationId"], s["metadata"]["memory_id"]): s for s in langfuse.scores.values()}
    assert set(sent) == {("obs-r1", "mem-a"), ("obs-r1", "mem-b"), ("obs-r2", "mem-c")}
    b = sent[("obs-r1", "mem-b")]
    assert (b["name"], b["value"], b["dataType"], b["source"], b["traceId"]) == ("relevance", 0.0, "BOOLEAN", "ANNOTATION", "trace-1")
    assert b["metadata"] == {"memory_id": "mem-b", "rank": 2, "from": "memlens", "reviewers": ["ana", "bo"]}
    c = sent[("obs-r2", "mem-c")]
    assert (c["value"], c["source"], c["metadata"]["grades"]) == (1.0, "API", [3])
    assert "quotes the memory" not in str(c)  # the judge's reason stays home
    assert b["id"] == score_id("obs-r1", "mem-b", "human")

    db = AppDatabase(labels)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="relevant", reviewer="ana", store="langfuse", rank=2, score=0.41)
    db.close()
    assert main(argv) == 0
    assert len(langfuse.scores) == 3  # upserted by id: replaced, not added
    assert langfuse.scores[score_id("obs-r1", "mem-b", "human")]["value"] == 1.0  # a tie counts as relevant


def test_wrong_keys_exit_2_and_no_key_is_printed(langfuse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-wrong-41")
    code = main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("memlens langfuse: Langfuse observations: UnauthorizedError")
    for secret in ("sk-lf-wrong-41", PUBLIC, base64.b64encode(f"{PUBLIC}:sk-lf-wrong-41".encode()).decode()):
        assert secret not in captured.out + captured.err
    monkeypatch.delenv("LANGFUSE_SECRET_KEY")
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "set $LANGFUSE_PUBLIC_KEY and $LANGFUSE_SECRET_KEY" in capsys.readouterr().err


def test_a_key_with_a_control_character_is_refused_before_anything_is_sent(langfuse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-41\x1b[31msecret")
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "$LANGFUSE_SECRET_KEY holds a control character (\\x1b at position 9" in err
    assert "sk-lf-41" not in err and "\x1b" not in err
    assert langfuse.requests == []


# ------------------------------------------------------------------ hostile answers (issue 52)


def _forms_of(secret: str) -> list[str]:
    middle = len(secret) // 2
    return [secret, base64.b64encode(secret.encode()).decode().rstrip("="), secret[::-1],
            secret[:middle] + "\n" + secret[middle:], secret[:middle] + "\\n" + secret[middle:]]


def test_a_401_echoing_the_basic_header_prints_neither_key_in_any_form(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    with HostileServer(mode="echo401") as server:
        assert main(["langfuse", "pull", "--url", server.url(), "--out", str(tmp_path / "x.jsonl")]) == 2
        header = server.received[0].headers["authorization"]
    captured = capsys.readouterr()
    basic = base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()
    assert header == f"Basic {basic}" and "401" in captured.err
    for form in [*_forms_of(PUBLIC), *_forms_of(SECRET), *_forms_of(basic), basic[:16]]:
        assert form not in captured.out + captured.err, (form, captured.err)


def test_pull_stops_on_a_repeated_cursor(tmp_path, monkeypatch, capsys):
    """The figure the issue asks for: how long `langfuse pull` takes to stop on a
    server that sends the same cursor for ever (printed with -s)."""
    import time

    from hostile_server import HostileServer

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    with HostileServer(mode="cursor") as server:
        started = time.monotonic()
        code = main(["langfuse", "pull", "--url", server.url(), "--out", str(tmp_path / "x.jsonl")])
        took = time.monotonic() - started
        requests = len(server.received)
    with capsys.disabled():
        print(f"\nlangfuse pull on a repeating cursor: stopped after {requests} requests in {took:.2f} s")
    err = capsys.readouterr().err
    assert code == 2 and requests == 2 and took < 10
    assert "the server sent the same page cursor again after 2 page(s)" in err and len(err.splitlines()) == 1


def test_pull_stops_at_its_page_limit(langfuse, monkeypatch):
    from dashboard.logs import langfuse as langfuse_logs

    api = langfuse_logs.client(langfuse.url, PUBLIC, SECRET)
    with pytest.raises(langfuse_logs.LangfuseError, match="more than 2 pages of 500 observations"):
        langfuse_logs._observations(api, [PUBLIC, SECRET], max_pages=2)


def _one_observation(output) -> bytes:
    import json

    observation = {"id": "obs-1", "traceId": "t-1", "projectId": "p-1", "type": "RETRIEVER", "startTime": "2026-01-01T09:00:00Z"}
    return json.dumps({"data": [{**observation, "output": output}], "meta": {}}).encode()


def test_pull_of_5000_deep_output_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    body = _one_observation("DEEP").replace(b'"DEEP"', b"[" * 5000 + b"]" * 5000)
    with HostileServer(mode="answer", body=body) as server:
        assert main(["langfuse", "pull", "--url", server.url(), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "JSON nested deeper than 100 levels" in err and len(err.splitlines()) == 1, err


def test_a_401_digit_score_is_no_score_not_an_overflow(tmp_path, monkeypatch, capsys):
    from hostile_server import HostileServer

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    body = _one_observation([{"id": "mem-a", "score": "HUGE"}, {"id": "mem-b", "score": 0.5}]).replace(b'"HUGE"', b"9" * 401)
    out = tmp_path / "x.jsonl"
    with HostileServer(mode="answer", body=body) as server:
        assert main(["langfuse", "pull", "--url", server.url(), "--out", str(out)]) == 0
    assert "1 turn(s) (0 with no document), 2 row(s)" in capsys.readouterr().out
    assert "score" not in out.read_text().splitlines()[0] and '"score": 0.5' in out.read_text().splitlines()[1]


@pytest.mark.parametrize("out", ["/dev/full", "missing/x.jsonl", "."])
def test_pull_that_cannot_write_its_log_is_one_line_and_exit_2(langfuse, out, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens langfuse: {out}: cannot write the log (") and len(err.splitlines()) == 1, err
