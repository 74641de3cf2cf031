"""The Quality page's what-if search when nothing beats the store's own weights: it
says so, shows the tie rule and counts, and offers no weights to apply (no button,
no --weights hint), with or without "Also search a threshold"."""

from __future__ import annotations

import pytest
from markdown_text import seen
from whatif_runs import perfect_run

from dashboard.database import AppDatabase


@pytest.mark.parametrize("threshold", [False, True])
def test_a_zero_gain_is_not_offered_as_weights_to_use(app, data_dir, threshold):
    db = AppDatabase(data_dir / "labels.sqlite")
    info = perfect_run(db)
    db.close()
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="eval_run").value == info.run_id
    at.selectbox(key="whatif_metric").set_value("recall").run()
    at.number_input(key="whatif_n").set_value(1).run()
    at.checkbox(key="whatif_threshold").set_value(threshold).run()
    at.button(key="whatif_search").click().run()
    assert not at.exception, at.exception
    assert any("no weighting beats the store's own (1.0000)" in seen(w.value) for w in at.warning)
    assert not [b for b in at.button if b.key == "whatif_apply"]
    assert not any("--weights" in seen(c.value) for c in at.caption)
    assert any("Ties: equal weighted scores keep the store's own order" in seen(c.value) for c in at.caption)
    assert any("11 weighting(s) left out" in seen(c.value) for c in at.caption)
    table = next(d.value for d in at.dataframe if "held out" in d.value.columns)
    assert "tied questions" in table.columns
    assert (table["usage"].iloc[1:] < 1).all()  # the degenerate usage=1 is not among the settings
