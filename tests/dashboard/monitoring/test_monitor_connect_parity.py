"""`memlens monitor --connect` on the same rows as a file run gives the file run's
report, on a real PostgreSQL server and a real DuckDB database (issues 51 and 52):

- rows whose timestamp or score the engine cannot compute with (a timestamp of
  `infinity` or year 9999, a NaN or infinite score) are counted and left out in the
  query, where PostgreSQL used to stop with "bigint out of range" and exit 2; a
  memory with no score (what the agent's log writes for a NaN score) is a returned
  memory that is never kept, as the file reader counts it;
- with no --floor and no --floor-config, each turn is counted at the floor its rows
  logged, and the header says so; a table with no floor column exits 2 asking for one;
- a table carrying a shadow config's decisions (`shadow_rule`, `shadow_kept`, as the
  agent side logs them) shows the shipped config and the candidate side by side, the
  file run's lines and JSON `shadow` document, counted in the engine.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import psycopg
import pytest

from dashboard.cli.main import main
from dashboard.monitoring.windows import HISTOGRAM_BINS

START = datetime(2026, 1, 1, tzinfo=UTC)


def good_rows() -> list[dict]:
    """Three days of 60 turns, two memories each, top-1 scores spread around 0.35."""
    rows = []
    for i in range(180):
        top1 = 0.2 + (i * 37 % 100) / 250
        at = START + timedelta(days=i // 60, minutes=i % 60 * 20)
        for rank, score in ((1, top1), (2, top1 - 0.05)):
            rows.append({"message_id": f"t{i}", "memory_id": f"m{i}-{rank}", "rank": rank, "score": score, "timestamp": at})
    return rows


def odd_rows() -> list[dict]:
    """What a production table also holds: times and scores no window sum can take,
    and a memory the store returned with no score."""
    day2 = START + timedelta(days=1, hours=3)
    return [
        {"message_id": "t-inf", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "infinity"},
        {"message_id": "t-minus-inf", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "-infinity"},
        {"message_id": "t-9999", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": datetime(9999, 1, 1, tzinfo=UTC)},
        {"message_id": "t-nan", "memory_id": "m1", "rank": 1, "score": float("nan"), "timestamp": day2},
        {"message_id": "t-big", "memory_id": "m1", "rank": 1, "score": float("inf"), "timestamp": day2},
        {"message_id": "t-no-score", "memory_id": "m1", "rank": 1, "score": None, "timestamp": day2},
    ]


def write_jsonl(rows: list[dict], path: Path) -> str:
    """The rows as the file run reads them: times as ISO 8601 (an infinite one as the
    word), a NaN or infinite score as Python's json writes it."""

    def line(row: dict) -> str:
        stamp = row["timestamp"]
        return json.dumps({**row, "timestamp": stamp if isinstance(stamp, str) else stamp.isoformat()})

    path.write_text("".join(line(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


COLUMNS = ("message_id", "memory_id", "rank", "score", "timestamp", "user_id", "floor", "floor_segment")


def load_postgres(url: str, rows: list[dict], columns: tuple[str, ...]) -> None:
    types = {"rank": "bigint", "score": "double precision", "timestamp": "timestamptz", "floor": "double precision", "kept": "boolean",
             "shadow_kept": "boolean", "candidate_kept": "boolean"}  # fmt: skip
    with psycopg.connect(url, autocommit=True) as conn:
        declared = ", ".join(f"{c} {types.get(c, 'text')}" for c in columns)
        conn.execute(f"CREATE TABLE retrievals ({declared})")
        with conn.cursor() as cur, cur.copy(f"COPY retrievals ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                # COPY's text form: 'NaN', 'Infinity' and 'infinity' are PostgreSQL's own spellings
                copy.write_row([_pg_text(row.get(c)) for c in columns])


def _pg_text(value):
    if isinstance(value, float) and value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    return value


def load_duckdb(path: Path, rows: list[dict], columns: tuple[str, ...]) -> str:
    types = {"rank": "BIGINT", "score": "DOUBLE", "timestamp": "TIMESTAMPTZ", "floor": "DOUBLE", "kept": "BOOLEAN",
             "shadow_kept": "BOOLEAN", "candidate_kept": "BOOLEAN"}  # fmt: skip
    con = duckdb.connect(str(path))
    declared = ", ".join(f"{c} {types.get(c, 'VARCHAR')}" for c in columns)
    con.execute(f"CREATE TABLE retrievals ({declared})")
    con.executemany(
        f"INSERT INTO retrievals VALUES ({', '.join('?' for _ in columns)})",
        [[str(row.get(c)) if c == "timestamp" else row.get(c) for c in columns] for row in rows],
    )
    con.close()
    return f"duckdb://{path}"


@pytest.fixture(params=["postgresql", "duckdb"])
def engine(request, postgres, tmp_path):
    """A function loading rows into a fresh table of the engine; it gives the URL."""

    def load(rows: list[dict], columns: tuple[str, ...] = COLUMNS[:5]) -> str:
        if request.param == "postgresql":
            url = postgres.new_database()
            load_postgres(url, rows, columns)
            return url
        return load_duckdb(tmp_path / f"logs-{len(list(tmp_path.iterdir()))}.duckdb", rows, columns)

    return load


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_rows_the_engine_cannot_compute_with_are_counted_and_left_out_as_the_file_run_does(engine, tmp_path, capsys):
    rows = good_rows() + odd_rows()
    url = engine(rows)
    log = write_jsonl(rows, tmp_path / "retrievals.jsonl")
    flags = ["--floor", "0.35", "--baseline-windows", "1", "--min-turns", "10"]
    file_code, by_file, file_err = run(["monitor", log, *flags], capsys)
    code, by_engine, err = run(["monitor", "--connect", url, "--table", "retrievals", *flags], capsys)
    # used to be exit 2: "the engine refused the monitor's query: bigint out of range"
    assert code == file_code == 0, err
    assert by_engine.splitlines()[0].endswith("3 window(s) from table retrievals (" + url.partition(":")[0] + ")")
    # every line after the header is the file run's, word for word (the top-1 quantiles
    # come from the engine's histogram, within one bin of the file run's: on these rows
    # they round alike; the JSON below checks them to the bin)
    assert by_engine.splitlines()[1:] == by_file.splitlines()[1:]
    assert file_err.splitlines()[-1] == err.splitlines()[-1] == "warning: 5 bad row(s) skipped; the other rows are used"
    assert err.splitlines()[:-1] == [
        "  table retrievals: 2 row(s), field 'score': not a finite number",
        "  table retrievals: 3 row(s), field 'timestamp': outside 1970-2200",
    ]
    _, file_json, _ = run(["monitor", log, *flags, "--format", "json"], capsys)
    _, engine_json, _ = run(["monitor", "--connect", url, "--table", "retrievals", *flags, "--format", "json"], capsys)
    by_file_json, by_engine_json = json.loads(file_json), json.loads(engine_json)
    for key in ("counts", "baseline", "alerts", "notes"):
        assert by_engine_json[key] == by_file_json[key], key
    # the top-1 quantiles come from the engine's histogram: within one of its bins
    # (docs/monitoring.md), which the table's three decimals above do not show
    quantiles = ("top1_p10", "top1_p50", "top1_p90")
    for on_file, on_engine in zip(by_file_json["windows"], by_engine_json["windows"], strict=True):
        assert {k: v for k, v in on_engine.items() if k not in quantiles} == {k: v for k, v in on_file.items() if k not in quantiles}
        assert all(abs(on_engine[q] - on_file[q]) <= (0.6 - 0.2) / HISTOGRAM_BINS for q in quantiles)
    # the memory with no score is a row of its turn, which is left with no memory
    assert by_engine_json["counts"]["turns"] == 181 and by_engine_json["counts"]["rows"] == 361
    assert by_engine_json["windows"][1]["turns"] == 61


# the rows of tests/dashboard/monitoring/test_monitor_logged_floor.py's log, with a time
# per turn: 40 turns of user sam filtered at 0.28 (top-1 0.30, kept), 30 at 0.35 with
# 0.40 (kept) and 30 at 0.35 with 0.32 (no memory), so 30 turns with no memory at each
# turn's logged floor, 70 at 0.35 for every turn
def floored_rows(with_floor: bool = True) -> list[dict]:
    rows = []
    for i in range(100):
        user, floor, segment, top1 = ("sam", 0.28, "user=sam", 0.30) if i < 40 else ("ana", 0.35, "global", 0.40 if i < 70 else 0.32)
        for rank, score in ((1, top1), (2, top1 - 0.1)):
            row = {"message_id": f"t{i}", "memory_id": f"m{i}-{rank}", "rank": rank, "score": score, "user_id": user,
                   "timestamp": START + timedelta(minutes=i)}  # fmt: skip
            if with_floor:
                row |= {"floor": floor, "floor_segment": segment}
            rows.append(row)
    return rows


def test_each_turn_is_counted_at_its_logged_floor_as_the_file_run_counts_it(engine, tmp_path, capsys):
    rows = floored_rows()
    url = engine(rows, COLUMNS)
    log = write_jsonl(rows, tmp_path / "retrievals.jsonl")
    file_code, by_file, _ = run(["monitor", log], capsys)
    code, by_engine, err = run(["monitor", "--connect", url, "--table", "retrievals"], capsys)
    assert code == file_code == 0, err
    header = "each turn at its logged floor (0.35 global: 60 turns; 0.28 user=sam: 40 turns), 1d windows, 1 window(s) from "
    assert by_file.splitlines()[0] == header + "1 file(s)"
    assert by_engine.splitlines()[0] == header + f"table retrievals ({url.partition(':')[0]})"
    assert by_engine.splitlines()[1:] == by_file.splitlines()[1:]
    code, out, _ = run(["monitor", "--connect", url, "--table", "retrievals", "--format", "json"], capsys)
    report = json.loads(out)
    assert report["floor"] is None and report["windows"][0]["no_memory_turns"] == 30
    # --floor X is still "what if the floor were X"
    code, out, _ = run(["monitor", "--connect", url, "--table", "retrievals", "--floor", "0.35", "--format", "json"], capsys)
    assert json.loads(out)["windows"][0]["no_memory_turns"] == 70


def test_a_table_with_no_floor_column_and_no_floor_given_exits_2_saying_what_to_give(engine, capsys):
    url = engine(floored_rows(with_floor=False), COLUMNS[:6])
    code, out, err = run(["monitor", "--connect", url, "--table", "retrievals"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == (
        "memlens monitor: table retrievals: the turns carry no floor per turn (no `floor` column: written before "
        "memlens logged the floor applied to each turn); give --floor X or --floor-config FILE"
    )


def test_turns_that_carry_no_logged_floor_exit_2_counting_them_as_the_file_run_does(engine, tmp_path, capsys):
    rows = floored_rows()
    for row in rows[:10]:  # five turns of an older writer
        row["floor"] = row["floor_segment"] = None
    url = engine(rows, COLUMNS)
    file_code, _, file_err = run(["monitor", write_jsonl(rows, tmp_path / "mixed.jsonl")], capsys)
    code, _, err = run(["monitor", "--connect", url, "--table", "retrievals"], capsys)
    assert code == file_code == 2
    assert "5 of 100 turns with a memory in table retrievals carry no logged floor" in err
    assert "5 of 100 turns with a memory" in file_err


# floored_rows with the agent's decisions, as RetrievalLog writes them (`rule`, `kept`):
# a largest-gap rule keeps rank 1 of the 40 turns of sam and of 15 turns whose top-1
# 0.32 is under their floor 0.35; the floor keeps rank 1 of 30 turns and nothing of
# 10; 5 turns carry no decision (an older writer) and are counted at their floor. So
# 15 turns have no memory by the decisions, where their floors alone leave 30.
DECISION_COLUMNS = (*COLUMNS, "rule", "kept")


def decided_rows(with_floor: bool = True, undecided: bool = True) -> list[dict]:
    rows = floored_rows(with_floor)
    for row in rows:
        turn, first = int(row["message_id"][1:]), row["memory_id"].endswith("-1")
        if turn < 40 or 70 <= turn < 85:
            row |= {"rule": "largest-gap", "kept": first}
        elif undecided and 85 <= turn < 90:
            row |= {"rule": None, "kept": None}
        else:
            row |= {"rule": "floor", "kept": first and turn < 70}
    return rows


def test_a_table_with_a_kept_column_is_counted_by_its_logged_decisions_as_the_file_run_counts_them(engine, tmp_path, capsys):
    rows = decided_rows()
    url = engine(rows, DECISION_COLUMNS)
    log = write_jsonl(rows, tmp_path / "decided.jsonl")
    file_code, by_file, _ = run(["monitor", log], capsys)
    code, by_engine, err = run(["monitor", "--connect", url, "--table", "retrievals"], capsys)
    assert code == file_code == 0, err
    header = (
        "each turn by its logged decisions, kept or dropped per row (largest-gap: 55 turns; floor: 40 turns; 5 turns "
        "without them at their logged floor), 1d windows, 1 window(s) from "
    )
    assert by_file.splitlines()[0] == header + "1 file(s)"
    # before: "each turn at its logged floor (0.35 global: 60 turns; 0.28 user=sam: 40 turns)", 30 turns with no memory
    assert by_engine.splitlines()[0] == header + f"table retrievals ({url.partition(':')[0]})"
    assert by_engine.splitlines()[1:] == by_file.splitlines()[1:]
    _, file_json, _ = run(["monitor", log, "--format", "json"], capsys)
    _, engine_json, _ = run(["monitor", "--connect", url, "--table", "retrievals", "--format", "json"], capsys)
    on_file, on_engine = json.loads(file_json)["windows"][0], json.loads(engine_json)["windows"][0]
    assert on_engine["no_memory_turns"] == on_file["no_memory_turns"] == 15
    assert on_engine["kept_per_turn"] == on_file["kept_per_turn"] == pytest.approx(85 / 100)
    # --floor X is still "what if the floor were X", decisions or not
    _, out, _ = run(["monitor", "--connect", url, "--table", "retrievals", "--floor", "0.35", "--format", "json"], capsys)
    assert json.loads(out)["windows"][0]["no_memory_turns"] == 70


def test_a_table_whose_every_turn_carries_decisions_needs_no_floor_column(engine, tmp_path, capsys):
    rows = decided_rows(with_floor=False, undecided=False)
    url = engine(rows, (*COLUMNS[:6], "rule", "kept"))
    file_code, by_file, _ = run(["monitor", write_jsonl(rows, tmp_path / "decided.jsonl")], capsys)
    # before: exit 2, "the turns carry no floor per turn (no `floor` column ...)"
    code, by_engine, err = run(["monitor", "--connect", url, "--table", "retrievals"], capsys)
    assert code == file_code == 0, err
    assert by_engine.splitlines()[0].startswith("each turn by its logged decisions, kept or dropped per row (largest-gap: 55 turns; floor: 45 turns)")
    assert by_engine.splitlines()[1:] == by_file.splitlines()[1:]


# ------------------------------------------------------------------ a shadow config


def shadow_log_rows(tmp_path: Path) -> list[dict]:
    """A log the agent side writes (memory_from_hits with a RetrievalLog) under a
    shipped floor of 0.3 with, in shadow, a top-ratio candidate at 0.25: 150 seeded
    turns, some empty, spread over three days afterwards (the agent stamps each turn
    with the time it ran); then 10 turns of an older writer (no shadow), and rows the
    engine cannot compute with, carrying both configs' decisions, which are left out."""
    import random

    from dashboard.floor_config import FloorConfig
    from dashboard.logs.writer import RetrievalLog
    from dashboard.runtime import memory_from_hits
    from dashboard.turn_rule import TOP_RATIO

    space = {"store": "embedded", "formula": "as sent", "setting": None}
    configs = []
    for name, floor, rule in (("shipped", 0.3, None), ("candidate", 0.25, {"kind": TOP_RATIO, "cut": 0.9})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"floor": floor, "score_space": space, **({"rule": rule} if rule else {})}), encoding="utf-8")
        configs.append(FloorConfig.load(path))
    shipped, candidate = configs
    rng = random.Random(56)
    path = tmp_path / "agent.jsonl"
    log = RetrievalLog(path)
    for number in range(150):
        top = rng.uniform(0.1, 0.6)
        hits = [(f"m{number}-{i}", "", round(top - 0.04 * i * rng.random(), 4)) for i in range(rng.choice((0, 2, 3, 5)))]
        memory_from_hits(hits, store_kind="embedded", floor=shipped, log=log, message_id=f"t{number}", shadow=candidate)
    log.close()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        number = int(row["message_id"][1:])
        row["timestamp"] = START + timedelta(days=number // 50, minutes=number % 50 * 7)
    assert {row["shadow_rule"] for row in rows} == {TOP_RATIO} and {row["rule"] for row in rows} == {"floor"}
    for number in range(10):  # before the agent logged decisions: counted at their floor, no shadow
        rows.append({"message_id": f"old{number}", "memory_id": "m1", "rank": 1, "score": 0.2 + 0.03 * number,
                     "timestamp": START + timedelta(hours=number), "floor": 0.3, "floor_segment": "global"})  # fmt: skip
    decided = {"floor": 0.3, "floor_segment": "global", "rule": "floor", "kept": True, "shadow_rule": TOP_RATIO, "shadow_kept": True}
    day2 = START + timedelta(days=1, hours=3)
    rows += [
        {"message_id": "t-inf", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "infinity", **decided},
        {"message_id": "t-nan", "memory_id": "m1", "rank": 1, "score": float("nan"), "timestamp": day2, **decided},
        {"message_id": "t-big", "memory_id": "m1", "rank": 1, "score": float("inf"), "timestamp": day2, **decided},
    ]
    return rows


SHADOW_COLUMNS = (*COLUMNS, "rule", "kept", "shadow_rule", "shadow_kept")
SHADOW_FLAGS = ["--baseline-windows", "1", "--min-turns", "10"]


def shadow_lines(out: str) -> list[str]:
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("shadow: "))
    return lines[head : next(i for i, line in enumerate(lines) if line.startswith("all windows")) + 1]


def test_a_table_with_a_shadow_configs_decisions_shows_the_file_runs_side_by_side(engine, tmp_path, capsys):
    rows = shadow_log_rows(tmp_path)
    url = engine(rows, SHADOW_COLUMNS)
    log = write_jsonl(rows, tmp_path / "shadow.jsonl")
    file_code, by_file, _ = run(["monitor", log, *SHADOW_FLAGS], capsys)
    code, by_engine, err = run(["monitor", "--connect", url, "--table", "retrievals", *SHADOW_FLAGS], capsys)
    assert code == file_code == 0, err
    # before: no shadow section on --connect, the table's shipped and candidate columns unread
    assert shadow_lines(by_engine) == shadow_lines(by_file)
    assert shadow_lines(by_file)[0].startswith("shadow: the shipped floor against the candidate top-ratio, on the same turns")
    assert len(shadow_lines(by_file)) == 2 + 3 + 1  # the line, the heading, three days, all windows
    # and everything else too, under the table's own header line
    assert by_engine.splitlines()[1:] == by_file.splitlines()[1:]

    _, file_json, _ = run(["monitor", log, *SHADOW_FLAGS, "--format", "json"], capsys)
    _, engine_json, _ = run(["monitor", "--connect", url, "--table", "retrievals", *SHADOW_FLAGS, "--format", "json"], capsys)
    on_file, on_engine = json.loads(file_json)["shadow"], json.loads(engine_json)["shadow"]
    assert on_engine == on_file
    # the agent's 150 turns (an empty one has no memory on either side), 50 a day; not the older writer's nor the bad rows
    assert [w["turns"] for w in on_engine["windows"]] == [50, 50, 50]
    assert on_engine["total"]["only_shipped_no_memory"] > 0  # the two configs differ on this traffic
    # --floor X is "what if the floor were X" for the windows; the side by side is still the logged decisions'
    _, floored, _ = run(["monitor", "--connect", url, "--table", "retrievals", *SHADOW_FLAGS, "--floor", "0.5", "--format", "json"], capsys)
    assert json.loads(floored)["shadow"] == on_file


def test_shadow_columns_of_other_names_are_read_through_column_and_a_table_without_them_shows_none(engine, tmp_path, capsys):
    rows = shadow_log_rows(tmp_path)
    for row in rows:
        row["candidate_rule"], row["candidate_kept"] = row.pop("shadow_rule", None), row.pop("shadow_kept", None)
    url = engine(rows, (*COLUMNS, "rule", "kept", "candidate_rule", "candidate_kept"))
    mapped = ["--column", "shadow_rule=candidate_rule", "--column", "shadow_kept=candidate_kept"]
    plain = ["monitor", "--connect", url, "--table", "retrievals", *SHADOW_FLAGS, "--format", "json"]
    # before: exit 2, "--column 'shadow_rule=candidate_rule': FIELD is one of ..."
    code, out, err = run([*plain, *mapped], capsys)
    assert code == 0, err
    shadow = json.loads(out)["shadow"]
    assert (shadow["shipped_rule"], shadow["candidate_rule"]) == ("floor", "top-ratio") and shadow["total"]["turns"] == 150
    # unmapped, the table carries no shadow columns: no side by side, as before
    code, out, err = run(plain, capsys)
    assert code == 0, err
    assert "shadow" not in json.loads(out)
    code, out, _ = run(plain[:-2], capsys)
    assert code == 0 and not any(line.startswith("shadow:") for line in out.splitlines())
