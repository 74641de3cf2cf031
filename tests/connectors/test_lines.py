"""The one JSONL reader: objects with their line numbers, every other line named."""

from connectors.common.lines import LineIssue, json_objects, parse_line


def test_objects_come_with_their_line_and_bad_lines_become_issues_in_order():
    text = "\n".join(
        [
            '{"id": "a"}',
            "",
            "   ",
            '{"id": "b", "text": "holds\u2028a line separator"}',
            "{not json",
            "[1, 2]",
            "null",
            '{"id": "c"}',
        ]
    )
    issues: list[LineIssue] = []
    rows = list(json_objects(text, "m.jsonl", issues))
    # U+2028 inside a string does not split the line: numbering follows line feeds only.
    assert [(n, obj["id"]) for n, obj in rows] == [(1, "a"), (4, "b"), (8, "c")]
    assert [(i.line, i.field, i.skipped) for i in issues] == [(5, "(line)", True), (6, "(line)", True), (7, "(line)", True)]
    assert str(issues[0]).startswith("m.jsonl: line 5, field '(line)': not valid JSON: ")
    assert "at column 2" in issues[0].message
    assert issues[1].message == "expected a JSON object, got list"
    assert issues[2].message == "expected a JSON object, got NoneType"


def test_issues_are_appended_as_lines_are_met_so_a_caller_keeps_line_order():
    issues: list[LineIssue] = []
    for number, obj in json_objects('{"ok": 1}\nbroken\n{"ok": 0}', "f.jsonl", issues):
        if not obj["ok"]:
            issues.append(LineIssue("f.jsonl", number, "ok", "must be 1"))
    assert [i.line for i in issues] == [2, 3]


def test_an_issue_reads_with_or_without_its_file():
    issue = LineIssue("labels.jsonl", 7, "label", "unknown label 'yes'", skipped=False)
    assert str(issue) == "labels.jsonl: line 7, field 'label': unknown label 'yes'"
    assert issue.at() == "line 7, field 'label': unknown label 'yes'"
    assert parse_line('{"a": 1}', 1, "x") == {"a": 1}
