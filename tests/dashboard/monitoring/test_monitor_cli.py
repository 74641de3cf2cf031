"""`memlens monitor`: exit codes for cron and CI, the alert lines, JSON output, and the
webhook against a real HTTP server on loopback (its URL never in the output)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dashboard.cli.main import main
from dashboard.monitoring.synthetic import synthetic_log, write_daily
from dashboard.monitoring.webhook import WEBHOOK_ENV

SECRET_PATH = "/hooks/T000/B000/s3cr3t-t0ken"


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("days")
    write_daily(synthetic_log(14, 400, seed=11, k=2, under_floor_day=10), folder)
    return folder


@pytest.fixture(scope="module")
def quiet_days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quiet")
    write_daily(synthetic_log(14, 400, seed=12, k=2), folder)
    return folder


class Hook:
    def __init__(self, status: int = 200):
        self.status = status
        self.posts: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.posts.append({"path": self.path, "type": self.headers["Content-Type"], "json": json.loads(body)})
                self.send_response(hook.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{SECRET_PATH}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook():
    server = Hook()
    yield server
    server.close()


def test_no_alert_exits_0_and_says_so(quiet_days, capsys):
    assert main(["monitor", str(quiet_days), "--floor", "0.35", "--fail-on-alert"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "floor 0.35, 1d windows, 14 window(s) from 14 file(s)"
    assert out[1].startswith("baseline: the first 7 window(s) (2026-01-01..2026-01-07): 2,800 turns, no memory ")
    assert out[-1] == "no alert: 7 window(s) tested against the baseline"


def test_the_baseline_line_names_the_windows_the_log_has(tmp_path, capsys):
    # before: "baseline: the first 7 window(s) (2026-01-01..2026-01-01)" for a log of one window
    write_daily(synthetic_log(1, 60, seed=13, k=2), tmp_path)
    assert main(["monitor", str(tmp_path), "--floor", "0.35"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("baseline: the log's only 1 window(s), fewer than the 7 asked for (2026-01-01): 60 turns")
    assert out[-1] == "no alert: 0 window(s) tested against the baseline (every window is in the baseline)"


def test_small_windows_are_one_note_and_the_closing_line_says_why_none_was_tested(quiet_days, capsys):
    # 400 turns a day under --min-turns 500: before, 7 notes and "no alert: 0 window(s) tested against the baseline"
    assert main(["monitor", str(quiet_days), "--floor", "0.35", "--min-turns", "500"]) == 0
    out = capsys.readouterr().out.splitlines()
    notes = [line for line in out if "fewer than 500" in line]
    assert notes == [
        "note: 7 window(s) from 2026-01-08 to 2026-01-14 have 400 turn(s) each, fewer than 500: the no-memory share and "
        "top-1 drift are not tested there (a lower --min-turns or a wider window tests them)"
    ]
    assert out[-1] == "no alert: 0 window(s) tested against the baseline (each under 500 turns; --min-turns N to test them)"


def test_an_alert_exits_1_only_with_fail_on_alert(days, capsys):
    assert main(["monitor", f"{days}/*.parquet", "--floor", "0.35"]) == 0
    alerts = [line for line in capsys.readouterr().out.splitlines() if line.startswith("alert:")]
    assert alerts and alerts[0].startswith("alert: 2026-01-11: no-memory share ")
    assert main(["monitor", f"{days}/*.parquet", "--floor", "0.35", "--fail-on-alert"]) == 1


def test_unusable_input_exits_2_naming_what(tmp_path, capsys):
    assert main(["monitor", str(tmp_path / "missing.jsonl"), "--floor", "0.35"]) == 2
    assert "missing.jsonl: no such file" in capsys.readouterr().err
    assert main(["monitor", str(tmp_path / "none-*.jsonl"), "--floor", "0.35"]) == 2
    assert "no file matches" in capsys.readouterr().err
    untimed = tmp_path / "untimed.jsonl"
    untimed.write_text('{"message_id": "m1", "memory_id": "a", "rank": 1, "score": 0.5}\n')
    assert main(["monitor", str(untimed), "--floor", "0.35"]) == 2
    assert "no turn with a timestamp" in capsys.readouterr().err
    config = tmp_path / "floor.json"
    config.write_text('{"floor": "high"}')
    assert main(["monitor", str(untimed), "--floor-config", str(config)]) == 2
    assert f"{config}: field 'floor'" in capsys.readouterr().err


def test_bad_rows_are_named_by_file_line_and_field_and_the_rest_used(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    good = [{"message_id": f"m{i}", "memory_id": "a", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T09:00:00Z"} for i in range(3)]
    log.write_text("".join(json.dumps(r) + "\n" for r in good) + '{"message_id": "m9", "memory_id": "b", "rank": 0, "score": 0.2}\n')
    assert main(["monitor", str(log), "--floor", "0.35"]) == 0
    captured = capsys.readouterr()
    assert f"  {log}: line 4, field 'rank': must be 1 or more (ranks are 1-based)" in captured.err.splitlines()
    assert "1 bad row(s) skipped" in captured.err
    assert "2026-01-01               3" in captured.out


def test_json_output_and_the_floor_config(days, tmp_path, capsys):
    config = tmp_path / "memlens-floor.json"
    config.write_text(json.dumps({"floor": 0.35, "date_range": {"from": "2026-01-03T10:00:00+00:00", "to": "2026-01-06T12:00:00+00:00"}}))
    assert main(["monitor", str(days), "--floor-config", str(config), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["floor"] == 0.35 and report["window"] == "1d"
    assert report["baseline"]["windows"] == ["2026-01-03", "2026-01-04", "2026-01-05", "2026-01-06"]
    assert [a["window"] for a in report["alerts"] if a["figure"] == "no_memory_share"] == ["2026-01-11"]
    window = report["windows"][0]
    assert set(window) >= {"turns", "rows", "no_memory_share", "kept_per_turn", "top1_p10", "top1_p50", "top1_p90", "near_floor_share", "top1_drift"}
    # --baseline-windows overrides the config's dates
    assert main(["monitor", str(days), "--floor-config", str(config), "--baseline-windows", "2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline"]["windows"] == ["2026-01-01", "2026-01-02"]


def test_the_webhook_gets_one_message_with_the_alerts_and_its_url_is_never_printed(days, hook, capsys):
    assert main(["monitor", str(days), "--floor", "0.35", "--webhook", hook.url, "--fail-on-alert"]) == 1
    captured = capsys.readouterr()
    assert len(hook.posts) == 1
    post = hook.posts[0]
    assert post["path"] == SECRET_PATH and post["type"] == "application/json"
    assert post["json"]["text"].startswith("memlens monitor: ")
    assert "alert: 2026-01-11: no-memory share" in post["json"]["text"]
    assert post["json"]["alerts"][0]["figure"] == "no_memory_share" and post["json"]["alerts"][0]["p_value"] < 0.05
    assert "webhook: posted" in captured.err
    assert "s3cr3t" not in captured.out + captured.err and "127.0.0.1" not in captured.out + captured.err


def test_the_webhook_url_from_the_environment(days, hook, capsys, monkeypatch):
    monkeypatch.setenv(WEBHOOK_ENV, hook.url)
    assert main(["monitor", str(days), "--floor", "0.35"]) == 0
    assert len(hook.posts) == 1
    captured = capsys.readouterr()
    assert "s3cr3t" not in captured.out + captured.err


def test_no_alert_no_post(quiet_days, hook, capsys):
    assert main(["monitor", str(quiet_days), "--floor", "0.35", "--webhook", hook.url]) == 0
    assert hook.posts == []


def test_a_failed_post_is_reported_and_does_not_change_the_exit_status(days, capsys):
    refusing = Hook(status=500)
    try:
        assert main(["monitor", str(days), "--floor", "0.35", "--webhook", refusing.url]) == 0
        captured = capsys.readouterr()
        assert "webhook: the webhook refused the post (HTTP 500)" in captured.err
        assert main(["monitor", str(days), "--floor", "0.35", "--webhook", refusing.url, "--fail-on-alert"]) == 1
        capsys.readouterr()
    finally:
        refusing.close()
    # nothing listening there any more
    assert main(["monitor", str(days), "--floor", "0.35", "--webhook", refusing.url]) == 0
    captured = capsys.readouterr()
    assert "webhook: the webhook could not be reached (ConnectError)" in captured.err
    assert "s3cr3t" not in captured.out + captured.err


def test_lines_about_left_out_rows_are_warnings_not_errors(tmp_path, capsys):
    """A command that goes on says so without the error's `memlens COMMAND:` prefix: a
    scheduled job's log then tells what stopped a run from what it only skipped."""
    log = tmp_path / "week.jsonl"
    rows = [{"message_id": f"t{n}", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "2026-12-01T10:00:00Z"} for n in range(3)]
    log.write_text("\n".join(json.dumps(row) for row in rows) + "\n{not json\n", encoding="utf-8")
    assert main(["monitor", str(log), "--floor", "0.35"]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 bad row(s) skipped; the other rows are used" in err
    assert "memlens monitor:" not in err
