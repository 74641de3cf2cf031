"""The Quality page reads a saved run's answers from the label database once, not on
every rerun: with two runs of 20,000 hits, each floor move decoded them three times
(figures, then both sides of the comparison), most of a rerun's time."""

from __future__ import annotations

from whatif_runs import perfect_run

from dashboard.database import AppDatabase
from dashboard.database.runs import RunRepository


def test_moving_the_floor_reads_no_run_again(app, data_dir, monkeypatch):
    db = AppDatabase(data_dir / "labels.sqlite")
    perfect_run(db, run_id="run-a")
    perfect_run(db, run_id="run-b")
    db.close()
    reads: list[str] = []
    original = RunRepository.outcomes

    def counted(self, run_id):
        reads.append(run_id)
        return original(self, run_id)

    monkeypatch.setattr(RunRepository, "outcomes", counted)
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    assert any(m.label == "B wins / ties / losses" for m in at.metric)  # the comparison is drawn
    assert sorted(set(reads)) == ["run-a", "run-b"]
    reads.clear()
    at.slider(key="eval_floor").set_value(0.5).run()
    assert not at.exception, at.exception
    assert at.slider(key="eval_floor").value == 0.5
    assert reads == []
