"""A large log with a few bad rows: the bad rows are named by file, line and field and
the good rows used, in bounded memory (the bad-row path streams the file in batches
instead of reading it whole into pandas, about 390 bytes a row)."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dashboard.logs import bad_rows
from dashboard.monitoring.relation import open_logs

ROWS = 1_000_000


def _parquet(path, rows: int, nan_at: int) -> None:
    score = np.full(rows, 0.5)
    score[nan_at] = np.nan
    turn = pc.cast(pa.array(np.arange(rows) // 4), pa.string())
    table = pa.table(
        {
            "message_id": pc.binary_join_element_wise("t", turn, ""),
            "memory_id": pc.binary_join_element_wise("m", pc.cast(pa.array(np.arange(rows) % 4), pa.string()), ""),
            "rank": np.arange(rows) % 4 + 1,
            "score": score,
            "timestamp": pa.array(["2026-01-01T10:00:00Z"] * rows),
        }
    )
    pq.write_table(table, path)


def test_one_nan_in_a_million_parquet_rows_is_named_in_bounded_memory(tmp_path):
    path = tmp_path / "big.parquet"
    _parquet(path, ROWS, nan_at=654_321)
    tracemalloc.start()
    try:
        logs = open_logs([str(path)], scores=False, floor=0.35)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(issue.line, issue.field) for issue in logs.issues] == [(654_322, "score")]
    counts = logs.counts()
    assert counts["rows"] == ROWS - 1 and counts["turns"] == ROWS // 4
    # the whole file as a pandas frame took about 390 MB here; one batch takes a few dozen
    assert peak < 120 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_jsonl_bad_rows_are_named_with_the_files_line_numbers_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(bad_rows, "CHUNK_BYTES", 4096)  # many chunks, a row cut at each edge
    rows = [
        {"message_id": f"t{i // 3}", "memory_id": f"m{i % 3}", "rank": i % 3 + 1, "score": 0.5,
         "timestamp": "2026-01-02T10:00:00Z"}
        for i in range(3000)
    ]
    rows[10]["score"] = "high"
    rows[1500]["timestamp"] = "9999-12-31T00:00:00Z"
    rows[2999]["rank"] = 0
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    logs = open_logs([str(path)])
    assert [(issue.line, issue.field) for issue in logs.issues] == [(11, "score"), (1501, "timestamp"), (3000, "rank")]
    assert logs.counts()["rows"] == 3000 - 3
    assert logs.validated_files == [str(path)]
