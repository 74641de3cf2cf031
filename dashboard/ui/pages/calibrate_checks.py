"""The Calibrate page's score-direction check (dashboard/score_direction.py): labels
whose scores rise with rank or leave 0-1 (a store's raw distance) are not calibrated
until the reviewer says higher is better in them, as `memlens calibrate
--score-direction higher` does on the command line."""

from __future__ import annotations

import streamlit as st

from dashboard.calibration.label_files import LabelFile
from dashboard.score_direction import check_direction
from dashboard.ui.widgets.errors import show_error


def direction_allows(labels: LabelFile) -> bool:
    """False (and the page says why) while the scores look like a raw distance and the
    reviewer has not said they are memlens's score."""
    rows = labels.rows
    warning = check_direction([r.score for r in rows], [r.message_id for r in rows], [r.rank for r in rows]).warning()
    if warning is None:
        return True
    show_error(f"{warning} Calibration is refused until you say which way these scores go.")
    return bool(
        st.checkbox(
            "Higher is better in these scores: calibrate them as they are",
            key="calibrate_scores_higher",
            help="The same as memlens calibrate --score-direction higher. If lower is better, convert the distance "
            "to memlens's score first (docs/stores.md).",
        )
    )
