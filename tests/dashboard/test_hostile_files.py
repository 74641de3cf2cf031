"""Hostile files: hypothesis writes label files and retrieval logs mixing good rows with
every kind of bad one, and each reader must keep exactly the good rows, name every
bad row by its line and field, and never raise anything but its own whole-file error.
Also: spreadsheet formulas neutralised in CSV exports, and unicode / right-to-left
text and ids kept intact from a label click to the exported file."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.calibration.label_files import LabelFileError, parse_label_bytes, parse_label_text
from dashboard.database import AppDatabase
from dashboard.database.model import EXPORT_FIELDS
from dashboard.labels import export
from dashboard.logs.retrieval_log import LogFormatError, read_log_bytes

LABELS = ("relevant", "not_relevant")
FILES = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any text a store could use as an id: every script, emoji, bidi controls, quotes.
ANY_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
# For CSV the line numbers are checked too, so ids stay on one line and carry no
# blanks at their edges (a CSV reader strips them); everything else is allowed,
# formula characters included.
CSV_ID = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Zl", "Zp", "Cc")), min_size=1, max_size=12
).filter(lambda s: s == s.strip() and not s.startswith("'"))
FINITE = st.floats(allow_nan=False, allow_infinity=False)
NOT_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
WRONG_TYPE = st.one_of(
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def not_iso(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return True
    return False


def lines_of(text: str) -> list[str]:
    """The lines an editor shows: split at line feeds only (a carriage return before
    one belongs to it); U+2028 and friends inside a JSON string are not line ends."""
    return [line.removesuffix("\r") for line in text.split("\n")]


# ------------------------------------------------------------------ label files (JSONL)


@st.composite
def label_jsonl_files(draw):
    """(file text, good rows, {bad line: field}, {line: field ignored on a kept row})."""
    lines: list[str] = []
    good, bad, ignored = [], {}, {}
    ensure_ascii = draw(st.booleans())
    for i in range(draw(st.integers(0, 20))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t"])))
            continue
        number = len(lines) + 1
        obj = {
            "message_id": draw(ANY_TEXT) + f"#{i}",  # unique pairs: no duplicate rows here
            "memory_id": draw(ANY_TEXT),
            "rank": draw(st.integers(1, 50)),
            "score": draw(FINITE),
            "label": draw(st.sampled_from(LABELS)),
        }
        kind = draw(
            st.sampled_from(
                ["good", "good", "truncated", "not_object", "score_missing", "score_text", "score_not_finite",
                 "score_bool", "label_unknown", "label_missing", "id_wrong_type", "rank_bad", "time_bad",
                 "reviewer_bad"]
            )
        )  # fmt: skip
        field = None
        if kind == "truncated":
            field = "(line)"
        elif kind == "not_object":
            obj, field = draw(st.one_of(st.lists(st.integers(), max_size=3), st.integers(), st.text(max_size=5))), "(line)"
        elif kind == "score_missing":
            del obj["score"]
            field = "score"
        elif kind == "score_text":
            obj["score"], field = str(obj["score"]), "score"
        elif kind == "score_not_finite":
            obj["score"], field = draw(NOT_FINITE), "score"
        elif kind == "score_bool":
            obj["score"], field = draw(st.booleans()), "score"
        elif kind == "label_unknown":
            obj["label"], field = draw(st.text(max_size=10).filter(lambda s: s not in LABELS)), "label"
        elif kind == "label_missing":
            del obj["label"]
            field = "label"
        elif kind == "id_wrong_type":
            field = draw(st.sampled_from(["message_id", "memory_id"]))
            obj[field] = draw(st.one_of(WRONG_TYPE, st.floats()))
        elif kind == "rank_bad":
            obj["rank"] = draw(st.one_of(st.integers(max_value=0), st.text(max_size=3), st.floats()))
            ignored[number] = "rank"
        elif kind == "time_bad":
            obj["created_at"] = draw(st.text(max_size=8).filter(not_iso))
            ignored[number] = "created_at"
        elif kind == "reviewer_bad":
            obj["reviewer"] = draw(st.integers())
            ignored[number] = "reviewer"
        text = json.dumps(obj, ensure_ascii=ensure_ascii)
        lines.append(text[:-1] if kind == "truncated" else text)
        if field:
            bad[number] = field
        else:
            good.append((number, obj["message_id"], obj["memory_id"], obj["score"], obj["label"]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines), good, bad, ignored


@FILES
@given(label_jsonl_files())
def test_label_jsonl_keeps_good_rows_and_names_every_bad_line(case):
    text, good, bad, ignored = case
    if text.lstrip().startswith("["):  # a file opening with a list reads as one JSON array
        with pytest.raises(LabelFileError, match="^labels.jsonl: this is one JSON array"):
            parse_label_text(text, source="labels.jsonl")
        return
    result = parse_label_text(text, source="labels.jsonl")
    assert [(r.line, r.message_id, r.memory_id, r.score, r.label) for r in result.rows] == good
    assert {issue.line for issue in result.issues if issue.skipped} == set(bad)
    assert result.skipped == len(bad)
    for line, field in bad.items():
        assert field in {issue.field for issue in result.issues if issue.line == line}
    for line, field in ignored.items():
        assert any(i.line == line and i.field == field and not i.skipped for i in result.issues)
    report = result.issue_report(limit=len(result.issues))
    for line, field in bad.items():
        assert f"labels.jsonl: line {line}, field {field!r}" in report


# Fragments that break a JSONL reader in different ways, mixed with random text.
JSON_FRAGMENTS = [
    '{"score": 0.5, "label": "relevant"}', '{"score": 0.5, "label": "relevant", "memory_id": "a\u2028b"}',
    "{", "}", "[]", "null", '"text"', '{"score": "x", "label": 1}', '{"score": NaN}', '{"score": 1e999}',
    "\ufeff", "\x00", "\u2028", "\x85", "\r", '{"a": {"b": {"c": [[[[]]]]}}}', "\\", '"', "'",
]  # fmt: skip


@FILES
@given(st.lists(st.one_of(st.text(max_size=30), st.sampled_from(JSON_FRAGMENTS)), max_size=25))
def test_any_text_as_a_label_jsonl_never_crashes_and_accounts_for_every_line(pieces):
    text = "\n".join(pieces)
    try:
        result = parse_label_text(text, source="odd.jsonl")
    except LabelFileError as exc:
        assert "odd.jsonl" in str(exc)
        assert text.lstrip().startswith("[")  # the one whole-file refusal: a JSON array
        return
    used = {row.line for row in result.rows}
    named = {issue.line for issue in result.issues if issue.skipped}
    nonblank = {n for n, line in enumerate(lines_of(text), start=1) if line.strip()}
    assert used | named == nonblank
    assert not used & named
    for row in result.rows:
        assert row.label in LABELS and math.isfinite(row.score)


@FILES
@given(st.binary(max_size=200))
def test_any_bytes_as_a_label_file_give_rows_or_a_named_error(data):
    try:
        result = parse_label_bytes(data, source="upload.jsonl")
    except LabelFileError as exc:
        assert str(exc).startswith("upload.jsonl")
        return
    assert all(row.label in LABELS and math.isfinite(row.score) for row in result.rows)


# ------------------------------------------------------------------ label files (CSV)


@st.composite
def label_csv_files(draw):
    columns = draw(st.permutations(["message_id", "memory_id", "rank", "score", "label", "note"]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(columns)
    line, good, bad = 1, [], {}
    for i in range(draw(st.integers(0, 15))):
        line += 1
        if draw(st.integers(0, 6)) == 0:
            writer.writerow([])
            continue
        values = {
            "message_id": draw(CSV_ID) + f"#{i}",
            "memory_id": draw(CSV_ID),
            "rank": str(draw(st.integers(1, 50))),
            "score": repr(draw(FINITE)),
            "label": draw(st.sampled_from(LABELS)),
            "note": draw(st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=10)),
        }
        kind = draw(st.sampled_from(["good", "good", "score_text", "score_blank", "score_not_finite", "label_unknown", "extra_cells"]))
        field = None
        if kind == "score_text":
            values["score"], field = draw(st.sampled_from(["abc", "0,5", "1.2.3", "--1"])), "score"
        elif kind == "score_blank":
            values["score"], field = "", "score"
        elif kind == "score_not_finite":
            values["score"], field = draw(st.sampled_from(["nan", "inf", "-Infinity"])), "score"
        elif kind == "label_unknown":
            values["label"], field = draw(st.sampled_from(["yes", "Relevant", "1", "not relevant"])), "label"
        cells = [export.neutralise_cell(values[c]) for c in columns]  # as memlens's export writes them
        if kind == "extra_cells":
            cells += ["surplus"] * draw(st.integers(1, 3))
            field = "(line)"
        writer.writerow(cells)
        if field:
            bad[line] = field
        else:
            good.append((line, values["message_id"], values["memory_id"], float(values["score"]), values["label"]))
    return out.getvalue(), good, bad


@FILES
@given(label_csv_files())
def test_label_csv_keeps_good_rows_and_names_every_bad_line(case):
    text, good, bad = case
    result = parse_label_text(text, source="labels.csv")
    assert [(r.line, r.message_id, r.memory_id, r.score, r.label) for r in result.rows] == good
    assert {issue.line for issue in result.issues if issue.skipped} == set(bad)
    for line, field in bad.items():
        assert field in {issue.field for issue in result.issues if issue.line == line}


def test_a_label_csv_without_score_and_label_columns_is_refused_with_what_it_found():
    with pytest.raises(LabelFileError) as refused:
        parse_label_text("message_id,memory_id,relevance\nm1,a,1\n", source="qrels.csv")
    assert str(refused.value) == (
        "qrels.csv: the CSV header (line 1) must name the columns 'score' and 'label' "
        "(missing 'score', 'label'; found 'message_id', 'memory_id', 'relevance')"
    )


# ------------------------------------------------------------------ retrieval logs (JSONL)


@st.composite
def log_jsonl_files(draw):
    """(bytes, good rows, {bad line: field}, duplicates)."""
    lines: list[str] = []
    good: list[tuple] = []
    bad, duplicates = {}, 0
    for i in range(draw(st.integers(0, 20))):
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "  "])))
            continue
        number = len(lines) + 1
        kind = draw(
            st.sampled_from(
                ["good", "good", "good", "duplicate", "truncated", "not_object", "two_objects", "id_missing", "id_blank",
                 "id_wrong_type", "rank_missing", "rank_below_one", "rank_fraction", "rank_text", "score_missing",
                 "score_text", "score_bool", "score_not_finite", "timestamp_bad", "user_wrong_type"]
            )
        )  # fmt: skip
        if kind == "duplicate" and good:
            _, message, memory, rank, score = draw(st.sampled_from(good))
            lines.append(json.dumps({"message_id": message, "memory_id": memory, "rank": rank, "score": score}))
            duplicates += 1
            continue
        obj = {
            "message_id": draw(ANY_TEXT.filter(str.strip)) + f"#{i}",
            "memory_id": draw(ANY_TEXT.filter(str.strip)),
            "rank": draw(st.integers(1, 1000)),
            "score": draw(FINITE),
        }
        if draw(st.booleans()):
            # a query about traces names OTLP's key: the log is still a log (format by structure)
            obj["query"] = draw(st.one_of(ANY_TEXT, st.sampled_from(["resourceSpans", "what are resourceSpans?"])))
        if draw(st.integers(0, 9)) == 0:
            obj["resourceSpans"] = draw(st.sampled_from([[], [{"scopeSpans": []}], "x"]))
        field = None
        if kind == "truncated":
            field = "(line)"
        elif kind == "not_object":
            obj, field = draw(st.one_of(st.lists(st.integers(), max_size=3), st.integers(), st.just(None))), "(line)"
        elif kind == "id_missing":
            field = draw(st.sampled_from(["message_id", "memory_id"]))
            del obj[field]
        elif kind == "id_blank":
            field = draw(st.sampled_from(["message_id", "memory_id"]))
            obj[field] = draw(st.sampled_from(["", " ", "\t"]))
        elif kind == "id_wrong_type":
            field = draw(st.sampled_from(["message_id", "memory_id"]))
            obj[field] = draw(st.one_of(WRONG_TYPE, st.integers(), FINITE))
        elif kind == "rank_missing":
            del obj["rank"]
            field = "rank"
        elif kind == "rank_below_one":
            obj["rank"], field = draw(st.integers(-5, 0)), "rank"
        elif kind == "rank_fraction":
            obj["rank"], field = draw(st.floats(1.01, 99.9).filter(lambda x: x != int(x))), "rank"
        elif kind == "rank_text":
            obj["rank"], field = draw(st.sampled_from(["two", "1", ""])), "rank"
        elif kind == "score_missing":
            # a memory the store returned with no score: imported, its score missing
            # (the agent's log writes it so), never a bad row
            del obj["score"]
        elif kind == "score_text":
            obj["score"], field = str(obj["score"]), "score"
        elif kind == "score_bool":
            obj["score"], field = draw(st.booleans()), "score"
        elif kind == "score_not_finite":
            obj["score"], field = draw(NOT_FINITE), "score"
        elif kind == "timestamp_bad":
            obj["timestamp"], field = draw(st.sampled_from(["yesterday", "2026-13-01", "12/01/2026 10:00"])), "timestamp"
        elif kind == "user_wrong_type":
            obj["user_id"], field = draw(st.one_of(st.integers(), WRONG_TYPE)), "user_id"
        elif kind == "two_objects":
            field = "(line)"
        text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
        if kind == "two_objects":  # two rows glued on one line: neither is taken
            text += draw(st.sampled_from(["", " ", " null", " 1", " []"])) + (text if text.endswith("}") else "")
        lines.append(text[:-1] if kind == "truncated" else text)
        if field:
            bad[number] = field
        else:
            good.append((number, obj["message_id"], obj["memory_id"], obj["rank"], obj.get("score")))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines).encode("utf-8"), good, bad, duplicates


@FILES
@given(log_jsonl_files())
def test_log_jsonl_keeps_good_rows_and_names_every_bad_line(case):
    data, good, bad, duplicates = case
    result = read_log_bytes(data, "week.jsonl")
    rows = result.rows
    scores = [None if math.isnan(score) else score for score in rows["score"]]  # no score: NaN in the frame
    assert list(zip(rows["line"], rows["message_id"], rows["memory_id"], rows["rank"], scores, strict=True)) == good
    assert {issue.line for issue in result.issues} == set(bad)
    for line, field in bad.items():
        assert field in {issue.field for issue in result.issues if issue.line == line}, result.issue_lines()
    assert all(str(issue).startswith(f"week.jsonl: line {issue.line}, field ") for issue in result.issues)
    assert result.duplicates == duplicates
    assert result.bad_rows == len(bad)
    assert result.rows_read == len(good) + len(bad) + duplicates


@FILES
@given(st.lists(st.one_of(st.binary(max_size=30), st.sampled_from([f.encode() for f in JSON_FRAGMENTS])), max_size=25))
def test_any_bytes_as_a_log_never_crash_and_every_line_is_counted(pieces):
    data = b"\n".join(pieces)
    result = read_log_bytes(data, "odd.jsonl")
    # a byte-order mark at the start is an editor's signature, not content
    nonblank = [line for line in data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if line.strip()]
    assert len(result.rows) + result.bad_rows + result.duplicates == result.rows_read == len(nonblank)
    assert set(result.rows["line"]).isdisjoint(issue.line for issue in result.issues)


# ------------------------------------------------------------------ retrieval logs (CSV)


@st.composite
def log_csv_files(draw):
    columns = draw(st.permutations(["message_id", "memory_id", "rank", "score", "user_id", "timestamp"]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(columns)
    line, good, bad = 1, [], {}
    for i in range(draw(st.integers(0, 15))):
        line += 1
        values = {
            "message_id": draw(CSV_ID) + f"#{i}",
            "memory_id": draw(CSV_ID),
            "rank": str(draw(st.integers(1, 1000))),
            "score": repr(draw(FINITE)),
            "user_id": draw(st.sampled_from(["sam", "שרה", "", "=cmd|' /C calc'!A0"])),
            "timestamp": draw(st.sampled_from(["", "2026-01-05T09:00:00Z", "2026-01-05 09:00:00+02:00"])),
        }
        kind = draw(st.sampled_from(["good", "good", "id_blank", "rank_text", "rank_zero", "score_text", "score_not_finite", "timestamp_bad", "extra_cells"]))
        field = None
        if kind == "id_blank":
            field = draw(st.sampled_from(["message_id", "memory_id"]))
            values[field] = ""
        elif kind == "rank_text":
            values["rank"], field = draw(st.sampled_from(["two", "1.5", "#1"])), "rank"
        elif kind == "rank_zero":
            values["rank"], field = "0", "rank"
        elif kind == "score_text":
            values["score"], field = draw(st.sampled_from(["high", "0,5", "-"])), "score"
        elif kind == "score_not_finite":
            values["score"], field = draw(st.sampled_from(["nan", "inf", "-inf"])), "score"
        elif kind == "timestamp_bad":
            values["timestamp"], field = "last tuesday", "timestamp"
        cells = [values[c] for c in columns]
        if kind == "extra_cells":
            cells.append("surplus")
            field = "(line)"
        writer.writerow(cells)
        if field:
            bad[line] = field
        else:
            good.append((line, values["message_id"], values["memory_id"], int(values["rank"]), float(values["score"])))
    return out.getvalue().encode("utf-8"), good, bad


@FILES
@given(log_csv_files())
def test_log_csv_keeps_good_rows_and_names_every_bad_line(case):
    data, good, bad = case
    result = read_log_bytes(data, "week.csv")
    rows = result.rows
    assert list(zip(rows["line"], rows["message_id"], rows["memory_id"], rows["rank"], rows["score"], strict=True)) == good
    assert {issue.line for issue in result.issues} == set(bad)
    for line, field in bad.items():
        assert field in {issue.field for issue in result.issues if issue.line == line}, result.issue_lines()


def test_a_log_without_its_required_columns_is_refused_with_what_it_found():
    with pytest.raises(LogFormatError) as refused:
        read_log_bytes(b"message,memory,position,similarity\nm1,a,1,0.5\n", "export.csv")
    message = str(refused.value)
    assert message.startswith("export.csv: missing column(s) message_id, memory_id, rank, score")
    assert message.endswith("(found: message, memory, position, similarity)")


# ------------------------------------------------------------------ exports


FORMULAS = ["=1+1", "+SUM(A1:A9)", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("http://evil.example","x")']


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("formula", FORMULAS)
def test_csv_export_quotes_every_cell_a_spreadsheet_would_run(tmp_path, formula):
    db = AppDatabase(tmp_path / "labels.sqlite")
    db.labels.save(
        message_id=formula, memory_id=formula, label="relevant", reviewer=formula, store=formula,
        rank=1, score=-0.25, query_text=formula, memory_text=formula,
    )  # fmt: skip
    [row] = csv_rows(export.to_csv(db.labels.find(), include_text=True))
    for name in ("message_id", "memory_id", "reviewer", "store", "query_text", "memory_text"):
        assert row[name] == "'" + formula  # shown as text by Excel, LibreOffice and Sheets
    assert row["score"] == "-0.25"  # a number stays a number, its minus sign included
    # JSONL is data, not a sheet: the values go out as they are.
    [obj] = [json.loads(line) for line in export.to_jsonl(db.labels.find(), include_text=True).splitlines()]
    assert obj["memory_id"] == formula and obj["score"] == -0.25


@FILES
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20))
def test_no_exported_csv_cell_starts_a_formula(value):
    cell = export.neutralise_cell(value)
    assert not str(cell).startswith(export.FORMULA_PREFIXES)
    assert cell == value or cell == "'" + value


UNICODE = {
    "hebrew": "המשתמש גר בתל אביב",
    "arabic": "يسكن المستخدم في القاهرة ١٢٣",
    "bidi controls": "abc\u202edcba\u202c\u2066x\u2069",
    "emoji sequences": "👩\u200d💻 🇵🇹 👍🏽",
    "combining marks": "cafe\u0301 n\u0303 Å",
    "cjk": "用户住在里斯本",
    "line separators": "one\u2028two\u2029three\x85four",
    "quotes and commas": 'say "hi", then \'bye\'; a,b',
    "newlines": "first line\r\nsecond\nthird",
}


@pytest.mark.parametrize("name", list(UNICODE))
def test_unicode_and_rtl_text_survive_label_store_and_both_exports(tmp_path, name):
    text = UNICODE[name]
    db = AppDatabase(tmp_path / "labels.sqlite")
    db.labels.save(
        message_id=f"live-{text}", memory_id=text, label="not_relevant", reviewer=f"רביעי {text}",
        store="embedded:1234", rank=2, score=0.31, query_text=text, memory_text=text,
    )  # fmt: skip
    reopened = AppDatabase(tmp_path / "labels.sqlite").labels.find()  # from disk, not from memory
    [obj] = [json.loads(line) for line in export.to_jsonl(reopened, include_text=True).split("\n") if line]
    assert (obj["message_id"], obj["memory_id"], obj["reviewer"]) == (f"live-{text}", text, f"רביעי {text}")
    assert obj["memory_text"] == text and obj["query_text"] == text
    [row] = csv_rows(export.to_csv(reopened, include_text=True))
    assert (row["memory_id"], row["memory_text"], row["reviewer"]) == (text, text, f"רביעי {text}")
    # Without the opt-in, neither text leaves the store, whatever script it is in.
    plain = export.to_jsonl(reopened)
    assert set(json.loads(plain)) == set(EXPORT_FIELDS)


@FILES
@given(memory_id=ANY_TEXT, memory_text=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40))
def test_any_text_round_trips_through_the_label_store_and_exports(tmp_path_factory, memory_id, memory_text):
    db = AppDatabase(tmp_path_factory.mktemp("labels") / "labels.sqlite")
    db.labels.save(
        message_id="m1", memory_id=memory_id, label="relevant", reviewer="r", store="s",
        rank=1, score=0.5, memory_text=memory_text,
    )  # fmt: skip
    labels = db.labels.find()
    [obj] = [json.loads(line) for line in export.to_jsonl(labels, include_text=True).split("\n") if line]
    assert obj["memory_id"] == memory_id and obj["memory_text"] == memory_text
    [row] = csv_rows(export.to_csv(labels, include_text=True))
    assert row["memory_id"] == export.neutralise_cell(memory_id)
    assert row["memory_text"] == export.neutralise_cell(memory_text)
    # memlens's own reader takes its own export back, ids un-quoted.
    [read] = parse_label_text(export.to_jsonl(labels), source="export.jsonl").rows
    assert read.memory_id == memory_id
