"""The precision side of `memlens monitor`: a log whose relevant memories are swapped
for irrelevant ones (same ranks, same scores) from a known day. The no-memory and
drift figures cannot see it; a judge grading a seeded sample per window can. The
judge is a real loopback model server grading by the demo judgments, the memory
text is read from the demo store, the grades are cached in a real SQLite app database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from chat_model_server import ChatModelServer, Reply
from judged_logs import DAYS, START, SWAP_DAY, constant_judge, demo_judge, log_text, user_memories

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.monitoring.precision import BANDS, band_of, wilson


@pytest.fixture(scope="module")
def memories(demo_store):
    return user_memories(demo_store)


@pytest.fixture(scope="module")
def judge_server(demo_store):
    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    with ChatModelServer(demo_judge(texts)) as server:
        yield server


def write_log(path: Path, memories: dict[str, list[str]], swap_from: int | None) -> None:
    path.write_text(log_text(memories, swap_from), encoding="utf-8")


@pytest.fixture
def setup(tmp_path, monkeypatch, judge_server, demo_dir, memories):
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", judge_server.url)
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n', encoding="utf-8")
    swapped, unchanged = tmp_path / "swapped.jsonl", tmp_path / "unchanged.jsonl"
    write_log(swapped, memories, SWAP_DAY)
    write_log(unchanged, memories, None)
    base = ["--floor", "0.35", "--baseline-windows", "7", "--min-turns", "10", "--fail-on-alert"]
    judged = ["--judge", str(config), "--send-text", "--sample", "12", "--db", str(demo_dir / "demo.sqlite")]
    return swapped, unchanged, base, judged, tmp_path


def test_without_a_judge_the_swap_goes_unseen_and_that_is_said_once(setup, capsys):
    swapped, _, base, _, _ = setup
    assert main(["monitor", str(swapped), *base]) == 0
    out = capsys.readouterr().out
    assert "no alert: 7 window(s) tested" in out
    assert out.count("relevance is not being watched") == 1 and "--judge JUDGE.toml --send-text --sample N" in out


def test_the_judged_monitor_alerts_from_the_swap_day_and_is_quiet_on_the_unchanged_log(setup, capsys, judge_server):
    swapped, unchanged, base, judged, tmp_path = setup
    labels = ["--labels", str(tmp_path / "swapped-app.sqlite")]
    assert main(["monitor", str(swapped), *base, *judged, *labels]) == 1
    out = capsys.readouterr().out
    alerts = [line for line in out.splitlines() if line.startswith("alert:")]
    swap_date = (START + timedelta(days=SWAP_DAY)).date()
    assert [line.split(":")[1].strip() for line in alerts] == [
        str(swap_date + timedelta(days=d)) for d in range(DAYS - SWAP_DAY)
    ]
    assert "kept precision 0.0%" in alerts[0] and "vs baseline 50.0%" in alerts[0] and "Holm over 7 windows" in alerts[0]
    assert "12 sampled turn(s) per window" in out and "relevance is not being watched" not in out

    assert main(["monitor", str(unchanged), *base, *judged, "--labels", str(tmp_path / "unchanged-app.sqlite")]) == 0
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("alert:")]
    assert out.splitlines()[-1] == "no alert: 7 window(s) tested for kept precision, 7 for the no-memory share"
    assert "baseline kept precision 50.0%" in out


def test_a_second_run_sends_nothing_and_the_grades_are_in_the_app_database(setup, capsys, judge_server):
    swapped, _, base, judged, tmp_path = setup
    app_db = tmp_path / "app.sqlite"
    before = len(judge_server.received)
    assert main(["monitor", str(swapped), *base, *judged, "--labels", str(app_db), "--format", "json"]) == 1
    first = json.loads(capsys.readouterr().out)
    sent = len(judge_server.received) - before
    pairs = sum(w["pairs"] for w in first["precision"]["windows"])
    assert sent == pairs == DAYS * 12 * 2  # 12 turns a day, 2 kept memories each
    assert first["precision"]["grading"]["graded"] == pairs
    assert len(AppDatabase(app_db).judge_labels.find(source="judge:umbrela@grader")) == pairs

    assert main(["monitor", str(swapped), *base, *judged, "--labels", str(app_db), "--format", "json"]) == 1
    second = json.loads(capsys.readouterr().out)
    assert len(judge_server.received) - before == sent  # nothing sent
    assert second["precision"]["grading"] == {"graded": 0, "cached": pairs, "failed": 0, "over_budget": 0, "no_query": 0}
    assert second["precision"]["windows"] == first["precision"]["windows"]
    assert [a["window"] for a in second["alerts"]] == [a["window"] for a in first["alerts"]]


def test_a_budget_caps_the_pairs_sent_and_the_next_run_grades_the_rest(setup, capsys, judge_server):
    swapped, _, base, judged, tmp_path = setup
    app_db = ["--labels", str(tmp_path / "budget.sqlite")]
    before = len(judge_server.received)
    main(["monitor", str(swapped), *base, *judged, *app_db, "--max-pairs", "100"])
    assert len(judge_server.received) - before == 100
    assert "236 left for the next run (--max-pairs)" in capsys.readouterr().out
    main(["monitor", str(swapped), *base, *judged, *app_db])
    assert len(judge_server.received) - before == DAYS * 12 * 2


def test_nothing_is_sent_without_send_text(setup, capsys, judge_server):
    swapped, _, base, judged, tmp_path = setup
    before = len(judge_server.received)
    assert main(["monitor", str(swapped), *base, *[w for w in judged if w != "--send-text"], "--labels", str(tmp_path / "x.sqlite")]) == 2
    assert "--send-text" in capsys.readouterr().err
    assert len(judge_server.received) == before


def test_wilson_interval_and_bands():
    low, high = wilson(0, 24)
    assert low == pytest.approx(0.0, abs=1e-12) and 0.13 < high < 0.14  # 0 of 24: the interval still reaches 13.8%
    assert wilson(12, 24) == pytest.approx((0.3143, 0.6857), abs=1e-4)  # as statsmodels proportion_confint(method="wilson")
    assert BANDS == (0.05, 0.10, 0.20)
    assert [band_of(score, 0.35) for score in (0.35, 0.3999, 0.40, 0.45, 0.5499, 0.55, 0.9)] == [0, 0, 1, 2, 2, 3, 3]


def test_the_judges_agreement_with_people_is_printed_beside_its_figures(setup, capsys):
    swapped, _, base, judged, tmp_path = setup
    app_db = tmp_path / "people.sqlite"
    main(["monitor", str(swapped), *base, *judged, "--labels", str(app_db)])
    assert "agreement with people is unknown" in capsys.readouterr().out
    db = AppDatabase(app_db)
    graded = db.judge_labels.find(source="judge:umbrela@grader")[:10]
    for j in graded:  # a person agrees with the judge on every pair but the first
        label = "relevant" if j.relevant != (j is graded[0]) else "not_relevant"
        db.labels.save(message_id=j.message_id, memory_id=j.memory_id, label=label, reviewer="ana", store="embedded:1")
    db.close()
    main(["monitor", str(swapped), *base, *judged, "--labels", str(app_db)])
    out = capsys.readouterr().out
    line = next(text for text in out.splitlines() if "vs people" in text)
    assert "over 10 pair(s)" in line and "raw agreement 90.0%" in line


def test_stale_memories_rated_relevant_are_counted_per_window(setup, demo_store, memories, capsys):
    _, _, base, judged, tmp_path = setup
    newest = max(m.created_at for m in demo_store.list(user_id=None, limit=1000))
    later = tmp_path / "later.jsonl"  # the same turns, 10 days after the newest memory was stored
    later.write_text(log_text(memories, None, start=newest + timedelta(days=10)), encoding="utf-8")
    app_db = ["--labels", str(tmp_path / "stale.sqlite"), "--format", "json"]
    main(["monitor", str(later), *base, *judged, *app_db])  # graded, staleness not asked
    assert all(w["stale"] is None for w in json.loads(capsys.readouterr().out)["precision"]["windows"])
    main(["monitor", str(later), *base, *judged, *app_db, "--stale-after", "5"])  # the grades are cached: ages read from the store
    windows = json.loads(capsys.readouterr().out)["precision"]["windows"]
    assert all(w["stale"] == w["relevant"] > 0 for w in windows)  # every memory is over 10 days old at its turn
    main(["monitor", str(later), *base, *judged, *app_db, "--stale-after", "5000"])
    assert all(w["stale"] == 0 for w in json.loads(capsys.readouterr().out)["precision"]["windows"])


@pytest.fixture
def constant_judge_url(monkeypatch):
    with ChatModelServer(constant_judge) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        yield server


def test_a_constant_judge_fails_its_checks_exits_3_and_its_precision_is_untrusted(setup, constant_judge_url, capsys):
    # grade 0 and the placeholder for every pair, on a log whose quality drops: before,
    # exit 0, "baseline kept precision 0.0%", "no alert", and no warning
    swapped, _, base, judged, tmp_path = setup
    assert main(["monitor", str(swapped), *base, *judged, "--labels", str(tmp_path / "constant.sqlite")]) == 3
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert "baseline kept precision 0.0%" not in out
    assert "baseline kept precision: untrusted (judge:umbrela@grader failed its checks)" in out
    assert "UNTRUSTED (not measurements: nothing is compared with them or alerted on): judge:umbrela@grader: one grade for " \
        "every pair: all 336 graded pair(s) got grade 0" in out
    assert out.splitlines()[-1] == (
        "no alert: 0 window(s) tested for kept precision (its judge failed its checks), 7 for the no-memory share"
    )
    assert "one grade for every pair" in err and "'<one short sentence>'" in err and "kept precision is untrusted" in err

    assert main(["monitor", str(swapped), *base, *judged, "--labels", str(tmp_path / "constant.sqlite"), "--format", "json"]) == 3
    document = json.loads(capsys.readouterr().out)["precision"]
    assert document["trusted"] is False and document["baseline"] is None and document["alerts"] == []
    assert all(w["precision"] is None for w in document["windows"])


def test_the_closing_line_counts_both_sides(setup, capsys):
    # 30 turns a day under the default --min-turns 100: the no-memory side tests no
    # window while the precision side tests 7; before, "no alert: 0 window(s) tested against the baseline"
    _, unchanged, base, judged, tmp_path = setup
    default_min_turns = [word for word in base if word not in ("--min-turns", "10")]
    assert main(["monitor", str(unchanged), *default_min_turns, *judged, "--labels", str(tmp_path / "sides.sqlite")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "no alert: 7 window(s) tested for kept precision, 0 for the no-memory share "
        "(each under 100 turns; --min-turns N to test them)"
    )
    # the 7 small windows are one note, with the way to test them
    notes = [line for line in out.splitlines() if "fewer than 100" in line]
    assert len(notes) == 1 and notes[0].startswith("note: 7 window(s) from 2026-01-08 to 2026-01-14 have 30 turn(s) each")
    assert "--min-turns" in notes[0]
    # the two tables' turn columns are told apart
    assert f"{'window':<17}{'kept turns':>11}{'sampled':>9}" in out


# The command in a process of its own with a Python audit hook that counts each open
# of the log file: memlens's readers (the sniffing of the format, the validating
# reader, pandas) open it through Python, so a second read of the log is seen here.
# DuckDB's own scans of the relation open it from C++ and are not counted.
COUNTING_OPENS = """
import sys
log, opens = sys.argv[1], []
sys.addaudithook(lambda event, args: opens.append(args) if event == "open" and args and str(args[0]) == log else None)
from dashboard.cli.main import main
status = main(sys.argv[2:])
print(f"opens of the log: {len(opens)}", file=sys.stderr)
sys.exit(status)
"""


def run_counting_opens(log: Path, *args: str) -> tuple[int, str, int]:
    """Exit status, stdout and the opens of `log` of `memlens monitor LOG ARGS`."""
    done = subprocess.run(
        [sys.executable, "-c", COUNTING_OPENS, str(log), "monitor", str(log), *args],
        capture_output=True, text=True, env=dict(os.environ), timeout=300,
    )
    opens = next(line for line in done.stderr.splitlines() if line.startswith("opens of the log: "))
    return done.returncode, done.stdout, int(opens.rsplit(" ", 1)[1])


def test_the_judge_takes_the_query_text_from_the_monitors_one_read_of_the_log(setup):
    """--judge adds no read of the log: the query text each turn is graded with comes
    from the relation the log was read into (before, the log was read a second time,
    through pandas, for it). What the user sees is the judged report as before: the
    judge graded every kept pair with the log's query text, and alerts from the swap day."""
    swapped, _, base, judged, tmp_path = setup
    plain_status, _, plain_opens = run_counting_opens(swapped, *base)
    status, out, opens = run_counting_opens(swapped, *base, *judged, "--labels", str(tmp_path / "one-read.sqlite"))
    assert (plain_status, status) == (0, 1)
    assert opens == plain_opens > 0
    alerts = [line.split(":")[1].strip() for line in out.splitlines() if line.startswith("alert:")]
    swap_date = (START + timedelta(days=SWAP_DAY)).date()
    assert alerts == [str(swap_date + timedelta(days=d)) for d in range(DAYS - SWAP_DAY)]
    assert f"judge:umbrela@grader: {DAYS * 12 * 2} pair(s) graded now, 0 from the app database" in out


def test_the_webhook_message_counts_and_lists_the_alerts_of_both_sides(setup, capsys):
    """On day 12 half the turns drop under the floor (a no-memory alert) while the
    swapped memories keep the precision side alerting: one message says how many
    alerts there are in all and lists them as the terminal does."""
    swapped, _, base, judged, tmp_path = setup
    rows = [json.loads(line) for line in swapped.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["message_id"].startswith("d12-") and int(row["message_id"][-2:]) % 2:
            row["score"] = round(row["score"] - 0.45, 2)
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with ChatModelServer(lambda body: Reply(body={"ok": True})) as receiver:
        status = main(["monitor", str(both), *base, *judged, "--labels", str(tmp_path / "both.sqlite"), "--webhook", receiver.url])
        posts = [r.body for r in receiver.received]
    captured = capsys.readouterr()
    assert status == 1 and len(posts) == 1
    printed = [line for line in captured.out.splitlines() if line.startswith("alert:")]
    assert any("no-memory share" in line for line in printed) and any("kept precision" in line for line in printed)
    head, *listed = posts[0]["text"].splitlines()
    assert head == f"memlens monitor: {len(printed)} alert(s) at floor 0.35 (1d windows, 1 file(s))"
    assert listed == printed
    assert [a["figure"] for a in posts[0]["alerts"]][0] == "no_memory_share" and len(posts[0]["alerts"]) == len(printed)
    assert f"webhook: posted {len(printed)} alert(s)" in captured.err


def shadow_log(path: Path, memories: dict[str, list[str]], swap_from: int | None) -> None:
    """judged_logs' log as the agent side writes it in shadow: the shipped floor 0.35
    keeps ranks 1 and 2 (the question's memory and another), a candidate top-ratio rule
    keeps rank 1 only. Before `swap_from` the candidate's kept precision is 100% and
    the shipped 50%; from it, rank 1 is irrelevant too and both are 0%."""
    rows = [json.loads(line) for line in log_text(memories, swap_from).splitlines()]
    for row in rows:
        row |= {"floor": 0.35, "floor_segment": "global", "rule": "floor", "kept": row["score"] >= 0.35,
                "shadow_rule": "top-ratio", "shadow_kept": row["rank"] == 1}  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_with_a_judge_each_sides_kept_precision_is_shown_and_tested_on_the_same_turns(setup, memories, capsys, judge_server):
    _, _, base, judged, tmp_path = setup
    path = tmp_path / "shadow.jsonl"
    shadow_log(path, memories, SWAP_DAY)
    logged = [word for word in base if word not in ("--floor", "0.35")]  # counted by the logged decisions
    labels = ["--labels", str(tmp_path / "shadow.sqlite")]
    before = len(judge_server.received)
    main(["monitor", str(path), *logged, *judged, *labels, "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    # the union of both sides' kept memories, each pair graded once: the candidate's
    # rank 1 is among the shipped side's, so no more requests than the shipped side's pairs
    assert len(judge_server.received) - before == DAYS * 12 * 2
    shadow = document["shadow"]
    assert shadow["judged"] == {"judge": "judge:umbrela@grader", "trusted": True, "sample": 12, "seed": 0, "top": 3}
    windows = shadow["windows"]
    assert len(windows) == DAYS
    for day, w in enumerate(windows):
        assert w["judged_turns"] == 12 and w["shipped_pairs"] == 24 and w["candidate_pairs"] == 12
        if day < SWAP_DAY:  # the candidate keeps only the question's memory
            assert (w["shipped_kept_precision"], w["candidate_kept_precision"]) == (0.5, 1.0)
            assert w["kept_precision_difference"] == 0.5 and w["difference_interval"] == [0.5, 0.5]
            assert w["precision_p"] < 0.05
        else:  # both keep irrelevant memories only: no difference to find
            assert (w["shipped_kept_precision"], w["candidate_kept_precision"]) == (0.0, 0.0)
            assert w["kept_precision_difference"] == 0.0 and w["precision_p"] == 1.0
    total = shadow["total"]
    assert total["judged_turns"] == DAYS * 12
    assert total["candidate_kept_precision"] == pytest.approx(SWAP_DAY / DAYS)
    assert total["shipped_kept_precision"] == pytest.approx(SWAP_DAY / DAYS / 2)
    low, high = total["difference_interval"]
    assert low < total["kept_precision_difference"] < high and total["precision_p"] < 0.05
    # the keys the shadow table had before are still there
    assert {"shipped_no_memory_share", "candidate_no_memory_share", "mcnemar_p"} <= set(total)

    # the text: a second table under the side by side, its rows the JSON's; nothing sent again
    main(["monitor", str(path), *logged, *judged, *labels])
    text = capsys.readouterr().out.splitlines()
    assert len(judge_server.received) - before == DAYS * 12 * 2
    head = next(i for i, line in enumerate(text) if line.startswith("shadow kept precision, judged by judge:umbrela@grader"))
    first, last = text[head + 2].split(), text[head + 2 + DAYS].split()
    assert first[:6] == ["2026-01-01", "12", "24", "50.0%", "12", "100.0%"] and first[6:8] == ["+50.0", "pts"]
    assert last[:2] == ["all", "windows"] and last[6] == f"{SWAP_DAY / DAYS:.1%}"
    # it sits in the shadow block, before the precision side's own table
    assert head < next(i for i, line in enumerate(text) if line.startswith("kept precision, judged by"))
