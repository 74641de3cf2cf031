"""A relevance rule that reads the whole turn against the single floor (issue 54),
on labels of our own making, and what fitting it costs.

- Quality: seeded synthetic turns where the turn carries the signal
  (tests/turn_labels_data.py: each turn's scores shifted by its own offset, so one
  floor for all turns separates relevant from irrelevant hits poorly, while a hit's
  place among its turn's hits separates them well): 2,000 turns of 10 hits, 20,000
  labels. Every figure is held out (calibration/turn_fit.compare_rules: 5-fold
  cross-validation split by turn, labels of a held-out turn never in its fit), with
  95% intervals over 1,000 resamples of turns: the precision of the learned rule,
  the largest-gap cut (with the floor) and the single floor at target recall 0.70,
  and the learned rule at the largest-gap cut's own recall.
  Targets: learned at least 1.3x the floor's precision, and not under the
  largest-gap cut at its recall.
- Speed: the fit and cross-validation of every rule (compare_rules without
  intervals, features included) against scikit-learn's own ``cross_val_score`` of
  the same pipeline on the same feature matrix and folds; both warmed up, then 7
  runs each, interleaved, median. Target: at most 3x.

The agent-side cost of the rule (memory_for_prompt with a learned rule and with a
shadow config) is measured in benchmarks/runtime.py's interleaved loop.
"""

from __future__ import annotations

import sys
import time

from benchmarks._common import ROOT, exit_code, median, report, table

sys.path.insert(0, str(ROOT / "tests"))

TURNS, K, SEED = 2_000, 10, 3
NOISE = 0.06  # within-turn noise: the rule is good, not perfect
TARGET_RECALL = 0.7
PRECISION_TARGET = 1.3
SPEED_TARGET = 3.0
RUNS = 7


def _interval(pair) -> str:
    return f"{pair[0]:.3f}-{pair[1]:.3f}" if pair else "-"


def main() -> int:
    from turn_labels_data import as_jsonl, signal_turns

    from dashboard.calibration.label_files import parse_label_text
    from dashboard.calibration.turn_fit import compare_rules, turn_labels
    from dashboard.turn_rule import FLOOR, LARGEST_GAP, LEARNED, TOP_RATIO

    labels = parse_label_text(as_jsonl(signal_turns(turns=TURNS, k=K, seed=SEED, noise=NOISE)), source="synthetic.jsonl")
    turns = turn_labels(labels)
    comparison = compare_rules(turns, "target_recall", TARGET_RECALL, resamples=1000, seed=0)
    figures = comparison.figures
    rows = [
        [name, f"{figures[key].precision:.3f}", _interval(figures[key].precision_interval), f"{figures[key].recall:.3f}",
         f"{figures[key].no_memory_share:.0%}"]
        for key, name in ((FLOOR, "single floor"), (LEARNED, "learned rule"), (LARGEST_GAP, "largest-gap cut + floor"),
                          (TOP_RATIO, "top-ratio cut + floor"))
    ]  # fmt: skip
    at_gap = comparison.learned_at_gap
    rows.append(
        [f"learned rule at the largest-gap cut's recall {comparison.gap_recall:.3f}", f"{at_gap.precision:.3f}",
         _interval(at_gap.precision_interval), f"{at_gap.recall:.3f}", f"{at_gap.no_memory_share:.0%}"]
    )  # fmt: skip
    ratio = figures[LEARNED].precision / figures[FLOOR].precision
    not_under = at_gap.precision >= figures[LARGEST_GAP].precision

    speed_rows, speed = _speed(labels, turns)
    problems = []
    if comparison.recommended != LEARNED:
        problems.append(f"the learned rule is not recommended on signal-carrying turns: {comparison.recommended}")
    body = (
        f"Synthetic turns where the turn carries the signal (tests/turn_labels_data.py, seed {SEED}): {TURNS:,} turns of "
        f"{K} hits, {len(turns.data):,} labels ({turns.data.relevant_count:,} relevant); per-turn score offsets (sd 0.15) "
        f"against a relevant-irrelevant gap of 0.17, within-turn noise sd {NOISE}. Held out: 5-fold cross-validation "
        f"split by turn; 95% intervals over {comparison.resamples:,} resamples of turns; cuts chosen at target recall "
        f"{TARGET_RECALL:.2f} on the training turns.\n\n"
        + table(["rule", "held-out precision", "95% interval", "held-out recall", "no memory"], rows)
        + f"\n\nRecommended: {comparison.recommended} ({comparison.reason}).\n\n"
        f"Targets: learned precision at least {PRECISION_TARGET}x the single floor's at the same recall: "
        f"{ratio:.2f}x ({'met' if ratio >= PRECISION_TARGET else 'NOT met'}); learned not under the largest-gap cut at "
        f"that cut's recall: {at_gap.precision:.3f} against {figures[LARGEST_GAP].precision:.3f} "
        f"({'met' if not_under else 'NOT met'}).\n\n"
        f"Fitting: median of {RUNS} runs each, interleaved, after a warm-up.\n\n"
        + table(["case", "median s", "vs cross_val_score"], speed_rows)
        + f"\n\nTarget: fit and cross-validation at most {SPEED_TARGET}x scikit-learn's cross_val_score: {speed:.2f}x "
        f"({'met' if speed <= SPEED_TARGET else 'NOT met'})."
    )
    report("turn_rule: a rule that reads the whole turn vs the single floor, held out", body)
    return exit_code(problems)


def _speed(labels, turns) -> tuple[list[list[str]], float]:
    """(table rows, ratio): compare_rules without intervals (and with the turn
    features computed from the labels too) vs cross_val_score."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dashboard.calibration.turn_fit import REGULARISATION, compare_rules, turn_labels

    def ours() -> None:
        compare_rules(turns, "target_recall", TARGET_RECALL, resamples=0)

    def features_too() -> None:
        compare_rules(turn_labels(labels), "target_recall", TARGET_RECALL, resamples=0)

    def sklearn_own() -> None:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=REGULARISATION, max_iter=1000))
        cross_val_score(model, turns.features, turns.data.relevant, groups=turns.data.turn, cv=GroupKFold(5))

    cases = {"cross_val_score (baseline)": sklearn_own, "compare_rules, fit + CV": ours, "compare_rules + turn features": features_too}
    for fn in cases.values():
        fn()  # warm up: imports, first allocations
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(RUNS):
        for label, fn in cases.items():
            started = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - started)
    base = median(times["cross_val_score (baseline)"])
    rows = [[label, f"{median(values):.3f}", f"{median(values) / base:.2f}x"] for label, values in times.items()]
    return rows, median(times["compare_rules, fit + CV"]) / base


if __name__ == "__main__":
    sys.exit(main())
