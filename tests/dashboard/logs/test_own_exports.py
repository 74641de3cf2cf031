"""`memlens logs check` on memlens's own exports (issue 34): a run's JSONL used to be
"imported 0 rows ... every question a turn with no memory" with exit 0. A run export
and a label export (JSONL and CSV) now exit 2 naming what the file is; a retrieval log
with the same ids is still read as a log."""

from __future__ import annotations

import json

import pytest

from dashboard.cli.main import main
from dashboard.database.model import Label
from dashboard.labels.export import to_csv, to_jsonl
from tests.dashboard.evaluation.test_as_of import judged_file, old_store  # noqa: F401  (a real store and set)


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    return tmp_path


def test_a_run_export_is_named_not_read_as_an_empty_log(old_store, cli_env, capsys):  # noqa: F811
    path, _ = old_store
    assert main(["eval", str(judged_file(cli_env)), "--db", str(path), "--k", "3", "--format", "json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["runs", "export", run_id, "--format", "jsonl"]) == 0
    exported = cli_env / "run.jsonl"
    exported.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["logs", "check", str(exported)]) == 2
    captured = capsys.readouterr()
    assert f"memlens logs check: {exported} is a memlens run export" in captured.err
    assert "imported" not in captured.out


def test_a_label_export_is_named_in_jsonl_and_csv(cli_env, capsys):
    labels = [
        Label(f"turn-{i // 5}", f"m{i}", i % 5 + 1, 0.9 - 0.01 * i, "relevant" if i % 5 == 0 else "not_relevant",
              "ana", "embedded:abc", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00+00:00")
        for i in range(20)
    ]
    for name, text in (("labels.jsonl", to_jsonl(labels)), ("labels.csv", to_csv(labels))):
        exported = cli_env / name
        exported.write_text(text, encoding="utf-8")
        assert main(["logs", "check", str(exported)]) == 2
        assert f"{exported} is a memlens label export" in capsys.readouterr().err


def test_a_retrieval_log_is_still_read(cli_env, capsys):
    log = cli_env / "log.jsonl"
    log.write_text("".join(json.dumps({"message_id": f"t{i // 3}", "memory_id": f"m{i}", "rank": i % 3 + 1,
                                       "score": 0.8 - 0.1 * (i % 3)}) + "\n" for i in range(9)), encoding="utf-8")
    assert main(["logs", "check", str(log)]) == 0
    assert "imported 9 rows in 3 turns" in capsys.readouterr().out
