"""Alerts on synthetic logs with a known change, and none without one (seeded; every
seed listed must pass, so the bounds hold whatever the draw)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from scipy import stats

from dashboard.monitoring.alerts import DRIFT, NO_MEMORY, Settings, holm, kolmogorov_p, monitor, one_sided_two_proportion_p
from dashboard.monitoring.relation import open_logs
from dashboard.monitoring.synthetic import FLOOR, synthetic_log

SEEDS = (0, 1, 2)


def run(tmp_path, table: pa.Table, **settings):
    path = tmp_path / "log.parquet"
    pq.write_table(table, path)
    logs = open_logs([str(path)])
    return monitor(logs.con, Settings(floor=FLOOR, **settings))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_day_where_20_percent_more_turns_score_under_the_floor_is_alerted(tmp_path, seed):
    result = run(tmp_path, synthetic_log(30, 2000, seed=seed, k=2, under_floor_day=20))
    no_memory = [a for a in result.alerts if a.figure == NO_MEMORY]
    assert [a.window for a in no_memory] == ["2026-01-21"]
    alert = no_memory[0]
    assert alert.value - alert.baseline > 0.15 and alert.p_value < 1e-6
    assert alert.line().startswith("alert: 2026-01-21: no-memory share ")
    assert f"vs baseline {alert.baseline:.1%}, margin 5.0 points, p = " in alert.line()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_day_where_the_score_scale_shifts_by_0_05_is_alerted_as_drift(tmp_path, seed):
    result = run(tmp_path, synthetic_log(30, 2000, seed=seed, k=2, shift_day=25))
    drift = [a for a in result.alerts if a.figure == DRIFT]
    assert [a.window for a in drift] == ["2026-01-26"]
    assert drift[0].value > drift[0].margin and drift[0].p_value < 1e-6
    assert "top-1 drift (KS)" in drift[0].line() and "margin" in drift[0].line() and "p = " in drift[0].line()
    # a rise of the scale is drift too, though it leaves fewer turns with no memory
    up = run(tmp_path, synthetic_log(30, 2000, seed=seed, k=2, shift_day=25, shift=0.05))
    assert [(a.window, a.figure) for a in up.alerts] == [("2026-01-26", DRIFT)]


@pytest.mark.parametrize("seed", (0, 1, 2, 3, 4))
def test_90_days_without_a_change_at_2000_turns_a_day_give_at_most_one_false_alert(tmp_path, seed):
    result = run(tmp_path, synthetic_log(90, 2000, seed=seed, k=2))
    assert sum(w.tested for w in result.windows) == 83  # 90 days, 7 in the baseline
    assert len(result.alerts) <= 1


@pytest.mark.parametrize("seed", SEEDS)
def test_a_quiet_baseline_with_small_windows_does_not_alert_every_day(tmp_path, seed):
    # 150 turns a day: a fixed drift threshold (e.g. 0.1) would be crossed on many days by noise alone
    result = run(tmp_path, synthetic_log(60, 150, seed=seed, k=2))
    noisy = sum(1 for w in result.windows if w.tested and w.drift is not None and w.drift > 0.1)
    assert noisy >= 5
    assert len(result.alerts) <= 1


def test_a_window_with_too_few_turns_is_said_not_alerted(tmp_path):
    table = synthetic_log(12, 2000, seed=3, k=2)
    few = synthetic_log(1, 20, seed=4, k=2, under_floor_day=0, extra_under=1.0, start=datetime(2026, 1, 13, tzinfo=UTC))
    few = few.set_column(0, "message_id", pc.binary_join_element_wise("late-", few.column("message_id"), ""))
    result = run(tmp_path, pa.concat_tables([table, few]))
    assert not result.alerts
    assert "2026-01-13: 20 turn(s), fewer than 100: not tested" in result.notes


def test_the_baseline_is_the_floor_configs_label_dates_when_the_log_covers_them(tmp_path):
    table = synthetic_log(20, 500, seed=5, k=2, under_floor_day=3)
    labelled = (datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 1, 12, 18, tzinfo=UTC))
    result = run(tmp_path, table, config_range=labelled)
    assert [w.label("1d") for w in result.baseline.windows] == ["2026-01-10", "2026-01-11", "2026-01-12"]
    assert result.baseline.how.startswith("the floor config's label dates")
    # the day before the baseline with more turns under the floor is tested and alerted
    assert [a.window for a in result.alerts if a.figure == NO_MEMORY] == ["2026-01-04"]
    elsewhere = run(tmp_path, table, config_range=(datetime(2025, 6, 1, tzinfo=UTC), datetime(2025, 6, 3, tzinfo=UTC)))
    assert elsewhere.baseline.how == "the first 7 window(s) (the log does not cover the floor config's label dates)"
    explicit = run(tmp_path, table, baseline_range=(datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 1, 18, tzinfo=UTC)))
    assert [w.label("1d") for w in explicit.baseline.windows] == ["2026-01-15", "2026-01-16", "2026-01-17"]


def test_empty_turns_count_as_turns_with_no_memory(tmp_path):
    rows = [{"message_id": f"m{i}", "memory_id": "a", "rank": 1, "score": 0.9, "timestamp": "2026-01-01T10:00:00Z"} for i in range(6)]
    rows += [{"message_id": f"e{i}", "memory_id": None, "rank": None, "score": None, "timestamp": "2026-01-01T11:00:00Z"} for i in range(4)]
    result = run(tmp_path, pa.Table.from_pylist(rows))
    (window,) = result.windows
    assert (window.turns, window.rows, window.no_memory) == (10, 6, 4)
    assert window.kept_per_turn == pytest.approx(0.6) and window.p50 == pytest.approx(0.9)


def test_the_statistics_agree_with_scipy():
    assert one_sided_two_proportion_p(600, 2000, 400, 2000) < 1e-10
    assert one_sided_two_proportion_p(400, 2000, 600, 2000) > 0.999
    z = (0.25 - 0.2) / math.sqrt(0.225 * 0.775 * (1 / 1000 + 1 / 1000))
    assert one_sided_two_proportion_p(250, 1000, 200, 1000) == pytest.approx(stats.norm.sf(z))
    for d in (0.02, 0.05, 0.1):
        n = 2000
        expected = stats.kstwobign.sf(math.sqrt(n * n / (2 * n)) * d)
        assert kolmogorov_p(d, n, n) == pytest.approx(expected, rel=0.15, abs=1e-4)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
