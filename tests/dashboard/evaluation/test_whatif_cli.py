"""`memlens whatif`: the page's search on the command line, with the same honesty:
no recommendation when nothing beats the store's own weights, the tie rule stated,
and the same numbers as dashboard.evaluation.weight_search.search_run."""

from __future__ import annotations

import json

import pytest
from whatif_runs import noise_run, perfect_run

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.evaluation import weight_search as whatif


@pytest.fixture
def saved(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    db = AppDatabase(tmp_path / "labels.sqlite")
    info = perfect_run(db)
    yield db, info
    db.close()


def test_no_recommendation_and_no_weights_hint_when_nothing_beats_the_store(saved, capsys):
    _, info = saved
    assert main(["whatif", info.run_id, "--metric", "recall", "--n", "1", "--threshold"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("recall@1: no weighting beats the store's own (1.0000)")
    assert "recommended: none (nothing beats the store's own weights on the search split)" in out
    assert "--weights" not in out
    assert "note: ties: equal weighted scores keep the store's own order" in out
    assert "note: 11 weighting(s) left out" in out


def test_the_json_report_has_the_numbers_the_page_shows(saved, capsys):
    evals, info = saved
    assert main(["whatif", info.run_id, "--metric", "mrr", "--n", "3", "--grid", "0.25", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    expected = whatif.search_run(evals, info, metric="mrr", n=3, step=0.25)
    assert body["own"]["search_split"] == expected.own_train
    assert body["best"]["search_split"] == expected.best.train and body["best"]["weights"] == expected.best.weights
    assert body["recommended"] is None and body["weights_flag"] is None
    assert body["settings_sharing_best"] == expected.best_ties > 1


def test_unusable_input_is_named(saved, capsys):
    assert main(["whatif", "no-such-run", "--metric", "recall"]) == 2
    assert "memlens whatif: no run 'no-such-run'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["whatif", "perfect-run", "--metric", "recall", "--grid", "0"])
    _, info = saved
    assert main(["whatif", info.run_id, "--metric", "recall", "--grid", "0.3"]) == 2
    assert "the grid step 0.3 must divide 1" in capsys.readouterr().err


# Issue 34: a search-split gain is not a recommendation unless it holds on the
# held-out questions beyond noise; a share of a loss is not printed; a set metric at
# n >= k cannot change by re-ranking and the answer says to run deeper.


@pytest.fixture
def noise(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    db = AppDatabase(tmp_path / "labels.sqlite")
    yield db, noise_run(db)
    db.close()


def test_a_held_out_loss_is_not_recommended_nor_given_as_a_share(noise, capsys):
    evals, info = noise
    found = whatif.search_run(evals, info, metric="ndcg", n=5, search_floor=True)
    assert found.train_gain > 0.05 and found.held_out_gain < 0  # fitted to the search split
    assert main(["whatif", info.run_id, "--metric", "ndcg", "--n", "5", "--threshold"]) == 0
    out = capsys.readouterr().out
    assert "nothing to apply: the best weighting on the search split" in out.splitlines()[0]
    assert "does not gain on the held-out questions" in out and "%" not in out
    assert "recommended: none (the best weighting on the search split" in out and "--weights" not in out


def test_a_held_out_gain_within_its_noise_is_not_recommended(noise, capsys):
    evals, info = noise
    found = whatif.search_run(evals, info, metric="mrr", n=5)
    low, high = found.held_out_interval
    assert found.held_out_gain > 0 and low < 0 < high  # a gain, but its interval takes in zero
    assert main(["whatif", info.run_id, "--metric", "mrr", "--n", "5", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["recommended"] is None and body["weights_flag"] is None
    assert body["held_out_gain_interval"] == [low, high]
    assert "is within its noise (95% interval" in body["nothing_to_apply"]


def test_recall_at_k_cannot_change_by_re_ranking_and_says_to_run_deeper(noise, capsys):
    _, info = noise
    assert main(["whatif", info.run_id, "--metric", "recall", "--n", "10"]) == 0
    out = capsys.readouterr().out
    assert "re-ranking the run's 10 candidates cannot change recall@10" in out.splitlines()[0]
    assert "Evaluate with a larger k first (memlens eval ... --k 50)" in out
    assert "recommended: none (re-ranking the run's 10 candidates cannot change recall@10" in out


def test_the_metric_is_spelled_as_compare_spells_it_too(noise, capsys):
    _, info = noise
    assert main(["whatif", info.run_id, "--metric", "recall@10"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("recall@10: ")
    assert main(["whatif", info.run_id, "--metric", "recall@10", "--n", "3"]) == 2
    assert "name two cutoffs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["whatif", info.run_id, "--metric", "recall@ten"])
