"""The Quality page and `memlens eval` on the same store file with the same settings
record the same store fingerprint, so `memlens runs list` shows the two runs match
(issue 20: they were embedded:48481684 and embedded:02cfb803)."""

from __future__ import annotations

from dashboard.cli.main import main
from dashboard.database import open_app_database
from dashboard.judged import DEMO_QUERIES


def test_page_and_cli_give_the_same_settings_the_same_fingerprint(app, data_dir, demo_dir, demo_store, monkeypatch, capsys):
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    # the data dir's demo.sqlite links to the session's shared demo store: the operator allows its folder
    monkeypatch.setenv("MEMLENS_ALLOWED_PATHS", str(demo_dir))
    db = data_dir / "demo.sqlite"
    at = app(cfg_embedded_db_path=str(db))
    at.run()
    at.switch_page("quality.py").run()
    assert not at.error, [e.value for e in at.error]
    at.number_input(key="eval_k").set_value(5).run()
    at.text_input(key="eval_run_name").set_value("page").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    assert any("Run **page** complete" in s.value for s in at.success)

    assert main(["eval", str(DEMO_QUERIES), "--db", str(db), "--k", "5", "--name", "cli", "--format", "json"]) == 0
    runs = {r.name: r for r in open_app_database({"MEMLENS_DATA_DIR": str(data_dir)}).runs.all()}
    assert runs["page"].fingerprint == runs["cli"].fingerprint
    capsys.readouterr()
    assert main(["runs", "list"]) == 0
    listed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len({row[3] for row in listed}) == 1
