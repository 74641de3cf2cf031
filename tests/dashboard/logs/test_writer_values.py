"""What the agent's log writes, its reader reads (dashboard/logs/writer.py): one
normalisation on the way in, shared by memory_for_prompt, memory_from_hits and the
writer. Ids become text, NumPy and Decimal scores floats, a NaN or infinite score a
memory with no score (dropped by the floor, logged as null), a rank the position in
the store's order; each row carries the floor applied to its turn. Every file is
read back by the reader of `memlens logs check` with no bad row."""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from demo_questions import THEME

from connectors.base import Hit
from dashboard.floor_config import FloorConfig
from dashboard.logs.retrieval_log import read_log
from dashboard.runtime import RetrievalLog, RetrievalSpans, memory_for_prompt, memory_from_hits


def read_back(path: Path):
    if path.suffix == ".jsonl":
        for line in path.read_bytes().splitlines():
            assert isinstance(json.loads(line), dict)
    result = read_log(path)
    assert result.bad_rows == 0 and result.issues == [], result.issue_lines(5)
    return result


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_a_turn_with_an_integer_user_id_and_a_huge_rank_loses_no_row(tmp_path, suffix):
    path = tmp_path / f"retrievals.{suffix}"
    produced = 0
    with RetrievalLog(path, flush_every=25) as log:
        for n in range(300):
            user = 42 if n == 50 else "sam"  # one odd value used to lose every later turn
            hits = [Hit(f"m{n}-{i}", 2**70 if n == 51 else i + 1, "text", 0.5) for i in range(3)]
            produced += log.write_turn(n, hits, user_id=user, store="embedded")  # an integer turn id too
    assert log.lost_rows == 0 and log.rows_written == produced == 900
    result = read_back(path)
    assert result.rows_read == produced
    assert set(result.rows.loc[result.rows["message_id"] == "50", "user_id"]) == {"42"}
    # a rank is the position in the store's order
    assert result.rows.loc[result.rows["message_id"] == "51", "rank"].tolist() == [1, 2, 3]


def test_numpy_and_decimal_scores_are_floats(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    hits = [(7, "int id", np.float32(0.8)), ("b", "f64", np.float64(0.6)), ("c", "decimal", Decimal("0.2")), (np.int64(9), "np id", np.float32(0.1))]
    with RetrievalLog(path) as log:
        turn = memory_from_hits(hits, store_kind="embedded", floor=0.5, log=log, message_id="faiss")
    assert [h.memory_id for h in turn.kept] == ["7", "b"] and [h.memory_id for h in turn.dropped] == ["c", "9"]
    assert all(type(h.score) is float for h in turn.kept + turn.dropped)
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [r["score"] for r in rows] == [pytest.approx(0.8), 0.6, 0.2, pytest.approx(0.1)]
    assert [r["memory_id"] for r in rows] == ["7", "b", "c", "9"]
    assert read_back(path).rows_read == 4


class Float32Store:
    """The demo store as a FAISS-backed store answers: NumPy float32 scores, integer ids."""

    def __init__(self, store):
        self._store = store

    def query(self, text, *, user_id, k):
        result = self._store.query(text, user_id=user_id, k=k)
        result.hits = [dataclasses.replace(h, memory_id=number, score=np.float32(h.score)) for number, h in enumerate(result.hits, start=100)]
        return result

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_memory_for_prompt_takes_a_stores_float32_scores_and_integer_ids(tmp_path, demo_store):
    path = tmp_path / "retrievals.jsonl"
    with RetrievalLog(path) as log:
        turn = memory_for_prompt(Float32Store(demo_store), THEME, user_id="sam", k=5, floor=0.35, log=log, message_id="t1")
    bare = memory_for_prompt(demo_store, THEME, user_id="sam", k=5, floor=0.35)
    assert len(turn.kept) == len(bare.kept) > 0 and turn.block.count("\n") == bare.block.count("\n")
    assert all(type(h.score) is float and type(h.memory_id) is str for h in turn.kept)
    result = read_back(path)
    assert result.rows["memory_id"].tolist() == ["100", "101", "102", "103", "104"]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_nan_and_infinite_scores_are_memories_with_no_score(tmp_path, suffix):
    path = tmp_path / f"retrievals.{suffix}"
    hits = [("a", "x", 0.9), ("nan", "x", math.nan), ("inf", "x", math.inf), ("-inf", "x", -math.inf), ("none", "x", None)]
    with RetrievalLog(path) as log:
        turn = memory_from_hits(hits, store_kind="embedded", floor=0.5, log=log, message_id="t1")
        unscored = memory_from_hits(hits[1:], store_kind="embedded", floor=0.5, log=log, message_id="t2")
        # a store's own hits, through the writer alone
        log.write_turn("t3", [Hit("x", 1, "x", math.inf), Hit("y", 2, "y", np.float32("nan"))])  # type: ignore[arg-type]  # a store's float32
    # +inf is never kept while its row says null: every score without a number is dropped
    assert [h.memory_id for h in turn.kept] == ["a"]
    assert [(h.memory_id, h.score) for h in turn.dropped] == [("nan", None), ("inf", None), ("-inf", None), ("none", None)]
    assert turn.block.count("\n") == 1 and unscored.reason == "all 4 without a score"
    result = read_back(path)
    assert result.rows_read == 11 and len(result.rows) == 11
    scores = dict(zip(result.rows["message_id"] + "/" + result.rows["memory_id"], result.rows["score"], strict=True))
    assert scores["t1/a"] == 0.9 and all(math.isnan(v) for k, v in scores.items() if k != "t1/a")


def test_each_row_carries_the_floor_and_segment_of_its_turn(tmp_path):
    path = tmp_path / "retrievals.parquet"
    config = FloorConfig(floor=0.36577123456789, segments={"user": {"sam": 0.28}, "store": {"faq": 0.5}})
    hits = [("a", "x", 0.4), ("b", "y", 0.3)]
    with RetrievalLog(path) as log:
        memory_from_hits(hits, store_kind="embedded", floor=config, log=log, user_id="sam", message_id="sam")
        memory_from_hits(hits, store_kind="embedded", floor=config, log=log, user_id="ana", message_id="ana")
        memory_from_hits([], store_kind="embedded", floor=config, log=log, user_id="ana", store_id="faq", message_id="faq")
    table = pq.read_table(path)
    assert table.schema.field("floor").type == "double" and table.schema.field("floor_segment").type == "string"
    rows = table.to_pylist()
    assert [(r["message_id"], r["floor"], r["floor_segment"]) for r in rows] == [
        ("sam", 0.28, "user=sam"), ("sam", 0.28, "user=sam"),
        ("ana", 0.36577123456789, "global"), ("ana", 0.36577123456789, "global"),
        ("faq", 0.5, "store=faq"),
    ]
    assert read_back(path).rows_read == 5


def test_a_jsonl_row_carries_the_floor_at_full_precision(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    with RetrievalLog(path) as log:
        memory_from_hits([("a", "x", 0.4)], store_kind="embedded", floor=0.36577123456789, log=log)
    row = json.loads(path.read_text(encoding="utf-8"))
    assert (row["floor"], row["floor_segment"]) == (0.36577123456789, "global")
    assert read_back(path).rows_read == 1


def test_spans_carry_the_floor_and_no_score_for_an_infinite_one():
    from tests.dashboard.logs.test_otlp import tracer_and_exporter

    tracer, exporter = tracer_and_exporter()
    config = FloorConfig(floor=0.35, segments={"user": {"sam": 0.28}})
    memory_from_hits([(1, "x", np.float32(0.5)), ("b", "y", math.inf)], store_kind="embedded", floor=config, log=RetrievalSpans(tracer), user_id="sam")
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["memlens.floor"] == 0.28 and attributes["memlens.floor_segment"] == "user=sam"
    assert attributes["retrieval.documents.0.document.id"] == "1"
    assert attributes["retrieval.documents.0.document.score"] == pytest.approx(0.5)
    assert "retrieval.documents.1.document.score" not in attributes


ODD_IDS = ['plain', 'quote " and \\ backslash', "tab\tnew\nline", "\x00\x1f control", "é ü 中文 🙂", "\u202e bidi", "  padded  ", "\ud800 lone"]


@pytest.mark.parametrize("shadow", [False, True])
def test_every_jsonl_line_is_the_whole_row_as_json_writes_it(tmp_path, shadow):
    """The writer encodes a turn's shared fields once and each row's own after them:
    each line must still read as the row it stands for, byte for byte as the JSON
    encoder writes that row (its separators, float and text forms), whatever the ids
    and scores."""
    rng = np.random.default_rng(7)
    path = tmp_path / "retrievals.jsonl"
    expected: list[tuple[str, str | None, float | None, bool | None]] = []
    with RetrievalLog(path, include_query=True) as log:
        for turn in range(40):
            count = int(rng.integers(0, 6))
            hits = [
                Hit(ODD_IDS[int(rng.integers(len(ODD_IDS)))] + str(i), i + 1, "text",
                    None if rng.random() < 0.2 else float(rng.normal(0.4, 0.3)) * 10.0 ** int(rng.integers(-8, 9)))
                for i in range(count)
            ]  # fmt: skip
            kept = [bool(rng.random() < 0.5) for _ in hits]
            log.write_turn(
                f"turn-{turn}", hits, user_id=ODD_IDS[turn % len(ODD_IDS)], store="embedded", query=ODD_IDS[-turn % 7],
                floor=0.35, floor_segment="global", rule="learned", kept=kept,
                shadow_rule="largest-gap" if shadow else None, shadow_kept=kept[::-1] if shadow else None,
            )  # fmt: skip
            expected += [(f"turn-{turn}", hit.memory_id, hit.score, keep) for hit, keep in zip(hits, kept, strict=True)]
            expected += [] if hits else [(f"turn-{turn}", None, None, None)]
    lines = path.read_bytes().splitlines()
    rows = [json.loads(line) for line in lines]
    for line, row in zip(lines, rows, strict=True):
        assert line == json.dumps(row, ensure_ascii=False).encode("utf-8", "replace")
    assert [(r["message_id"], r["memory_id"], r["score"], r["kept"]) for r in rows] == [
        (turn, None if memory is None else memory.replace("\ud800", "?"), score, keep)
        for turn, memory, score, keep in expected
    ]
    assert all(("shadow_kept" in row) == shadow for row in rows)
    read_back(path)


def test_a_turn_with_no_timestamp_is_stamped_with_the_clock_in_utc_to_the_millisecond(tmp_path, monkeypatch):
    """The writer reads the clock once a turn and writes the time as
    datetime.isoformat does, across second, day and year boundaries and a clock set back."""
    from datetime import UTC, datetime

    from dashboard.logs import writer

    clock = [1_767_225_599.9995, 1_767_225_599.9996, 1_767_225_600.0004, 1_767_225_600.25, 1_767_225_601.5, 1_767_225_600.125]
    readings = iter(clock)
    monkeypatch.setattr(writer.time, "time", lambda: next(readings))
    path = tmp_path / "retrievals.jsonl"
    with RetrievalLog(path) as log:
        for turn in range(len(clock)):
            log.write_turn(f"t{turn}", [Hit("m1", 1, "text", 0.5)], floor=0.35)
    monkeypatch.undo()
    stamps = [json.loads(line)["timestamp"] for line in path.read_bytes().splitlines()]
    assert stamps == [datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds") for now in clock]
    assert stamps[:3] == ["2025-12-31T23:59:59.999+00:00", "2025-12-31T23:59:59.999+00:00", "2026-01-01T00:00:00.000+00:00"]
