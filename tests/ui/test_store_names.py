"""Stores by name, and a store's score space in a new browser session (issue 34).

A team runs memlens on a Chroma collection (the operator's MEMLENS_DEFAULT_STORE):
the pages name it "Chroma · support_memories (folder)", not "chroma:1a2b3c4d", while
the fingerprint stays the key labels, sessions and runs carry. Calibrate opened in
a new browser session, where no page opened the store, still names the labels'
score space (Chroma's l2: score = 1 - d/2) in the floor JSON. Real Chroma (a
persistent folder, and a `chroma run` server on a loopback port, each loaded with the
demo memories) and the real label database."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from markdown_text import error_texts, seen
from ports import free_port

from connectors.demo_loader import demo_rows, load_chroma
from connectors.registry import fingerprint
from connectors.vector.chroma import ChromaStore, persistent_client
from dashboard.calibration.label_files import from_labels
from dashboard.calibration.sweep import calibrate
from dashboard.database import AppDatabase

ROOT = Path(__file__).resolve().parents[2]
QUERIES = [json.loads(line) for line in (ROOT / "demo_data" / "queries.jsonl").read_text().splitlines() if line.strip()]
TRUTH = {q["message_id"]: set(q["relevant"]) for q in QUERIES}
COLLECTION = "support_memories"


@pytest.fixture(scope="module")
def chroma_dir(tmp_path_factory):
    rows, _ = demo_rows()
    folder = tmp_path_factory.mktemp("team-chroma")
    load_chroma(persistent_client(folder), COLLECTION, rows, space="l2")  # Chroma's default space
    return folder


@pytest.fixture(scope="module")
def chroma_log(chroma_dir, tmp_path_factory):
    """The team's retrieval log: each demo question asked of the Chroma collection,
    memlens's score per hit, no store named (the session records the sidebar's)."""
    store = ChromaStore(COLLECTION, path=chroma_dir)
    lines = []
    for day, q in enumerate(QUERIES):
        for hit in store.query(q["query"], user_id=q["user_id"], k=5).hits:
            lines.append(json.dumps({"message_id": q["message_id"], "memory_id": hit.memory_id, "rank": hit.rank,
                                     "score": hit.score, "timestamp": f"2026-01-{day % 28 + 1:02d}T10:00:00Z"}))
    path = tmp_path_factory.mktemp("team-log") / "chroma-week.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """A real Chroma server (`chroma run`) on a loopback port, holding the demo memories."""
    import chromadb

    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(tmp_path_factory.mktemp("chroma-server")),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "the Chroma server did not start"
            time.sleep(0.2)
        rows, _ = demo_rows()
        load_chroma(chromadb.HttpClient(host="127.0.0.1", port=port), COLLECTION, rows, space="l2")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def team_on_chroma(chroma_dir, monkeypatch):
    """The operator's settings: every new tab opens on the team's Chroma collection."""
    monkeypatch.setenv("MEMLENS_DEFAULT_STORE", "chroma")
    monkeypatch.setenv("MEMLENS_CHROMA_PATH", str(chroma_dir))
    monkeypatch.setenv("MEMLENS_CHROMA_COLLECTION", COLLECTION)
    monkeypatch.setenv("MEMLENS_REVIEWER", "ana")
    return f"Chroma · {COLLECTION} ({chroma_dir.name})"


def _label_a_session(app, name: str, log: Path):
    """A session drawn on the sidebar's store (Chroma) from the team's log."""
    at = app()
    at.switch_page("label.py").run()
    assert not at.exception, at.exception
    at.radio(key="log_source").set_value("Upload a log file").run()
    at.file_uploader(key="log_upload").set_value((log.name, log.read_bytes(), "application/jsonl")).run()
    at.button(key="log_read").click().run()
    at.text_input(key="session_name").input(name)
    at.selectbox(key="sample_method").select("turns")
    at.number_input(key="sample_size").set_value(6)
    at.button(key="FormSubmitter:session_form-Create session").click().run()
    assert not at.exception, at.exception
    return at


def test_the_pages_name_the_teams_chroma_collection_and_keep_its_fingerprint(app, data_dir, team_on_chroma, chroma_dir, chroma_log):
    named = team_on_chroma
    store_id = fingerprint("chroma", {"path": str(chroma_dir), "collection": COLLECTION})
    at = _label_a_session(app, "chroma week", chroma_log)
    sidebar = [seen(c.value) for c in at.sidebar.caption]
    assert f"{named} · id `{store_id}`" in sidebar  # was: the id alone, nowhere a name
    caption = next(seen(c.value) for c in at.caption if "reviewers:" in seen(c.value))
    assert f"drawn on {named}" in caption and "drawn on store chroma:" not in caption

    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        (session,) = db.sessions.all()
        items = db.sessions.items("chroma week")
    finally:
        db.close()
    assert session.drawn_store == store_id  # the machine key is unchanged

    # The sidebar switched to the embedded demo store: the refusal names both stores.
    at.selectbox(key="store").set_value("embedded").run()
    assert not at.exception, at.exception
    refusal = next(e for e in error_texts(at) if "This session was drawn on" in e)
    assert f"drawn on {named} (id {store_id})" in refusal
    assert "but the sidebar has Embedded · demo data (id embedded:" in refusal
    assert items


def test_calibrate_in_a_new_session_names_the_chroma_labels_score_space(app, data_dir, team_on_chroma, chroma_dir, chroma_log):
    at = _label_a_session(app, "chroma labels", chroma_log)
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        for item in db.sessions.items("chroma labels"):
            at.button(key="label_relevant" if item.memory_id in TRUTH[item.message_id] else "label_not_relevant").click().run()
            assert not at.exception, at.exception
        made = db.sessions.labels("chroma labels")
    finally:
        db.close()
    assert made and {label.store for label in made} == {fingerprint("chroma", {"path": str(chroma_dir), "collection": COLLECTION})}

    # A new browser session opens Calibrate first: no page opened the Chroma store in it.
    calibrate_page = app()
    calibrate_page.switch_page("calibrate.py").run()
    assert not calibrate_page.exception, calibrate_page.exception
    exported = json.loads(calibrate_page.json[0].value)
    assert exported["score_space"] == {"store": "chroma", "formula": "1 - d/2", "setting": "l2"}  # was null
    assert exported["floor"] == calibrate(from_labels(made).labelled_scores(), resamples=0).recommendation.floor
    assert team_on_chroma in calibrate_page.selectbox(key="calibrate_store").options


def test_a_chroma_run_is_named_in_the_run_list_and_calibrates_in_its_score_space(app, data_dir, team_on_chroma):
    named = team_on_chroma
    quality = app()
    quality.switch_page("quality.py").run()
    quality.number_input(key="eval_k").set_value(5).run()
    quality.button(key="eval_start").click().run()
    assert not quality.exception, quality.exception
    runs = next(d.value for d in quality.dataframe if "store id" in d.value.columns)
    assert runs["store"].tolist() == [named] and runs["store id"].iloc[0].startswith("chroma:")  # was the id only
    assert f" on {named} k=5" in runs["name"].iloc[0]

    at = app()  # a new browser session, where no page opened the Chroma store
    at.switch_page("calibrate.py").run()
    at.radio(key="calibrate_source").set_value("A saved run").run()
    assert not at.exception, at.exception
    assert json.loads(at.json[0].value)["score_space"] == {"store": "chroma", "formula": "1 - d/2", "setting": "l2"}
    said = next(c.value for c in at.caption if c.value.startswith("The hits of run"))
    assert seen(said).startswith(f"The hits of run {runs['name'].iloc[0]}, on {named}, ranked at the run's own time")


def test_a_run_on_a_chroma_server_is_named_by_its_host_and_calibrates_in_its_space(app, data_dir, chroma_server, monkeypatch):
    monkeypatch.setenv("MEMLENS_DEFAULT_STORE", "chroma")
    monkeypatch.setenv("MEMLENS_CHROMA_URL", chroma_server)
    monkeypatch.setenv("MEMLENS_CHROMA_COLLECTION", COLLECTION)
    named = f"Chroma · {COLLECTION} ({chroma_server.removeprefix('http://')})"
    quality = app()
    quality.switch_page("quality.py").run()
    assert not quality.exception, quality.exception
    assert named in [seen(c.value).split(" · id ")[0] for c in quality.sidebar.caption]
    quality.number_input(key="eval_k").set_value(5).run()
    quality.button(key="eval_start").click().run()
    assert not quality.exception, quality.exception
    runs = next(d.value for d in quality.dataframe if "store id" in d.value.columns)
    assert runs["store"].tolist() == [named]

    at = app()  # a new browser session: the server's collection is opened for its space
    at.switch_page("calibrate.py").run()
    at.radio(key="calibrate_source").set_value("A saved run").run()
    assert not at.exception, at.exception
    assert json.loads(at.json[0].value)["score_space"] == {"store": "chroma", "formula": "1 - d/2", "setting": "l2"}
