"""The browser tests write their screenshots to an output folder; only a run asked to
(MEMLENS_UPDATE_SCREENSHOTS=1, `make screenshots`) copies them into docs/screenshots,
and then only the shots that run took."""

from __future__ import annotations

import os
import time

from st_browser import copy_new_screenshots


def test_only_the_shots_taken_since_the_start_are_copied_over_the_committed_ones(tmp_path):
    output, docs = tmp_path / "artifacts", tmp_path / "docs"
    output.mkdir()
    docs.mkdir()
    (docs / "monitor.png").write_bytes(b"committed monitor")
    (docs / "calibrate.png").write_bytes(b"committed calibrate")
    (output / "calibrate.png").write_bytes(b"left over from an earlier run")
    an_hour_ago = time.time() - 3600
    os.utime(output / "calibrate.png", (an_hour_ago, an_hour_ago))
    started = time.time() - 60
    (output / "monitor.png").write_bytes(b"this run's monitor")
    (output / "notes.txt").write_text("not a screenshot", encoding="utf-8")

    copied = copy_new_screenshots(output, docs, started)

    assert copied == [docs / "monitor.png"]
    assert (docs / "monitor.png").read_bytes() == b"this run's monitor"
    assert (docs / "calibrate.png").read_bytes() == b"committed calibrate"
    assert sorted(p.name for p in docs.iterdir()) == ["calibrate.png", "monitor.png"]
