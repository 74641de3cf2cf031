"""Sampling a log into a labelling session: seeded, stratified, whole turns, overlap."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from dashboard.database import AppDatabase
from dashboard.labels import sampling


def make_log(turns=400, per_turn=5, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    count = turns * per_turn
    # most scores crowd the middle, as real ones do; few near a floor at 0.3
    scores = np.clip(rng.normal(0.55, 0.08, count), 0, 1)
    return pd.DataFrame(
        {
            "message_id": np.repeat([f"t{i:04d}" for i in range(turns)], per_turn),
            "memory_id": [f"mem{i}" for i in range(count)],
            "rank": np.tile(np.arange(1, per_turn + 1), turns),
            "score": scores,
            "user_id": "sam",
            "query": np.repeat([f"question {i}" for i in range(turns)], per_turn),
            "timestamp": pd.NaT,
            "store": "embedded:x",
            "line": np.arange(1, count + 1),
        }
    )


@pytest.mark.parametrize("method", sampling.METHODS)
def test_the_same_seed_gives_the_same_session_and_another_seed_another(method):
    log = make_log()
    first = sampling.draw_sample(log, method, 50, seed=7)
    assert first.equals(sampling.draw_sample(log, method, 50, seed=7))
    assert not first["memory_id"].equals(sampling.draw_sample(log, method, 50, seed=8)["memory_id"])


def test_uniform_draws_distinct_rows_grouped_by_turn():
    sample = sampling.draw_sample(make_log(), "uniform", 120, seed=1)
    assert len(sample) == 120 and sample["memory_id"].is_unique
    # a turn's rows are together, so the page shows one turn at a time
    runs = (sample["message_id"] != sample["message_id"].shift()).sum()
    assert runs == sample["message_id"].nunique()


def test_stratified_covers_the_sparse_bands_near_a_floor():
    log = make_log()
    bands = sampling.score_bands(log["score"].to_numpy(), 0.05)
    sample = sampling.draw_sample(log, "stratified", 200, seed=3, band_width=0.05)
    sample_bands = Counter(sampling.score_bands(log["score"].to_numpy(), 0.05)[sample.index.to_numpy()])
    available = Counter(bands)
    assert len(sample) == 200 and sample["memory_id"].is_unique
    # every band gets min(its size, an equal share or more)
    fair = 200 // len(available)
    assert all(sample_bands[b] >= min(n, fair) for b, n in available.items())
    low = log["score"] < 0.35
    uniform = sampling.draw_sample(log, "uniform", 200, seed=3)
    assert low[sample.index].sum() > 3 * max(1, low[uniform.index].sum())


def test_allocation_gives_a_small_band_all_it_has_and_the_rest_to_others():
    assert sampling.allocate(np.array([2, 100, 100]), 90).tolist() == [2, 44, 44]
    assert sampling.allocate(np.array([2, 3, 1000]), 20).tolist() == [2, 3, 15]
    assert sampling.allocate(np.array([5, 5]), 100).tolist() == [5, 5]


def test_bands_are_aligned_on_zero():
    assert sampling.score_bands(np.array([0.30, 0.349, 0.35, 0.70]), 0.05).tolist() == [0, 0, 1, 8]


def test_memories_returned_with_no_score_are_a_band_of_their_own_and_sampled():
    # The agent's log writes a NaN or infinite score as a memory with no score.
    scores = np.array([0.30, np.nan, 0.35, np.inf])
    assert sampling.score_bands(scores, 0.05).tolist() == [1, 0, 2, 0]
    assert sampling.score_bands(np.array([np.nan, np.nan]), 0.05).tolist() == [0, 0]
    log = make_log()
    log.loc[log.index[:10], "score"] = np.nan
    sample = sampling.draw_sample(log, "stratified", 40, seed=3)
    assert len(sample) == 40 and sample["score"].isna().any()


def test_whole_turns_bring_every_row_of_a_turn():
    log = make_log()
    sample = sampling.draw_sample(log, "turns", 10, seed=2)
    assert sample["message_id"].nunique() == 10 and len(sample) == 50
    assert sample.groupby("message_id")["rank"].apply(list).map(lambda r: r == [1, 2, 3, 4, 5]).all()


def test_asking_for_more_than_the_log_has_gives_the_whole_log():
    log = make_log(turns=3)
    assert len(sampling.draw_sample(log, "uniform", 100, seed=1)) == 15
    assert len(sampling.draw_sample(log, "stratified", 100, seed=1)) == 15
    assert len(sampling.draw_sample(log, "turns", 100, seed=1)) == 15


@pytest.mark.parametrize("bad", [dict(method="random"), dict(size=0)])
def test_bad_sampling_requests_are_refused(bad):
    options = {"method": "uniform", "size": 5, **bad}
    with pytest.raises(ValueError):
        sampling.draw_sample(make_log(turns=3), options["method"], options["size"], seed=1)


def test_overlap_assigns_a_share_of_turns_to_two_different_reviewers():
    turns = [f"t{i}" for i in range(100)]
    assigned = sampling.assign_turns(turns, ["ana", "ben", "cy"], 0.3, seed=4)
    assert set(assigned) == set(turns)
    doubled = [names for names in assigned.values() if len(names) == 2]
    assert len(doubled) == 30 and all(a != b for a, b in doubled)
    load = Counter(names[0] for names in assigned.values())
    assert max(load.values()) - min(load.values()) <= 1  # first labels spread evenly
    assert sampling.assign_turns(turns, [], 0.5, seed=4) == {}
    assert all(len(v) == 1 for v in sampling.assign_turns(turns, ["solo"], 1.0, seed=4).values())


def test_reviewer_names_are_parsed_and_deduplicated():
    assert sampling.parse_reviewers(" ana, ben;ana\ncy ,") == ["ana", "ben", "cy"]


def test_a_saved_session_holds_ids_and_scores_only_unless_text_is_kept(tmp_path):
    db = AppDatabase(tmp_path / "labels.sqlite")
    log = make_log(turns=20)
    plain = sampling.save_session(db, "plain", log, method="turns", size=4, seed=1, reviewers=["ana", "ben"], overlap=0.5)
    sampling.save_session(db, "with text", log, method="turns", size=4, seed=1, keep_text=True)
    assert (plain.size, plain.params["turns"], plain.store, plain.overlap) == (20, 4, "embedded:x", 0.5)
    assert {i.query_text for i in db.sessions.items("plain")} == {None}
    assert all(i.query_text and i.query_text.startswith("question") for i in db.sessions.items("with text"))
    assert sum(len(v) == 2 for v in db.sessions.assignments("plain").values()) == 2
    assert [i.memory_id for i in db.sessions.items("plain")] == [i.memory_id for i in db.sessions.items("with text")]
    db.close()
