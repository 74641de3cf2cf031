"""The Label page in AppTest: a whole demo session from the keyboard, then calibrated;
undo, missing memories, reviewers, the password gate, a broken log upload; and a
SIGKILL in the middle of a session losing no acknowledged label."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from markdown_text import error_texts, seen

from dashboard.database import AppDatabase
from dashboard.display import inert_markdown
from dashboard.labels import export, sampling
from dashboard.logs.retrieval_log import read_log, read_log_bytes

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dashboard" / "views" / "label.py")
WORKER = Path(__file__).resolve().parent / "label_session_worker.py"
SAMPLE_LOG = ROOT / "demo_data" / "sample_log.jsonl"
ACTION_BUTTONS = {"relevant": "label_relevant", "not_relevant": "label_not_relevant", "skip": "label_skip"}


def labels_db(data_dir):
    return AppDatabase(data_dir / "labels.sqlite")


def make_session(data_dir, name, rows, **options):
    store = labels_db(data_dir)
    try:
        return sampling.save_session(store, name, rows, **options)
    finally:
        store.close()


def judgments() -> dict[str, set[str]]:
    """message_id -> the memory ids the demo queries call relevant."""
    lines = (ROOT / "demo_data" / "queries.jsonl").read_text().splitlines()
    return {q["message_id"]: set(q["relevant"]) for q in map(json.loads, filter(str.strip, lines))}


def press(at, action):
    button = at.button(key=ACTION_BUTTONS[action])
    assert button.proto.shortcut, f"{action} has no keyboard shortcut"
    button.click().run()
    assert not at.exception, at.exception


def memlens_command() -> list[str]:
    script = Path(sys.executable).with_name("memlens")
    return [str(script)] if script.exists() else [sys.executable, "-m", "dashboard.cli.main"]


def test_a_whole_demo_session_from_the_keyboard_then_calibrate(label_page, data_dir, tmp_path):
    at = label_page(label_reviewer="ana")
    at.run()
    # Create the session through the page: the bundled sample log, whole turns.
    at.button(key="log_read").click().run()
    assert "imported 190 rows in 38 turns" in " ".join(at.caption.values)
    at.text_input(key="session_name").input("demo week")
    at.selectbox(key="sample_method").select("turns")
    at.number_input(key="sample_size").set_value(12)
    at.checkbox(key="session_keep_text").check()
    at.button(key="FormSubmitter:session_form-Create session").click().run()
    assert not at.exception
    assert at.session_state["label_session"] == "demo week"

    shortcuts = {key: at.button(key=key).proto.shortcut for key in (*ACTION_BUTTONS.values(), "label_undo")}
    assert len(set(shortcuts.values())) == 4 and not {"r", "c"} & {s.lower() for s in shortcuts.values()}

    truth = judgments()
    questions = {q["message_id"]: q["query"] for q in map(json.loads, (ROOT / "demo_data" / "queries.jsonl").read_text().splitlines())}
    store = labels_db(data_dir)
    items = store.sessions.items("demo week")
    assert len({i.message_id for i in items}) == 12 and len(items) == 60
    for expected, item in enumerate(items):
        # the page's progress and message match the row the next key press labels
        assert at.get("progress")[0].proto.text.startswith(f"{expected} of 60 rows done")
        assert f"> {inert_markdown(questions[item.message_id])}" in [m.value for m in at.markdown]
        assert any(m.value.startswith(f"▶ **#{item.rank}**") for m in at.markdown)
        press(at, "relevant" if item.memory_id in truth[item.message_id] else "not_relevant")
    assert at.get("progress")[0].proto.text.startswith("60 of 60 rows done")
    assert "Every row of this session assigned to you is labelled" in at.success[0].value

    labels = store.sessions.labels("demo week")
    store.close()
    assert len(labels) == 60 and {row.reviewer for row in labels} == {"ana"}
    assert {row.store for row in labels} == {"embedded:68061ffc"}  # the store the log names
    relevant = [row for row in labels if row.label == "relevant"]
    assert 0 < len(relevant) < 60
    exported = tmp_path / "demo-week.jsonl"
    exported.write_text(export.to_jsonl(labels))

    done = subprocess.run(
        [*memlens_command(), "calibrate", str(exported), "--floors", "0.2,0.3,0.4"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    for floor in (0.2, 0.3, 0.4):
        kept_irrelevant = sum(row.label == "not_relevant" and row.score >= floor for row in labels)
        dropped_relevant = sum(row.label == "relevant" and row.score < floor for row in labels)
        assert f"floor {floor:.2f}: keeps {kept_irrelevant} irrelevant, drops {dropped_relevant} relevant" in done.stdout
    assert "MEMORY_SCORE_FLOOR=" in done.stdout


def test_labelling_never_looks_memories_up_again_within_a_turn(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "lookups", log.rows, method="turns", size=2, seed=5)
    at = label_page(label_reviewer="ana", label_session="lookups")
    at.run()
    assert at.session_state["label_lookups"] == 5  # one get() per memory of the first turn
    for _ in range(4):
        press(at, "not_relevant")
    assert at.session_state["label_lookups"] == 5
    press(at, "not_relevant")  # the last row of the turn: the next turn is looked up once
    assert at.session_state["label_lookups"] == 10


def test_undo_takes_back_the_last_label_and_a_skip(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "undo", log.rows, method="turns", size=1, seed=2)
    at = label_page(label_reviewer="ana", label_session="undo")
    at.run()
    assert at.button(key="label_undo").disabled
    press(at, "not_relevant")
    press(at, "skip")
    store = labels_db(data_dir)
    try:
        assert len(store.sessions.labels("undo")) == 1 and len(store.sessions.skips("undo")) == 1
        at.button(key="label_undo").click().run()
        assert store.sessions.skips("undo") == set() and len(store.sessions.labels("undo")) == 1
        at.button(key="label_undo").click().run()
        assert store.sessions.labels("undo") == []
        assert at.get("progress")[0].proto.text.startswith("0 of 5 rows done")
        first = store.sessions.items("undo")[0]
        assert store.labels.history(first.message_id, first.memory_id)[-1]["new_label"] is None
    finally:
        store.close()


def test_a_missing_memory_is_shown_and_can_only_be_not_relevant_or_skipped(label_page, data_dir):
    log = read_log_bytes(
        b'{"message_id": "m1", "memory_id": "sam-01", "rank": 1, "score": 0.4, "user_id": "sam"}\n'
        b'{"message_id": "m1", "memory_id": "sam-gone", "rank": 2, "score": 0.3, "user_id": "sam"}\n',
        "small.jsonl",
    )
    make_session(data_dir, "missing", log.rows, method="uniform", size=2, seed=1)
    at = label_page(label_reviewer="ana", label_session="missing")
    at.run()
    assert any("message text not available" in m.value for m in at.markdown)
    press(at, "relevant")  # sam-01 exists
    warning = " ".join(w.value for w in at.warning)
    assert "Missing: the store no longer has this memory" in warning
    assert at.button(key="label_relevant").disabled
    assert not at.button(key="label_not_relevant").disabled and not at.button(key="label_skip").disabled
    press(at, "not_relevant")
    store = labels_db(data_dir)
    try:
        assert {(row.memory_id, row.label) for row in store.sessions.labels("missing")} == {
            ("sam-01", "relevant"),
            ("sam-gone", "not_relevant"),
        }
    finally:
        store.close()


def test_reviewer_is_asked_once_and_overlap_gives_agreement(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "pair", log.rows, method="turns", size=4, seed=9, reviewers=["ana", "ben"], overlap=1.0)
    at = label_page(label_session="pair")
    at.run()
    assert "label_relevant" not in [b.key for b in at.button]  # no labelling before a name
    at.text_input(key="label_reviewer_input").input("ana")
    at.button(key="FormSubmitter:reviewer_form-Start labelling").click().run()
    assert at.session_state["label_reviewer"] == "ana"
    for _ in range(20):  # every turn is shared (overlap 1): ana labels all 20 rows
        press(at, "relevant")
    at.run()  # a later run does not ask again
    assert "label_reviewer_input" not in [w.key for w in at.text_input]

    ben = label_page(label_reviewer="ben", label_session="pair")
    ben.run()
    for n in range(20):
        press(ben, "relevant" if n % 4 else "not_relevant")
    text = seen(" ".join(ben.caption.values))
    assert "Cohen's kappa" in text and "over 20 row(s)" in text
    assert len(ben.dataframe) >= 1  # the disagreement list
    disagreements = ben.dataframe[-1].value
    assert len(disagreements) == 5 and set(disagreements["ana"]) == {"relevant"}
    assert set(disagreements["ben"]) == {"not_relevant"}

    done = subprocess.run(
        [*memlens_command(), "agreement", "pair"], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "MEMLENS_DATA_DIR": str(data_dir)},
    )
    assert done.returncode == 0, done.stderr
    assert "Cohen's kappa 0.000 over 20 row(s)" in done.stdout
    assert "5 disagreement(s):" in done.stdout and done.stdout.count("ana relevant, ben not_relevant") == 5


def test_the_password_gate_hides_memory_text_until_unlocked(label_page, data_dir, monkeypatch):
    monkeypatch.setenv("MEMLENS_PASSWORD", "pw-Zebra-42")
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "gated", log.rows, method="turns", size=1, seed=3)
    at = label_page(label_reviewer="ana", label_session="gated")
    at.run()
    locked = " ".join(m.value for m in at.markdown)
    assert "label_relevant" not in [b.key for b in at.button] and "Lives in" not in locked
    at.text_input(key="access_password").input("wrong")
    at.button(key="FormSubmitter:access_form-Unlock").click().run()
    assert "Wrong password." in error_texts(at)
    assert "label_relevant" not in [b.key for b in at.button]
    at.text_input(key="access_password").input("pw-Zebra-42")
    at.button(key="FormSubmitter:access_form-Unlock").click().run()
    assert "label_relevant" in [b.key for b in at.button]
    shown = json.dumps([seen(str(e.value)) for e in at.main if hasattr(e, "value")], default=str)
    assert "pw-Zebra-42" not in shown
    assert at.session_state["access_password"] == ""  # what was typed is not kept


def test_a_broken_upload_lists_every_bad_line_and_keeps_the_rest(label_page, data_dir):
    broken = (
        b'{"message_id": "m1", "memory_id": "sam-01", "rank": 1, "score": 0.41}\n'
        b'{"message_id": "m1", "memory_id": "sam-02", "rank": "two", "score": 0.3}\n'
        b"this is not json\n"
        b'{"message_id": "m2", "memory_id": "sam-03", "rank": 1, "score": 0.2}\n'
        b'{"message_id": "m2", "memory_id": "sam-03", "rank": 1, "score": 0.2}\n'
        b'{"memory_id": "sam-04", "rank": 1, "score": 0.2}\n'
    )
    at = label_page(label_reviewer="ana")
    at.run()
    at.radio(key="log_source").set_value("Upload a log file").run()
    at.file_uploader(key="log_upload").set_value(("week.jsonl", broken, "application/jsonl")).run()
    at.button(key="log_read").click().run()
    assert not at.exception
    assert "imported 2 rows in 2 turns from 6 read; 3 bad row(s) skipped; 1 duplicate row(s) merged" in seen(" ".join(
        at.caption.values
    ))
    issues = at.dataframe[0].value
    assert list(zip(issues["line"], issues["field"], strict=True)) == [(2, "rank"), (3, "(line)"), (6, "message_id")]


def test_sigkill_mid_session_loses_no_acknowledged_label(data_dir, demo_store):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "crash", log.rows, method="turns", size=8, seed=4)
    env = {**os.environ, "MEMLENS_DATA_DIR": str(data_dir)}
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), "crash", "ana"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )
    acknowledged: list[list[str]] = []
    try:
        while len(acknowledged) < 17:
            line = worker.stdout.readline()
            assert line.startswith("ACK "), line + worker.stderr.read()[-3000:] if not line else line
            acknowledged.append(line.split()[1:])
        # kill the app process in the middle of the session, mid-press most likely
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == -signal.SIGKILL

    store = labels_db(data_dir)  # a fresh process's view: reopen the file
    try:
        labels = {(row.message_id, row.memory_id): row.label for row in store.sessions.labels("crash", reviewer="ana")}
        skips = {(m, k) for m, k, _ in store.sessions.skips("crash", reviewer="ana")}
    finally:
        store.close()
    for message, memory, action in acknowledged:
        if action == "skip":
            assert (message, memory) in skips
        else:
            assert labels.get((message, memory)) == action
    # the one press that may have been cut off is the only row beyond the acknowledged ones
    assert len(labels) + len(skips) - len(acknowledged) in (0, 1)

    # after a restart, the page resumes where the reviewer was
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.session_state["label_session"] = "crash"
    at.run()
    done = len(labels) + len(skips)
    assert at.get("progress")[0].proto.text.startswith(f"{done} of 40 rows done")


def test_inspect_shows_no_memory_text_without_the_password(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_PASSWORD", "pw-Zebra-42")
    at = app()
    at.run()
    assert not at.exception
    assert "query" not in [w.key for w in at.text_input]  # no search before unlocking
    at.text_input(key="access_password").input("pw-Zebra-42")
    at.button(key="FormSubmitter:access_form-Unlock").click().run()
    assert "query" in [w.key for w in at.text_input]


def test_with_streamlit_authentication_configured_a_sign_in_is_required(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "auth", log.rows, method="turns", size=1, seed=3)
    at = label_page(label_reviewer="ana", label_session="auth")
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32}
    at.run()
    assert not at.exception
    assert "access_login" in [b.key for b in at.button]
    assert "label_relevant" not in [b.key for b in at.button]  # no memory text, no labelling


def test_a_signed_in_user_labels_under_their_own_identity(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "signed", log.rows, method="turns", size=1, seed=3)
    at = label_page(label_session="signed")  # no name typed: the login names the reviewer
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32}
    at.user = {"is_logged_in": True, "email": "ana@example.com"}
    at.run()
    assert "label_reviewer_input" not in [w.key for w in at.text_input]
    press(at, "not_relevant")
    store = labels_db(data_dir)
    try:
        assert [row.reviewer for row in store.sessions.labels("signed")] == ["ana@example.com"]
    finally:
        store.close()


def test_thousands_of_bad_lines_show_a_count_the_first_few_and_a_download_of_all(label_page):
    good = '{{"message_id": "m{n}", "memory_id": "sam-01", "rank": 1, "score": 0.4}}'
    hostile = '{{"message_id": "m{n}", "memory_id": "sam-01", "rank": 1, "score": ' + "[" * 5_000 + "]" * 5_000 + "}}"
    lines = [(hostile if n % 7 == 0 else good).format(n=n) for n in range(1, 7_001)]
    at = label_page(label_reviewer="ana")
    at.run()
    at.radio(key="log_source").set_value("Upload a log file").run()
    at.file_uploader(key="log_upload").set_value(("week.jsonl", "\n".join(lines).encode(), "application/jsonl")).run()
    at.button(key="log_read").click().run()
    assert not at.exception
    assert "1,000 bad row(s) were skipped" in " ".join(at.warning.values)
    shown = at.dataframe[0].value
    assert len(shown) == 200 and shown["line"].tolist()[:2] == [7, 14]
    assert "nested more than 64 levels deep" in shown["problem"].iloc[0]
    assert any("first 200 of 1,000 problems" in c for c in at.caption.values)
    download = at.get("download_button")[0]
    assert download.proto.label == "Download every problem"


def test_a_session_opened_against_another_store_names_both_and_offers_no_labels(label_page, data_dir, tmp_path):
    at = label_page(label_reviewer="ana")
    at.run()
    at.button(key="log_read").click().run()
    at.text_input(key="session_name").input("drawn on demo")
    at.selectbox(key="sample_method").select("turns")
    at.number_input(key="sample_size").set_value(2)
    at.button(key="FormSubmitter:session_form-Create session").click().run()
    assert not at.exception
    store = labels_db(data_dir)
    try:
        session = store.sessions.get("drawn on demo")
    finally:
        store.close()
    assert session is not None and session.drawn_store and session.drawn_store.startswith("embedded:")
    assert at.button(key="label_relevant")  # on its own store the session is labelled as usual

    # The same session with another store configured: an empty embedded file, where
    # every id would read "missing" and invite "not relevant" on real memories.
    other = label_page(label_reviewer="ana", label_session="drawn on demo", cfg_embedded_db_path=str(tmp_path / "other.sqlite"))
    other.run()
    assert not other.exception, other.exception
    [error] = error_texts(other)
    assert session.drawn_store in error and "no labels are offered" in error
    other_fingerprint = next(f for f in re.findall(r"embedded:[0-9a-f]+", error) if f != session.drawn_store)
    assert other_fingerprint != session.drawn_store
    assert not any(b.key in ACTION_BUTTONS.values() for b in other.button)
    assert not any("Missing: the store no longer has this memory" in w.value for w in other.warning)
    assert "label_lookups" not in other.session_state  # nothing was looked up in the wrong store


def test_a_judge_suggestion_shows_on_its_row_and_a_key_accepts_it(label_page, data_dir, monkeypatch):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "suggested", log.rows, method="turns", size=1, seed=2)
    store = labels_db(data_dir)
    first = store.sessions.items("suggested")[0]
    store.judge_labels.save(message_id=first.message_id, memory_id=first.memory_id, source="judge:umbrela@m", grade=3, reason="it answers")
    # The judge agrees with people on four other pairs: over the bar set here (4 labels).
    monkeypatch.setenv("MEMLENS_JUDGE_MIN_LABELS", "4")
    for n, relevant in enumerate((True, False, True, False)):
        store.judge_labels.save(message_id="other", memory_id=f"m{n}", source="judge:umbrela@m", grade=3 if relevant else 0, reason=f"reason {n}")
        store.labels.save(message_id="other", memory_id=f"m{n}", label="relevant" if relevant else "not_relevant", reviewer="ben", store="s")
    store.close()
    at = label_page(label_reviewer="ana", label_session="suggested")
    at.run()
    assert any("judge:umbrela@m" in c.value and "grade **3** (answers), it answers" in c.value for c in at.caption)
    progress = at.get("progress")[0].proto.text
    assert progress.startswith("0 of ")  # a judge label is not a person's
    accept = at.button(key="label_accept_suggestion")
    assert accept.proto.shortcut and not accept.disabled
    accept.click().run()
    assert not at.exception, at.exception
    store = labels_db(data_dir)
    try:
        [saved] = store.sessions.labels("suggested")
    finally:
        store.close()
    assert (saved.memory_id, saved.label, saved.reviewer) == (first.memory_id, "relevant", "ana")
    assert at.get("progress")[0].proto.text.startswith("1 of ")
    assert at.button(key="label_accept_suggestion").disabled  # the next row has no suggestion


def test_turns_can_come_where_the_judge_is_least_sure_and_progress_counts_people_only(label_page, data_dir):
    log = read_log(SAMPLE_LOG)
    make_session(data_dir, "ordered", log.rows, method="turns", size=3, seed=2)
    store = labels_db(data_dir)
    items = store.sessions.items("ordered")
    turns = list(dict.fromkeys(item.message_id for item in items))
    first_turn, last_turn = turns[0], turns[-1]
    for item in items:  # sure about the first turn (grade 3), unsure about the last (grade 2)
        if item.message_id in (first_turn, last_turn):
            grade = 3 if item.message_id == first_turn else 2
            store.judge_labels.save(message_id=item.message_id, memory_id=item.memory_id, source="judge:a@m",
                                grade=grade, reason="r")
    middle = next(i for i in items if i.message_id == turns[1])
    store.judge_labels.save(message_id=middle.message_id, memory_id=middle.memory_id, source="judge:b@m", grade=0, reason="r")
    store.close()
    at = label_page(label_reviewer="ana", label_session="ordered")
    at.run()
    assert not at.exception, at.exception
    order = at.selectbox(key="label_order")
    assert order.value == "Session order"
    assert order.options == [
        "Session order",
        "Where judge:a@m is least sure first",
        "Where judge:b@m is least sure first",
        "Where judge:a@m and judge:b@m disagree first",
    ]
    assert any(first_turn in c.value for c in at.caption if c.value.startswith("message"))

    order.select("Where judge:a@m is least sure first").run()
    assert not at.exception, at.exception
    assert at.subheader[0].value.startswith("Turn 1 of 3")
    assert any(last_turn in c.value for c in at.caption if c.value.startswith("message"))  # the unsure turn first
    assert at.get("progress")[0].proto.text.startswith("0 of ")  # judge labels are not people's
    press(at, "relevant")
    assert at.get("progress")[0].proto.text.startswith("1 of ")
    store = labels_db(data_dir)
    try:
        [saved] = store.sessions.labels("ordered")
    finally:
        store.close()
    assert saved.message_id == last_turn
