"""`memlens labels export` writes data, not terminal text (issue 52): ids holding an
escape sequence, a bidi mark, padding spaces, a leading quote or a formula character
come back exactly after `memlens labels import`, and still join the retrieval log's
ids. The CSV formula guard stays, and is undone only where the exporter put it."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.cli.main import SafeOutput, main
from dashboard.database import AppDatabase
from dashboard.labels import export
from dashboard.logs.retrieval_log import read_log

HOSTILE_IDS = (
    "\x1b]0;pwned\x07mem-title",  # retitles a terminal
    "\x1b[31mred\x1b[0m",
    "abc\u202edcba",  # a bidi override
    "  padded  ",
    " lead",
    "trail ",
    "'quoted",
    "''twice",
    "'=both",
    '=HYPERLINK("http://evil.example","open")',
    "+1",
    "-2",
    "@SUM(A1)",
    "\ttabbed",
    "plain-id",
)


@pytest.fixture
def labelled(tmp_path):
    """A database with one label per hostile id (as message and memory id both)."""
    path = tmp_path / "labels.sqlite"
    db = AppDatabase(path)
    for index, value in enumerate(HOSTILE_IDS):
        db.labels.save(message_id=f"{value}", memory_id=f"{value}#{index}", label=("relevant", "not_relevant")[index % 2],
                       reviewer="ana", store="embedded:1", rank=1, score=-0.25 if index == 0 else 0.5)  # fmt: skip
    db.close()
    return path


def _pairs(path) -> set[tuple[str, str, str]]:
    db = AppDatabase(path)
    try:
        return {(label.message_id, label.memory_id, label.label) for label in db.labels.find()}
    finally:
        db.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_hostile_ids_come_back_exactly_after_export_and_import(fmt, labelled, tmp_path, capsys):
    assert main(["labels", "export", "--labels", str(labelled), "--format", fmt]) == 0
    written = capsys.readouterr().out
    exported = tmp_path / f"export.{fmt}"
    exported.write_text(written, encoding="utf-8", newline="")
    back = tmp_path / "back.sqlite"
    assert main(["labels", "import", str(exported), "--session", "back", "--labels", str(back)]) == 0, capsys.readouterr().err
    assert _pairs(back) == _pairs(labelled)
    if fmt == "csv":
        # the guard is still there: no cell a spreadsheet would run
        assert "\r\n=HYPERLINK" not in written and ",=HYPERLINK" not in written and "'=HYPERLINK" in written


def test_the_imported_labels_still_join_the_log_s_ids(labelled, tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        json.dumps({"message_id": value, "memory_id": f"{value}#{index}", "rank": 1, "score": 0.5,
                    "timestamp": "2026-01-01T10:00:00Z"}) + "\n"
        for index, value in enumerate(HOSTILE_IDS)
    ), encoding="utf-8")  # fmt: skip
    assert main(["labels", "export", "--labels", str(labelled), "--format", "csv"]) == 0
    exported = tmp_path / "export.csv"
    exported.write_text(capsys.readouterr().out, encoding="utf-8", newline="")
    back = tmp_path / "back.sqlite"
    assert main(["labels", "import", str(exported), "--session", "back", "--labels", str(back)]) == 0
    rows = read_log(log).rows
    logged = set(zip(rows["message_id"], rows["memory_id"], strict=True))
    labelled_pairs = {(message, memory) for message, memory, _ in _pairs(back)}
    assert labelled_pairs == logged and len(logged) == len(HOSTILE_IDS)


def test_an_export_to_a_terminal_is_still_shown_escaped():
    # the same write, when stdout is a terminal a person reads: escapes are not obeyed
    leader, follower = os.openpty()
    with open(follower, "w", encoding="utf-8", closefd=True) as tty:
        SafeOutput(tty, redacting=False).write_data("id \x1b]0;pwned\x07 \u202eok")
        tty.flush()
        shown = os.read(leader, 1000).decode("utf-8")
    os.close(leader)
    assert shown == "id \\x1b]0;pwned\\x07 \\u202eok"


@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20))
def test_every_non_empty_text_cell_is_guarded_and_restored_exactly(value):
    cell = export.neutralise_cell(value)
    assert not str(cell).startswith(export.FORMULA_PREFIXES)
    assert export.restore_cell(str(cell)) == value


def test_a_hand_written_csv_cell_is_still_read_without_its_blanks():
    assert export.restore_cell("  m1 ") == "m1"
    assert export.restore_cell("'  m1 ") == "  m1 "
    assert export.restore_cell("") is None
