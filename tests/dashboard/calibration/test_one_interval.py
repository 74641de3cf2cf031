"""One interval for one set of labels (issue 34): the same labels gave 0.616-0.70 read
from the label database and 0.616-0.768 from their export, because the bootstrap drew
turns by a code numbered in row order. Turn codes now follow the sorted message ids,
so the label database (real SQLite), its JSONL export and the same file in another
row order give one interval."""

from __future__ import annotations

import random

from dashboard.calibration.label_files import from_labels, parse_label_bytes
from dashboard.calibration.sweep import calibrate
from dashboard.database import AppDatabase
from dashboard.labels.export import to_jsonl


def test_the_label_database_and_its_export_give_one_interval(tmp_path):
    rng = random.Random(8)
    db = AppDatabase(tmp_path / "labels.sqlite")
    turns = [f"turn-{rng.randrange(10**6):06d}" for _ in range(60)]  # ids not in the order they are labelled
    for t, turn in enumerate(turns):
        for rank in range(1, 6):
            relevant = rank == 1 and t % 3 != 0
            score = round(rng.uniform(0.35, 0.8) if relevant else rng.uniform(0.2, 0.7), 4)
            db.labels.save(message_id=turn, memory_id=f"{turn}-m{rank}", label="relevant" if relevant else "not_relevant",
                         reviewer="ana", store="embedded:abc", rank=rank, score=score)
    labels = db.labels.find()
    db.close()

    def interval(label_file):
        return calibrate(label_file.labelled_scores(), resamples=500, seed=0).recommendation.interval

    from_database = interval(from_labels(labels))
    exported = to_jsonl(labels)
    assert interval(parse_label_bytes(exported.encode(), "labels.jsonl")) == from_database
    for seed in range(3):  # the same rows in other orders, as another export or a sorted file has them
        lines = exported.splitlines(keepends=True)
        random.Random(seed).shuffle(lines)
        assert interval(parse_label_bytes("".join(lines).encode(), "shuffled.jsonl")) == from_database
