"""`memlens logs check` on memlens's own exports (issue 34): a run's JSONL used to be
"imported 0 rows ... every question a turn with no memory" with exit 0. A run export
and a label export (JSONL and CSV) now exit 2 naming what the file is; a retrieval log
with the same ids is still read as a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.cli.main import main
from dashboard.database.model import Label
from dashboard.labels.export import to_csv, to_jsonl
from tests.dashboard.evaluation.test_as_of import judged_file, old_store  # noqa: F401  (a real store and set)

ROOT = Path(__file__).resolve().parents[3]


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


# Issue 53: a memories file gave 23,529 lines of field errors, a judged set 1,978 "turns"
# with no timestamp. Every memlens file is named in one line, exit 2, by every log reader.
DEMO = ROOT / "demo_data"


def floor_file(tmp_path) -> Path:
    path = tmp_path / "memlens-floor.json"
    assert main(["calibrate", str(DEMO / "demo_labels.jsonl"), "--floor-config-out", str(path)]) == 0
    return path


@pytest.mark.parametrize("command", [["logs", "check"], ["monitor"]])
@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda tmp: DEMO / "memories.jsonl", "is a memlens memories file (one memory a line: id, user_id, text), not a "
         "retrieval log; give it to `memlens import`"),
        (lambda tmp: DEMO / "queries.jsonl", "is a memlens judged set (one question a line with the memories that answer "
         "it), not a retrieval log; give it to `memlens eval`"),
        (lambda tmp: DEMO / "demo_labels.jsonl", "is a memlens label export"),
        (floor_file, "is a memlens floor file (the floor Calibrate exports), not a retrieval log; give it to "
         "`memlens monitor --floor-config`"),
    ],
    ids=["memories", "judged set", "label export", "floor file"],
)
def test_memlens_files_are_named_in_one_line_by_every_log_reader(cli_env, capsys, command, make, named):
    path = make(cli_env)
    if path.suffix == ".json" and command == ["monitor"]:
        path = path.rename(path.with_suffix(".jsonl"))  # the monitor reads .jsonl; the file is the same
    capsys.readouterr()
    assert main([*command, str(path)]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1, captured.err
    assert captured.err.startswith(f"memlens {' '.join(command)}: {path} {named}")
    assert captured.out == ""


def test_the_readers_name_an_upload_from_its_bytes():
    from dashboard.logs.own_files import OwnFileError
    from dashboard.logs.retrieval_log import read_log_bytes

    with pytest.raises(OwnFileError, match=r"^memories\.jsonl is a memlens memories file .* give it to `memlens import`$"):
        read_log_bytes((DEMO / "memories.jsonl").read_bytes(), "memories.jsonl")


def test_a_log_with_the_memories_ids_is_still_read(cli_env, capsys):
    # a log row always names its turn (message_id): the same ids and a floor are no memories or floor file
    log = cli_env / "log.jsonl"
    log.write_text(json.dumps({"message_id": "t1", "memory_id": "sam-01", "rank": 1, "score": 0.5, "floor": 0.3,
                               "query": "q"}) + "\n", encoding="utf-8")
    assert main(["logs", "check", str(log)]) == 0
