"""The judged monitor's sample: seeded, the same on every run, unchanged for a window
when later days are added (so cached grades are reused), stratified by the top-1
band above the floor, and carrying each turn's top 3 kept memories."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from dashboard.monitoring.precision import BANDS, TOP, band_of, sample_turns
from dashboard.monitoring.relation import open_logs

FLOOR = 0.35
START = datetime(2026, 3, 1, tzinfo=UTC)


def write_days(path, days: int, per_day: int = 200, seed: int = 5) -> None:
    rng = random.Random(seed)
    rows = []
    for day in range(days):
        for n in range(per_day):
            # a quarter of the turns just over the floor, the rest spread far above it; one in ten under it
            top1 = FLOOR + (rng.uniform(0, 0.049) if n % 4 == 0 else rng.uniform(0.2, 0.5)) if n % 10 else FLOOR - 0.1
            stamp = (START + timedelta(days=day, seconds=n)).isoformat()
            for rank in range(1, 6):
                rows.append({"message_id": f"{day}-{n}", "memory_id": f"m{rank}", "rank": rank,
                             "score": round(top1 - 0.01 * (rank - 1), 6), "user_id": "u", "timestamp": stamp})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def sample(path, n: int = 20, seed: int = 0):
    logs = open_logs([str(path)])
    turns, eligible = sample_turns(logs.con, FLOOR, "1d", n, seed)
    return turns, eligible


def by_window(turns) -> dict:
    found: dict = {}
    for t in turns:
        found.setdefault(t.start, []).append(t.message_id)
    return found


def test_the_sample_is_seeded_and_a_window_keeps_its_sample_when_days_are_added(tmp_path):
    write_days(tmp_path / "week.jsonl", 7)
    write_days(tmp_path / "eight.jsonl", 8)  # the same first seven days, and one more
    week, _ = sample(tmp_path / "week.jsonl")
    again, _ = sample(tmp_path / "week.jsonl")
    longer, _ = sample(tmp_path / "eight.jsonl")
    other_seed, _ = sample(tmp_path / "week.jsonl", seed=1)
    assert [t.message_id for t in week] == [t.message_id for t in again]
    first_seven = {start: ids for start, ids in by_window(longer).items() if start < START + timedelta(days=7)}
    assert first_seven == by_window(week)
    assert by_window(other_seed) != by_window(week)


def test_each_band_gets_its_share_and_turns_under_the_floor_are_never_drawn(tmp_path):
    write_days(tmp_path / "week.jsonl", 7)
    turns, eligible = sample(tmp_path / "week.jsonl", n=20)
    assert set(eligible.values()) == {180}  # 200 turns a day, 20 with nothing at or above the floor
    per_window = Counter(t.start for t in turns)
    assert set(per_window.values()) == {20}
    for start in per_window:
        bands = Counter(t.band for t in turns if t.start == start)
        # 40 of the 180 eligible turns lie in the band just over the floor (every 4th turn, less the
        # 10 of them under it): 4.4 of 20, so 4; the rest are in the bands further above
        assert bands[0] == 4 and sum(bands.values()) == 20
    for t in turns:
        top1 = t.kept[0][2]
        at_or_over = [rank for rank in range(1, 6) if round(top1 - 0.01 * (rank - 1), 6) >= FLOOR]
        assert [rank for _, rank, _ in t.kept] == at_or_over[:TOP]  # the top 3 kept, never one under the floor
        assert t.band == band_of(t.kept[0][2], FLOOR) and t.user_id == "u"
    assert len(BANDS) + 1 == 4
