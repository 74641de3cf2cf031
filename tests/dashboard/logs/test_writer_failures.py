"""The agent's log never breaks its turn (dashboard/logs/writer.py): a path that
cannot be written is refused when the log is made; a full disk, a folder removed, a
killed writer and 16 threads leave every line whole JSON, and every row produced is
in the file or counted on ``lost_rows``. Each file is read back by the reader of
`memlens logs check` with no bad row."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.base import Hit
from dashboard.cli.main import main
from dashboard.logs.retrieval_log import read_log
from dashboard.runtime import RetrievalLog, RetrievalLogError, memory_from_hits

ROOT = Path(__file__).resolve().parents[3]


def read_back(path: Path):
    """The log as `memlens logs check` reads it, after checking every line is whole JSON."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the file ends in half a line"
    for number, line in enumerate(data.splitlines(), start=1):
        assert isinstance(json.loads(line), dict), f"line {number} is not a JSON object"
    result = read_log(path)
    assert result.bad_rows == 0 and result.issues == [], result.issue_lines(5)
    return result


def agent_script(body: str) -> str:
    """A child agent: turns from memory_from_hits (floor 0.55; every seventh turn got
    nothing back), each turn's block, kept and dropped checked as it is returned."""
    return f"""
import json, logging, sys
from dashboard.runtime import RetrievalLog, RetrievalLogError, memory_from_hits

warnings = []
class Caught(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("dashboard.logs.writer").addHandler(Caught())
produced = wrong = 0

def turn(log, n):
    global produced, wrong
    hits = [(f"mem-{{n}}-{{i}}", f"text {{i}}", 0.9 - i * 0.1) for i in range(5)] if n % 7 else []
    result = memory_from_hits(hits, store_kind="embedded", floor=0.55, log=log, message_id=f"t{{n}}")
    kept = [h[0] for h in hits if h[2] >= 0.55]
    wrong += [h.memory_id for h in result.kept] != kept or len(result.dropped) != len(hits) - len(kept) or not result.block
    produced += len(hits) or 1

{body}
"""


def run_agent(body: str, *args: object, timeout: float = 120) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", agent_script(body), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


FULL_DISK = """
import resource, signal
path, limit, lift_at, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
log = RetrievalLog(path, flush_every=16)
# a file may not grow past `limit` bytes: the kernel answers EFBIG, as a full disk ENOSPC
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
for n in range(turns):
    if n == lift_at:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space again
    turn(log, n)
closed = None
try:
    log.close()
except RetrievalLogError as exc:
    closed = str(exc)
print(json.dumps({"produced": produced, "wrong": wrong, "lost": log.lost_rows, "written": log.rows_written,
                  "warnings": warnings, "closed": closed}))
"""


def test_a_full_disk_never_breaks_a_turn_and_the_rows_wait_for_space(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    got = run_agent(FULL_DISK, path, 16 * 1024, 600, 900)
    assert got["wrong"] == 0 and got["closed"] is None
    # 600 turns while the file could not grow: at most MAX_PENDING rows wait, the
    # oldest beyond it are lost; once there is space, what waited is written
    assert got["lost"] == 0 and got["written"] == got["produced"]
    efbig = [w for w in got["warnings"] if "File too large" in w]
    assert len(efbig) == 1  # once per kind of failure, not once per flush
    result = read_back(path)
    assert result.rows_read == got["produced"]
    assert len(result.empty_turns) == len(range(0, 900, 7))


def test_a_disk_that_stays_full_counts_every_row_it_could_not_write(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    got = run_agent(FULL_DISK, path, 16 * 1024, 10**9, 3000)  # never lifted
    assert got["wrong"] == 0
    assert got["lost"] > 0 and "could not be finished" in got["closed"]
    result = read_back(path)
    assert 0 < result.rows_read < 16 * 1024 / 100  # what fitted, in whole lines
    assert result.rows_read + got["lost"] == got["produced"] and got["written"] == result.rows_read


@contextlib.contextmanager
def small_disk(folder: Path, options: str) -> Iterator[Path]:
    """A real tmpfs of 64 KiB mounted at `folder` (the suite runs as root, as CI does)."""
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=64k,{options}", "tmpfs", str(folder)], check=True, capture_output=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_full_tmpfs_never_breaks_a_turn(tmp_path):
    with small_disk(tmp_path / "disk", "rw") as folder:
        path = folder / "retrievals.jsonl"
        got = run_agent(
            "log = RetrievalLog(sys.argv[1], flush_every=16)\n"
            "for n in range(2000):\n    turn(log, n)\n"
            "try:\n    log.close()\nexcept RetrievalLogError:\n    pass\n"
            "print(json.dumps({'produced': produced, 'wrong': wrong, 'lost': log.lost_rows, 'warnings': warnings}))",
            path,
        )
        assert got["wrong"] == 0 and got["lost"] > 0
        assert len([w for w in got["warnings"] if "No space left" in w]) == 1
        result = read_back(path)
        assert result.rows_read + got["lost"] == got["produced"]


def test_a_path_that_cannot_be_written_is_refused_when_the_log_is_made(tmp_path):
    with pytest.raises(RetrievalLogError, match="missing/x.jsonl: cannot write") as caught:
        RetrievalLog(tmp_path / "missing" / "x.jsonl")
    assert not (tmp_path / "missing").exists()  # a typo is an error, not a new folder
    assert str(tmp_path) in str(caught.value)
    folder = tmp_path / "day.jsonl"
    folder.mkdir()
    with pytest.raises(RetrievalLogError, match="day.jsonl: a folder"):
        RetrievalLog(folder)
    with pytest.raises(RetrievalLogError, match="missing/x.parquet: cannot write"):
        RetrievalLog(tmp_path / "missing" / "x.parquet")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RetrievalLogError, match="not a regular file"):
        RetrievalLog(fifo)  # refused, not a wait for a reader for ever


def test_a_read_only_folder_is_refused_when_the_log_is_made(tmp_path):
    # A read-only file system: root writes through file modes, not through this.
    with small_disk(tmp_path / "disk", "ro") as folder:
        with pytest.raises(RetrievalLogError, match="cannot write the log here"):
            RetrievalLog(folder / "x.jsonl")


def test_a_folder_removed_after_the_log_was_made_never_breaks_a_turn(tmp_path, caplog):
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "retrievals.jsonl"
    log = RetrievalLog(path, flush_every=4)
    (folder / "retrievals.jsonl").unlink()
    folder.rmdir()
    hits = [("a", "x", 0.9), ("b", "y", 0.1)]
    turns = [memory_from_hits(hits, store_kind="embedded", floor=0.5, log=log, message_id=f"t{n}") for n in range(20)]
    assert all([h.memory_id for h in t.kept] == ["a"] and [h.memory_id for h in t.dropped] == ["b"] for t in turns)
    assert log.rows_pending == 40 and log.lost_rows == 0  # kept for the next try
    assert len([r for r in caplog.records if "No such file" in r.getMessage()]) == 1
    folder.mkdir()  # back: the next write finds it
    memory_from_hits(hits, store_kind="embedded", floor=0.5, log=log, message_id="t20")
    log.flush()
    log.close()
    assert log.rows_written == 42 and log.lost_rows == 0
    assert read_back(path).rows_read == 42


def test_sixteen_threads_on_one_log_write_whole_lines_in_turn_order(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    per_thread = 200
    with RetrievalLog(path, flush_every=5) as log:

        def agent(worker: int) -> None:
            for n in range(per_thread):
                hits = [Hit(f"m{worker}-{n}-{i}", i + 1, "text", 0.9 - i / 10) for i in range(3)] if n % 4 else []
                log.write_turn(f"w{worker}-{n}", hits, user_id=f"u{worker}", store="embedded", floor=0.5, floor_segment="global")

        threads = [threading.Thread(target=agent, args=(w,)) for w in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    produced = 16 * (per_thread // 4 + (per_thread - per_thread // 4) * 3)
    result = read_back(path)
    assert result.rows_read == produced == log.rows_written and log.lost_rows == 0
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    for worker in range(16):
        order = [int(r["message_id"].split("-")[1]) for r in rows if r["message_id"].startswith(f"w{worker}-")]
        assert order == sorted(order)  # each agent's turns in the order it took them
        ranks = [r["rank"] for r in rows if r["message_id"] == f"w{worker}-1"]
        assert ranks == [1, 2, 3]  # a turn's rows together, in the store's order


KILLED = """
log = RetrievalLog(sys.argv[1], flush_every=1)
n = 0
while True:
    turn(log, n)
    n += 1
    if n == 50:
        print("writing", flush=True)
"""


def test_a_writer_killed_mid_run_leaves_whole_lines_and_the_next_writer_goes_on(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", agent_script(KILLED), str(path)], stdout=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"writing"
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    killed_rows = read_back(path).rows_read  # every flush was one write: none torn
    assert killed_rows >= 50 * 4
    # a writer killed inside its write leaves half a row: the next one cuts it away
    with path.open("ab") as handle:
        handle.write(b'{"message_id": "t9999", "memory_id": "mem-9')
    with RetrievalLog(path) as log:
        memory_from_hits([("after", "x", 0.7)], store_kind="embedded", floor=0.5, log=log, message_id="again")
    result = read_back(path)
    assert result.rows_read == killed_rows + 1 and result.rows["memory_id"].iloc[-1] == "after"


def test_a_whole_last_line_without_a_line_feed_is_kept_and_the_next_row_starts_its_own(tmp_path, capsys):
    path = tmp_path / "retrievals.jsonl"
    path.write_bytes(b'{"message_id": "t0", "memory_id": "a", "rank": 1, "score": 0.5}')  # made by hand
    with RetrievalLog(path) as log:
        log.write_turn("t1", [Hit("b", 1, "text", 0.6)])
    assert read_back(path).rows_read == 2
    assert main(["logs", "check", str(path)]) == 0
    assert "imported 2 rows in 2 turns from 2 read; 0 bad row(s)" in capsys.readouterr().out


def test_close_writes_what_is_left_and_raises_only_a_retrieval_log_error(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    log = RetrievalLog(folder / "retrievals.jsonl")
    log.write_turn("t1", [Hit("a", 1, "text", 0.5)])
    (folder / "retrievals.jsonl").unlink()
    folder.rmdir()
    with pytest.raises(RetrievalLogError, match="1 row\\(s\\) not written"):
        log.close()
    assert log.lost_rows == 1 and log.rows_written == 0
    log.close()  # closed already: nothing more
    assert log.write_turn("t2", [Hit("b", 1, "text", 0.5)]) == 1 and log.lost_rows == 2  # counted, not raised


def test_the_rows_left_at_interpreter_exit_are_written(tmp_path):
    path = tmp_path / "retrievals.jsonl"
    got = run_agent("log = RetrievalLog(sys.argv[1])\nfor n in range(10):\n    turn(log, n)\nprint(json.dumps({'produced': produced}))", path)
    assert read_back(path).rows_read == got["produced"]  # under flush_every: written at exit
