"""The server gets ready before it answers (dashboard/ui/widgets/start_up.py): a shared link's
first run then opens no store, no model and imports none of memlens's modules; and
a start-up step that fails keeps neither the server nor the page from running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from demo_questions import PIZZA

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dashboard" / "views" / "navigation.py")


# A new server in a fresh interpreter: start-up, then a link's first run, counting
# what that run opens and imports that start-up had not.
FIRST_LINK = """
import json, sys
from unittest import mock
from streamlit.testing.v1 import AppTest
from dashboard.ui.widgets.start_up import get_ready
from dashboard.ui.widgets import cache
from connectors.embedding import model_loader

took = get_ready()
before = set(sys.modules)
stores = mock.patch.object(cache, "create_store", side_effect=cache.create_store)
encoders = mock.patch.object(model_loader, "_open_encoder", side_effect=model_loader._open_encoder)
with stores as opened_stores, encoders as opened_encoders:
    at = AppTest.from_file(sys.argv[1], default_timeout=120)
    at.query_params.update({"query": sys.argv[2], "user": "sam", "k": "5"})
    at.run()
ours = ("dashboard", "connectors", "onnxruntime", "tokenizers")
print(json.dumps({
    "took": sorted(took),
    "imported": sorted(m for m in set(sys.modules) - before if m.startswith(ours)),
    "stores_opened": opened_stores.call_count,
    "encoders_opened": opened_encoders.call_count,
    "returned": [m.value for m in at.metric if m.label == "Returned"],
    "errors": [e.value for e in at.error] + [e.value for e in at.exception],
}))
"""


def first_link_after_start_up(data_dir: Path, **env: str) -> dict:
    environ = dict(os.environ, MEMLENS_DATA_DIR=str(data_dir), **env)
    out = subprocess.run(
        [sys.executable, "-c", FIRST_LINK, APP, PIZZA],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_links_first_run_finds_the_store_the_model_and_its_modules_ready(data_dir):
    seen = first_link_after_start_up(data_dir)
    assert seen["took"] == ["model", "modules", "store"]
    assert seen["returned"] == ["5"] and seen["errors"] == []
    # The sidebar's first-visit settings are the ones start-up opened the store with:
    # a mismatch would open a second store here, and the visitor would wait for it.
    assert seen["stores_opened"] == 0
    assert seen["encoders_opened"] == 0
    assert seen["imported"] == [], "start_up.FIRST_RUN_MODULES misses what a link's first run imports"


def test_a_store_that_cannot_open_at_start_up_is_reported_by_the_page(tmp_path):
    not_a_folder = tmp_path / "data"
    not_a_folder.write_text("a file where the data directory should be")
    seen = first_link_after_start_up(not_a_folder)
    assert seen["took"] == ["model", "modules"]  # the store's step failed; start-up went on
    assert seen["returned"] == []
    shown = [error.replace("\\", "") for error in seen["errors"]]  # the page escapes Markdown
    assert any("cannot be written" in error and "MEMLENS_DATA_DIR" in error for error in shown), shown
