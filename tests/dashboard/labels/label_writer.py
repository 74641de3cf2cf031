"""A labelling process for the concurrency tests: `python label_writer.py TARGET WORKER ROWS`.

Opens the label store (a SQLite path or a PostgreSQL URL), prints "ready", waits
for one line on standard input (so every worker starts writing at once), then
writes ROWS labels as reviewer "worker-WORKER" on pairs every worker shares, so
the writers contend for the same pages and keys. A tenth of the rows are labelled
twice with a different value (a relabel: one row, one history entry). Prints
"done N" at the end.
"""

import sys
from pathlib import Path

# Run as a script, so the project root is not on sys.path until this line puts it there.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from dashboard.database import AppDatabase


def main() -> int:
    target, worker, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    # Eight writers hammering one file on a small machine wait far longer for the
    # lock than a reviewer ever does; this test is about losing nothing, not waiting.
    db = AppDatabase(target, timeout=120)
    print("ready", flush=True)
    sys.stdin.readline()
    reviewer = f"worker-{worker}"
    for row in range(rows):
        key = dict(message_id=f"msg-{row // 5:04d}", memory_id=f"mem-{row % 5}", reviewer=reviewer, store="embedded:test")
        first = "relevant" if (row + worker) % 2 else "not_relevant"
        db.labels.save(**key, label=first, rank=row % 5 + 1, score=row / rows)
        if row % 10 == 0:
            db.labels.save(**key, label="not_relevant" if first == "relevant" else "relevant", rank=row % 5 + 1, score=row / rows)
    db.close()
    print(f"done {rows}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
