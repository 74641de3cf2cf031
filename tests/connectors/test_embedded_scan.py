"""The embedded store's in-memory scan: per-user slices give the same answers as a
brute-force ranking, whatever order the rows were written in."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from connectors.embedded.store import EmbeddedStore

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TEXTS = [
    "Lives in Lisbon",
    "Prefers light UI theme",
    "Training for a half marathon in October",
    "Allergic to peanuts",
    "Works on the orders service, which runs on MySQL",
    "Has a cat called Miso",
    "Drinks oat milk in coffee",
    "Moved the team to weekly releases",
    "Reads science fiction on the train",
]
USERS = ["ana", "sam", "leo"]


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    """Three users' memories written round-robin, so no user's rows are adjacent
    in the table: the layout that a by-user slice has to undo."""
    path = tmp_path_factory.mktemp("scan") / "interleaved.sqlite"
    store = EmbeddedStore(path, now=lambda: NOW)
    rows = [
        {
            "id": f"{USERS[i % 3]}-{i:02d}",
            "user_id": USERS[i % 3],
            "text": f"{TEXTS[i % len(TEXTS)]} ({USERS[i % 3]})",
            "created_at": NOW - timedelta(hours=7 * i),
            "importance": 0.05 + 0.1 * (i % 10),
            "usage_count": i % 4,
            "metadata": {},
        }
        for i in range(27)
    ]
    store.import_rows(rows)
    yield store, rows
    store.close()


def brute_force(
    store: EmbeddedStore, rows: list[dict], query: str, user: str | None, k: int, now: datetime = NOW
) -> list[tuple[str, float]]:
    """The documented ranking, computed row by row from the stored embeddings."""
    from connectors.embedding import model_loader as embedding

    q = embedding.encode([query])[0]
    stored = dict(store._db.execute("SELECT id, embedding FROM memories"))
    w = store.weights
    ranked = []
    for row in rows:
        if user is not None and row["user_id"] != user:
            continue
        vector = np.frombuffer(stored[row["id"]], dtype=np.float32)
        semantic = min(1.0, max(0.0, float(vector @ q)))
        hours = max(0.0, (now - row["created_at"]).total_seconds() / 3600)
        recency = math.exp(-hours * math.log(2) / store.half_life_hours)
        usage = min(1.0, math.log1p(row["usage_count"]) / 5)
        score = w["semantic"] * semantic + w["recency"] * recency + w["importance"] * row["importance"] + w["usage"] * usage
        ranked.append((row["id"], score))
    ranked.sort(key=lambda item: (-item[1], item[0]))
    return ranked[:k]


def query_at(store: EmbeddedStore, clock: datetime, query: str, user: str | None, k: int) -> list:
    """The store's hits for `query` with its clock set to `clock`."""
    store._now = lambda: clock
    try:
        return store.query(query, user_id=user, k=k).hits
    finally:
        store._now = lambda: NOW


def assert_same_ranking(hits: list, expected: list[tuple[str, float]]) -> None:
    assert [h.memory_id for h in hits] == [memory_id for memory_id, _ in expected]
    assert [h.score for h in hits] == pytest.approx([score for _, score in expected], abs=1e-6)


@pytest.mark.parametrize("user", [*USERS, None])
def test_each_user_gets_exactly_the_brute_force_ranking(interleaved, user):
    store, rows = interleaved
    query = "Where does the user live?"
    hits = store.query(query, user_id=user, k=6).hits
    assert_same_ranking(hits, brute_force(store, rows, query, user, k=6))
    if user is not None:
        assert {h.metadata["user_id"] for h in hits} == {user}


def test_a_memory_added_later_joins_its_users_slice(tmp_path):
    store = EmbeddedStore(tmp_path / "grow.sqlite", now=lambda: NOW)
    base = {"created_at": NOW, "importance": 0.5, "usage_count": 0, "metadata": {}}
    store.import_rows([{**base, "id": "a1", "user_id": "ana", "text": "Likes jazz"}])
    store.import_rows([{**base, "id": "s1", "user_id": "sam", "text": "Lives in Lisbon"}])
    assert [h.memory_id for h in store.query("music", user_id="ana", k=5).hits] == ["a1"]
    store.import_rows([{**base, "id": "a2", "user_id": "ana", "text": "Plays the piano"}])
    assert {h.memory_id for h in store.query("music", user_id="ana", k=5).hits} == {"a1", "a2"}
    assert [h.memory_id for h in store.query("music", user_id="sam", k=5).hits] == ["s1"]
    assert store.query("music", user_id="nobody", k=5).hits == []
    store.close()


def test_a_query_leaves_the_blas_thread_count_as_it_was(interleaved):
    store, _ = interleaved
    before = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    store.query("Which UI theme does the user prefer?", user_id="sam", k=3)
    after = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert after == before


@pytest.mark.parametrize(
    "clock",
    [NOW + timedelta(days=30), NOW + timedelta(hours=1), NOW - timedelta(hours=40)],
    ids=["a month on", "an hour on", "before the newest memories"],
)
def test_the_ranking_follows_the_clock_as_time_passes(interleaved, clock):
    """Recency is anchored at the newest memory once per load; a clock that moves on
    (or sits before some memories, which then count as brand new) must still give
    the documented ranking and breakdown."""
    store, rows = interleaved
    hits = query_at(store, clock, "Which UI theme does the user prefer?", None, k=8)
    assert_same_ranking(hits, brute_force(store, rows, "Which UI theme does the user prefer?", None, k=8, now=clock))
    created = {r["id"]: r["created_at"] for r in rows}
    for h in hits:
        hours = max(0.0, (clock - created[h.memory_id]).total_seconds() / 3600)
        assert h.breakdown["recency"] == pytest.approx(math.exp(-hours * math.log(2) / store.half_life_hours), abs=1e-9)


@pytest.mark.parametrize("user", [*USERS, None])
@pytest.mark.parametrize("clock", [NOW + timedelta(days=3), NOW - timedelta(hours=40)], ids=["after", "before newest"])
def test_a_scan_cut_into_parts_on_threads_gives_the_same_ranking(interleaved, monkeypatch, user, clock):
    """A large slice is scored in parts, one per core; each part must read the
    per-memory columns at its own offset within the user's slice. Parts of 2 rows
    here, so even these small slices are cut into three."""
    from connectors.embedded import scan as embedded_scan

    monkeypatch.setattr(embedded_scan, "MIN_PART_ROWS", 2)
    monkeypatch.setattr(embedded_scan, "SCAN_THREADS", 3)
    store, rows = interleaved
    assert len(embedded_scan._parts(9)) == 3
    hits = query_at(store, clock, "Where does the user live?", user, k=7)
    assert_same_ranking(hits, brute_force(store, rows, "Where does the user live?", user, k=7, now=clock))
