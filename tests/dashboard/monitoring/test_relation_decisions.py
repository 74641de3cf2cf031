"""The turns count the agent's logged decisions (kept, shadow_kept) the same whether
or not every file carries them; with no file carrying any, build_turns skips their
aggregates and gives the counts as 0 (relation.DECIDED), the same as counting."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboard.monitoring import relation
from dashboard.monitoring.relation import DECIDED, TURNS, build_turns, open_logs
from dashboard.monitoring.synthetic import synthetic_log
from dashboard.monitoring.windows import window_figures

COUNTS = ("logged_kept", "logged_decided", "shadow_kept", "shadow_decided")


def _decided(logs) -> bool:
    return logs.con.execute(f"SELECT decided FROM {DECIDED}").fetchone()[0]


def _turns(con, table: str = TURNS) -> list[tuple]:
    # a turn's scores in any order: list() keeps none
    rows = con.execute(f"SELECT * FROM {table} ORDER BY message_id").fetchall()
    return [tuple(sorted(value) if isinstance(value, list) else value for value in row) for row in rows]


def _counted_anyway(monkeypatch, logs, **options) -> list[tuple]:
    """The turns as built before: the decision aggregates always computed."""
    with monkeypatch.context() as patch:
        patch.setattr(relation, "_decisions_logged", lambda con: True)
        build_turns(logs.con, **options)
        return _turns(logs.con)


@pytest.fixture()
def two_files(tmp_path):
    """A day's log written before the decisions were logged (no kept columns), and a
    day's with them: kept and shadow_kept true, false or none, and three pairs of the
    first file repeated, kept, in the second."""
    old = synthetic_log(1, 200, seed=3, k=3)
    new = synthetic_log(1, 200, seed=4, k=3, first_turn=200)
    repeated = old.slice(0, 3)  # turn t0's three memories
    new = pa.concat_tables([new, repeated])
    n = len(new)
    empty = new.column("memory_id").is_null().to_pylist()  # an empty turn's row decides nothing
    kept = [None if empty[i] or i % 7 == 0 else i % 3 != 0 for i in range(n)]
    shadow = [None if empty[i] or i % 5 == 0 else i % 2 == 0 for i in range(n)]
    kept[-3:] = [True, None, False]
    new = new.append_column("kept", pa.array(kept, pa.bool_())).append_column("shadow_kept", pa.array(shadow, pa.bool_()))
    pq.write_table(old, tmp_path / "old.parquet")
    pq.write_table(new, tmp_path / "new.parquet")
    return tmp_path / "old.parquet", tmp_path / "new.parquet", new


def test_a_log_without_decisions_beside_one_with_them_counts_them_as_before(monkeypatch, two_files):
    old, new, rows = two_files
    logs = open_logs([str(old), str(new)])
    assert _decided(logs)
    built = _turns(logs.con)
    assert built == _counted_anyway(monkeypatch, logs)
    # and what the rows say: a memory kept in any of its rows is kept
    names = [d[0] for d in logs.con.execute(f"SELECT * FROM {TURNS} LIMIT 0").description]
    by_turn = {row[0]: dict(zip(names, row, strict=True)) for row in built}
    flags: dict[tuple[str, str], list] = {}
    for row in rows.to_pylist():
        if row["memory_id"] is not None:
            flags.setdefault((row["message_id"], row["memory_id"]), []).append((row["kept"], row["shadow_kept"]))
    for turn in ("t0", "t200", "t201", "t399"):
        pairs = [values for (message, _), values in flags.items() if message == turn]
        kept = [[k for k, _ in values if k is not None] for values in pairs]
        shadow = [[s for _, s in values if s is not None] for values in pairs]
        assert [by_turn[turn][name] for name in COUNTS] == [
            sum(any(k) for k in kept if k), sum(1 for k in kept if k), sum(any(s) for s in shadow if s), sum(1 for s in shadow if s)]
    assert [by_turn["t0"][name] for name in COUNTS[:2]] == [1, 2]  # t0's repeats: one kept, one not, one undecided


def test_logs_without_decisions_count_none_without_the_aggregates(monkeypatch, two_files):
    old, _, _ = two_files
    logs = open_logs([str(old)], scores=False, floor=0.35)
    assert not _decided(logs)
    built = _turns(logs.con)
    assert all(row[-4:] == (0, 0, 0, 0) for row in built)
    figures = window_figures(logs.con, 0.35)
    assert built == _counted_anyway(monkeypatch, logs, scores=False, floor=0.35)
    assert window_figures(logs.con, 0.35) == figures
    # the same column types as counted ones
    types = {row[0]: row[1] for row in logs.con.execute(f"DESCRIBE {TURNS}").fetchall()}
    assert {types[name] for name in COUNTS} == {"BIGINT"}
    # a cursor of the connection (the Monitor page's) reads it too
    build_turns(logs.con.cursor(), scores=False, floor=0.35, table="turns_again")
    assert _turns(logs.con, "turns_again") == built


def test_which_files_may_carry_decisions(tmp_path):
    plain = {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T10:00:00Z"}
    (tmp_path / "plain.csv").write_text("message_id,memory_id,rank,score\nt1,m1,1,0.5\n")
    (tmp_path / "kept.csv").write_text("message_id,memory_id,rank,score,shadow_kept\nt1,m1,1,0.5,true\n")
    # a JSONL line may name them or not: only reading the whole file would tell
    (tmp_path / "plain.jsonl").write_text(json.dumps(plain) + "\n")
    # a file the validating reader reads (a line DuckDB cannot parse): its rows in memory say
    (tmp_path / "broken.jsonl").write_text(json.dumps(plain) + "\n{not json\n")
    (tmp_path / "broken_kept.jsonl").write_text(json.dumps({**plain, "kept": True}) + "\n{not json\n")
    names = ("plain.csv", "kept.csv", "plain.jsonl", "broken.jsonl", "broken_kept.jsonl")
    found = {name: _decided(open_logs([str(tmp_path / name)])) for name in names}
    assert found == {"plain.csv": False, "kept.csv": True, "plain.jsonl": True, "broken.jsonl": False, "broken_kept.jsonl": True}
    assert open_logs([str(tmp_path / "broken.jsonl")]).validated_files == [str(tmp_path / "broken.jsonl")]
    assert not _decided(open_logs([]))
