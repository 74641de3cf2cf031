"""One person, one reviewer (issue 52): names are compared after Unicode NFKC and case
folding everywhere they are compared or counted (dashboard.labels.resolution
.reviewer_key), and look-alike names from other scripts are flagged where names are
listed, never merged."""

from __future__ import annotations

import json

from dashboard.cli.main import main
from dashboard.database.model import Label
from dashboard.labels.counted import filter_labels
from dashboard.labels.people_files import read_people_labels
from dashboard.labels.resolution import lookalike_notes, resolve, reviewer_key
from dashboard.labels.reviewer_agreement import agreement

COMPOSED, DECOMPOSED = "Jos\u00e9", "Jose\u0301"  # é as one code point, and e + a combining accent
CYRILLIC_SAM = "S\u0430m"  # a Cyrillic а


def _label(message: str, reviewer: str, label: str, when: str = "2026-01-01T10:00:00Z") -> Label:
    return Label(message, "mem-1", 1, 0.5, label, reviewer, "embedded:1", when, when)


def test_both_unicode_spellings_of_jose_are_one_reviewer_everywhere_names_are_counted():
    assert reviewer_key(COMPOSED) == reviewer_key(DECOMPOSED) == reviewer_key(" JOSÉ ") == reviewer_key("Ｊｏｓé")
    labels = [_label("t1", COMPOSED, "relevant"), _label("t1", DECOMPOSED, "not_relevant", "2026-01-02T10:00:00Z"),
              _label("t1", "ben", "not_relevant")]  # fmt: skip
    report = agreement(labels)
    assert len(report.reviewers) == 2 and report.method == "cohen"  # not three reviewers and Fleiss
    # one vote per person per pair: José's later label, and with ben's a majority
    [counted] = resolve(labels).labels
    assert counted.label == "not_relevant"
    assert len(filter_labels(labels, reviewer=DECOMPOSED)) == 2


def test_a_people_file_counts_both_spellings_as_one_reviewer_with_one_row_per_pair(tmp_path):
    path = tmp_path / "people.jsonl"
    path.write_text("".join(json.dumps({"message_id": "t1", "memory_id": "m1", "label": label, "reviewer": name}) + "\n"
                            for name, label in ((COMPOSED, "relevant"), (DECOMPOSED, "not_relevant"))), encoding="utf-8")  # fmt: skip
    found = read_people_labels(path)
    assert "from 1 reviewer(s)" in found.summary()
    assert [label.label for label in found.labels] == ["not_relevant"]  # the later row, as a relabel


def test_look_alike_names_from_another_script_are_flagged_when_listed_not_merged(tmp_path, capsys):
    assert reviewer_key(CYRILLIC_SAM) != reviewer_key("Sam")  # two names: maybe two people
    [note] = lookalike_notes(["Sam", CYRILLIC_SAM, "ana"])
    assert "S\\u0430m" in note and "'Sam'" in note and "look alike" in note
    assert lookalike_notes(["Sam", "sam", COMPOSED, DECOMPOSED]) == []  # one person each: nothing to flag
    path = tmp_path / "people.jsonl"
    path.write_text("".join(json.dumps({"message_id": "t1", "memory_id": "m1", "label": "relevant", "reviewer": name}) + "\n"
                            for name in ("Sam", CYRILLIC_SAM)), encoding="utf-8")  # fmt: skip
    assert main(["agreement", str(path), "--labels", str(tmp_path / "labels.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "look alike" in out and "S\\u0430m" in out
    assert "2 reviewer(s)" in out  # flagged, still two reviewers
