"""A generated judged set for evaluation tests and benchmarks: deterministic (seeded),
short memory texts so encoding stays affordable on a small machine.

Each user holds memories "Enjoys <activity> at the <place>" (a distinct pair each,
of random age and importance). Questions ask about one pair (one relevant memory),
two pairs (two relevant, graded 2 and 1), or an activity nobody stored
(unanswerable); tags say which.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ACTIVITIES = (
    "hiking running cycling swimming rowing climbing skiing surfing sailing fishing "
    "cooking baking painting drawing knitting sewing pottery gardening birdwatching chess "
    "poker bridge yoga pilates boxing fencing archery dancing singing drumming "
    "reading writing journaling blogging podcasting filming photography stargazing camping kayaking"
).split()
PLACES = (
    "lake river beach harbour forest park garden library museum stadium "
    "gym studio cafe bakery market square bridge tower castle chapel "
    "school campus office factory station airport hotel cabin farm vineyard "
    "island valley canyon desert glacier meadow orchard pier lighthouse quarry"
).split()
NEVER_STORED = "skydiving snorkelling origami calligraphy juggling karaoke bowling curling golf tennis".split()


def generate(users: int = 10, memories_per_user: int = 600, questions_per_user: int = 200, seed: int = 7):
    """(memory rows, judged question rows), both lists of dicts ready for JSONL."""
    rng = random.Random(seed)
    pairs = [(a, p) for a in ACTIVITIES for p in PLACES]
    memories, questions = [], []
    for u in range(users):
        user = f"u{u:02d}"
        chosen = rng.sample(pairs, memories_per_user)
        ids = []
        for i, (activity, place) in enumerate(chosen):
            memory_id = f"{user}-m{i:03d}"
            ids.append(memory_id)
            memories.append(
                {
                    "id": memory_id,
                    "user_id": user,
                    "text": f"Enjoys {activity} at the {place}",
                    "created_at": f"2026-{1 + rng.randrange(10):02d}-{1 + rng.randrange(28):02d}T12:00:00+00:00",
                    "importance": round(rng.uniform(0.1, 1.0), 2),
                }
            )
        for q in range(questions_per_user):
            message_id = f"{user}-q{q:03d}"
            kind = q % 10
            if kind == 9:
                activity, place = rng.choice(NEVER_STORED), rng.choice(PLACES)
                row = {"query": f"Does the user enjoy {activity} at the {place}?", "relevant": [], "answerable": False, "tags": ["unanswerable"]}
            elif kind == 8:
                a, b = rng.sample(range(memories_per_user), 2)
                (a1, p1), (a2, p2) = chosen[a], chosen[b]
                row = {
                    "query": f"Does the user enjoy {a1} at the {p1}, or {a2} at the {p2}?",
                    "grades": {ids[a]: 2, ids[b]: 1},
                    "tags": ["two"],
                }
            else:
                i = rng.randrange(memories_per_user)
                activity, place = chosen[i]
                row = {"query": f"Does the user enjoy {activity} at the {place}?", "relevant": [ids[i]], "tags": ["one"]}
            questions.append({"message_id": message_id, "user_id": user, **row})
    return memories, questions


def write(directory: Path, **options) -> tuple[Path, Path]:
    memories, questions = generate(**options)
    memory_file, judged_file = Path(directory) / "memories.jsonl", Path(directory) / "judged.jsonl"
    memory_file.write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    judged_file.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return memory_file, judged_file
