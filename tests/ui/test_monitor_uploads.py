"""The Monitor page's uploads: each upload's folder belongs to the cache entry that
read it and goes with it, so ten uploads do not leave ten folders behind."""

from __future__ import annotations

import json
import tempfile

from dashboard.ui.widgets import cache


def _log(turn: int) -> bytes:
    rows = [
        {"message_id": f"t{turn}-{i}", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T10:00:00Z"}
        for i in range(3)
    ]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def test_ten_uploads_leave_at_most_the_cached_folders_and_clearing_removes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    cache._monitor_logs.clear()
    for upload in range(10):
        logs = cache.monitor_logs([(f"day-{upload}.jsonl", _log(upload))])
        assert logs.counts()["turns"] == 3 and logs.files == [f"day-{upload}.jsonl"]
    folders = list(tmp_path.glob("memlens-monitor-*"))
    assert 1 <= len(folders) <= 4  # the cache holds four relations, each with its folder
    cache._monitor_logs.clear()
    assert list(tmp_path.glob("memlens-monitor-*")) == []


def test_an_upload_that_cannot_be_read_leaves_no_folder(tmp_path, monkeypatch):
    from dashboard.logs.log_files import LogFormatError

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        cache.monitor_logs([("notes.txt", b"hello")])
    except LogFormatError as exc:
        assert "notes.txt" in str(exc)
    else:
        raise AssertionError("a .txt file is not a log")
    assert list(tmp_path.glob("memlens-monitor-*")) == []
