"""`memlens monitor` (and the other commands' shared output) against hostile input:
a year-9999 row, floors that are not finite numbers, floor configs that are huge,
deep, not regular files or carry impossible dates, a moved webhook, terminal escapes
and connection strings in messages. Each ends in a message and exit 2 (or a named
bad row), never a traceback or a hang."""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hostile_server import HostileServer

from dashboard.cli.main import main

ESC = "\x1b"


def _rows(turns: int = 30) -> list[dict]:
    return [
        {"message_id": f"t{t}", "memory_id": f"m{r}", "rank": r + 1, "score": 0.6 - 0.1 * r,
         "timestamp": f"2026-01-{1 + t % 14:02d}T10:00:00Z"}
        for t in range(turns) for r in range(3)
    ]


@pytest.fixture
def year_9999(tmp_path):
    rows = _rows()
    rows.append({"message_id": "late", "memory_id": "m0", "rank": 1, "score": 0.5, "timestamp": "9999-12-31T23:59:59Z"})
    jsonl = tmp_path / "late.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    parquet = tmp_path / "late.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    return jsonl, parquet, len(rows)


def test_a_row_stamped_year_9999_is_a_named_bad_row_not_a_traceback(year_9999, capsys):
    for path in year_9999[:2]:
        assert main(["monitor", str(path), "--floor", "0.35"]) == 0
        err = capsys.readouterr().err
        assert f"{path.name}: line {year_9999[2]}, field 'timestamp': outside 1970-2200" in err
        assert "Traceback" not in err


@pytest.mark.parametrize("floor", ["nan", "inf", "-inf", "1" * 400, "1" * 5000])
def test_a_floor_that_is_not_a_finite_number_exits_2(year_9999, floor, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["monitor", str(year_9999[0]), "--floor", floor])
    assert stopped.value.code == 2
    assert "argument --floor" in capsys.readouterr().err


FLOOR_CONFIGS = {
    "400-digit floor": '{"floor": ' + "1" * 400 + "}",
    "5,000-digit floor": '{"floor": ' + "1" * 5000 + "}",
    "100,000 brackets": "[" * 100_000 + "]" * 100_000,
    "NaN floor": '{"floor": NaN}',
    "NaT date": '{"floor": 0.3, "date_range": {"from": "NaT", "to": "2026-01-02"}}',
    "year 9999 date": '{"floor": 0.3, "date_range": {"from": "2026-01-01", "to": "9999-12-31T23:59:59"}}',
    "huge date number": '{"floor": 0.3, "date_range": {"from": "2026-01-01", "to": ' + "9" * 300 + "}}",
}

# What each one is told after the file's name (a long value is cut short between the
# parts): the field, or why the JSON is not read.
FLOOR_CONFIG_ERRORS = {
    "400-digit floor": (": field 'floor': 1111111111", " is not a finite number"),
    "5,000-digit floor": (": not usable JSON: ",),  # more digits than Python reads as an integer
    "100,000 brackets": (": JSON nested deeper than 100 levels; memlens does not read it",),
    "NaN floor": (": NaN is not a number JSON allows; write a finite number",),
    "NaT date": (": field 'date_range.from': 'NaT' is not an ISO 8601 date-time",),
    "year 9999 date": (": field 'date_range.to': '9999-12-31T23:59:59' is outside 1970-2200",),
    "huge date number": (": field 'date_range.to': 9999999999", " is not an ISO 8601 date-time"),
}


@pytest.mark.parametrize("case", list(FLOOR_CONFIGS))
def test_an_unusable_floor_config_exits_2_naming_the_file_and_field(year_9999, tmp_path, case, capsys):
    config = tmp_path / "floor.json"
    config.write_text(FLOOR_CONFIGS[case])
    assert main(["monitor", str(year_9999[0]), "--floor-config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens monitor: {config}") and "Traceback" not in err
    assert all(part in err for part in FLOOR_CONFIG_ERRORS[case]), err


def test_a_floor_config_that_is_not_a_regular_file_is_refused_before_reading(year_9999, tmp_path, capsys):
    fifo = tmp_path / "floor.fifo"
    os.mkfifo(fifo)  # opening it to read would wait for a writer forever
    for path, kind in ((fifo, "a named pipe (FIFO)"), ("/dev/zero", "a character device"), (tmp_path, "a folder")):
        assert main(["monitor", str(year_9999[0]), "--floor-config", str(path)]) == 2
        assert f"{path}: is {kind}, not a regular file" in capsys.readouterr().err


def test_a_log_name_with_terminal_escapes_is_printed_escaped(tmp_path, capsys):
    name = tmp_path / f"x{ESC}]0;pwned\x07{ESC}[31m.jsonl"
    assert main(["monitor", str(name), "--floor", "0.3"]) == 2
    err = capsys.readouterr().err
    assert ESC not in err and "\x07" not in err
    assert "\\x1b]0;pwned\\x07\\x1b[31m.jsonl" in err


def test_calibrate_on_a_connection_string_does_not_print_its_password(capsys):
    assert main(["calibrate", "postgresql://memlens:teampw@127.0.0.1:1/labels"]) == 2
    err = capsys.readouterr().err
    assert "teampw" not in err and re.search(r"postgresql:/+memlens:\*\*\*@127\.0\.0\.1", err)


@pytest.fixture(scope="module")
def alerting(tmp_path_factory):
    from dashboard.monitoring.synthetic import synthetic_log, write_daily

    folder = tmp_path_factory.mktemp("days")
    write_daily(synthetic_log(14, 400, seed=11, k=2, under_floor_day=10), folder)
    return folder


def test_a_webhook_that_answers_3xx_is_not_reported_as_posted(alerting, capsys):
    with HostileServer(mode="redirect", status=302, location="https://hooks.moved.example/T0/new") as server:
        assert main(["monitor", str(alerting), "--floor", "0.35", "--webhook", server.url() + "/hooks/s3cr3t"]) == 0
    err = capsys.readouterr().err
    assert "posted" not in err
    assert "webhook: the webhook answered 302, moving it to hooks.moved.example" in err
    assert "s3cr3t" not in err
