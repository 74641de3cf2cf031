"""The Label page names memlens's own files given as a log (issue 53): an uploaded
memories file is one line saying what it is and where it goes, not a table of field
errors on every line."""

from __future__ import annotations

from pathlib import Path

from markdown_text import error_texts

DEMO = Path(__file__).resolve().parents[2] / "demo_data"


def test_an_uploaded_memories_file_is_named_not_read_as_bad_rows(label_page):
    at = label_page(label_reviewer="ana")
    at.run()
    at.radio(key="log_source").set_value("Upload a log file").run()
    memories = (DEMO / "memories.jsonl").read_bytes()
    at.file_uploader(key="log_upload").set_value(("memories.jsonl", memories, "application/jsonl")).run()
    at.button(key="log_read").click().run()
    assert not at.exception
    errors = error_texts(at)
    assert any("memories.jsonl is a memlens memories file" in e and "give it to `memlens import`" in e for e in errors), errors
    assert not at.dataframe  # no table of field errors
