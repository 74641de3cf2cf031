"""Floor advice on 1,000,000 labelled rows against the sweep it reads and scikit-learn.

What is timed, on the same rows in the same run (rounds interleaved; median round):

- the sweep alone (``dashboard.calibration.sweep.sweep`` with message ids): the baseline
  every piece of advice reads from;
- each mode's floor without its interval (``choice.choose`` on that sweep): target
  recall, target precision, max F1;
- the diagnosis read off the sweep: ROC AUC and average precision;
- the whole advice (``advice.advise``: three modes, the diagnosis, the warnings and
  the answerable / unanswerable turn split at every floor), no bootstrap;
- (b) scikit-learn's ``roc_auc_score`` + ``average_precision_score`` on the same rows:
  what the diagnosis would cost done the usual way;
- one mode's bootstrap interval (1,000 resamples) on 10,000 rows, beside the cost-ratio
  recommendation's on the same rows.

Labels are rare (4.5% relevant) and overlapping, the case the advice is for.
Target: the whole advice, no bootstrap, costs at most half of what scikit-learn takes
for the diagnosis alone (it reads the sweep, sorting nothing again but the turns' best
scores).
Run: ``python -m benchmarks.floor_advice [--rows N] [--rounds R]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks._common import median, report, table, timed
from dashboard.calibration import sweep as cal
from dashboard.calibration.advice import advise
from dashboard.calibration.choice import FBETA, TARGET_PRECISION, TARGET_RECALL, choose
from dashboard.calibration.diagnosis import average_precision, roc_auc

ROWS_PER_TURN = 10
TARGETS = {TARGET_RECALL: 0.9, TARGET_PRECISION: 0.8, FBETA: 1.0}


def make_rows(rows: int, seed: int = 0):
    """Rare relevant hits whose scores overlap the irrelevant ones'."""
    rng = np.random.default_rng(seed)
    relevant = rng.random(rows) < 0.045
    scores = np.where(relevant, rng.normal(0.47, 0.1, rows), rng.normal(0.40, 0.1, rows))
    turn = np.arange(rows, dtype=np.int64) // ROWS_PER_TURN
    return cal.LabelledScores(scores, relevant, turn, int(turn.max()) + 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    from sklearn.metrics import average_precision_score, roc_auc_score

    data = make_rows(args.rows)
    full = cal.sweep(data)
    calibration = cal.calibrate(data, resamples=0)
    # The two ways must agree before their times mean anything.
    assert np.isclose(roc_auc(full), roc_auc_score(data.relevant, data.scores))
    assert np.isclose(average_precision(full), average_precision_score(data.relevant, data.scores))

    methods = {
        "sweep with turn shares (the baseline)": lambda: cal.sweep(data),
        "target recall 0.9 floor, on the sweep": lambda: choose(data, TARGET_RECALL, 0.9, result=full),
        "target precision 0.8 floor, on the sweep": lambda: choose(data, TARGET_PRECISION, 0.8, result=full),
        "max F1 floor, on the sweep": lambda: choose(data, FBETA, 1.0, result=full),
        "ROC AUC + average precision, on the sweep": lambda: (roc_auc(full), average_precision(full)),
        "whole advice (3 modes, diagnosis, turn split)": lambda: advise(calibration, TARGETS, TARGET_RECALL),
        "(b) scikit-learn roc_auc_score + average_precision_score": lambda: (
            roc_auc_score(data.relevant, data.scores),
            average_precision_score(data.relevant, data.scores),
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_number in range(args.rounds):
        for name, run in methods.items():
            times[name] += timed(run, repeat=1, warmup=1 if round_number == 0 else 0)
    ms = {name: median(values) for name, values in times.items()}
    sweep_ms = ms["sweep with turn shares (the baseline)"]
    rows = [[name, ms[name], f"{ms[name] / sweep_ms:.3f}", len(times[name])] for name in methods]
    body = table(["method", "median ms", "this / sweep", "rounds"], rows)

    small = make_rows(10_000, seed=1)
    recall_bootstrap_ms = median(timed(lambda: choose(small, TARGET_RECALL, 0.9, resamples=1000), repeat=3))
    cost_bootstrap_ms = median(timed(lambda: cal.recommend(small, 1.0, resamples=1000), repeat=3))

    sklearn_ms = ms["(b) scikit-learn roc_auc_score + average_precision_score"]
    advice_ratio = ms["whole advice (3 modes, diagnosis, turn split)"] / sklearn_ms
    sklearn_ratio = ms["ROC AUC + average precision, on the sweep"] / sklearn_ms
    body += (
        f"\n\n{args.rows:,} labelled rows (4.5% relevant, {ROWS_PER_TURN} per turn), float64 scores, "
        f"{len(full):,} distinct floors; median of {args.rounds} interleaved rounds. "
        f"Target whole advice <= 0.5 x scikit-learn's AUC + AP: {advice_ratio:.3f} "
        f"({'met' if advice_ratio <= 0.5 else 'NOT met'}). "
        f"Diagnosis read off the sweep vs scikit-learn's two calls: {sklearn_ratio:.3f} x. "
        f"Bootstrap interval, 1,000 resamples of 1,000 turns (10,000 rows): target recall {recall_bootstrap_ms:,.0f} ms, "
        f"cost ratio {cost_bootstrap_ms:,.0f} ms."
    )
    report("Floor advice (benchmarks/floor_advice.py)", body)


if __name__ == "__main__":
    main()
