"""The Label page for a team, in AppTest: identities that hold (the operator list
behind the password gate, names matched case-insensitively, sessions naming
reviewers by e-mail, a name off the session's list refused) and the lead's
adjudication screen with pairwise agreement."""

from __future__ import annotations

from pathlib import Path

from markdown_text import error_texts, seen
from team_session import SESSION, build_team_session, pairs

from dashboard.database import AppDatabase
from dashboard.labels import sampling
from dashboard.logs.retrieval_log import read_log

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LOG = ROOT / "demo_data" / "sample_log.jsonl"
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32}


def labels_db(data_dir):
    return AppDatabase(data_dir / "labels.sqlite")


def make_session(data_dir, name, reviewers):
    store = labels_db(data_dir)
    try:
        return sampling.save_session(
            store, name, read_log(SAMPLE_LOG).rows, method="turns", size=2, seed=3, reviewers=reviewers, overlap=1.0
        )
    finally:
        store.close()


def give_name(at, name):
    at.text_input(key="label_reviewer_input").input(name)
    at.button(key="FormSubmitter:reviewer_form-Start labelling").click().run()
    assert not at.exception, at.exception


def test_behind_the_password_gate_only_a_name_on_the_operator_list_labels(label_page, data_dir, monkeypatch):
    monkeypatch.setenv("MEMLENS_REVIEWERS", "Ana, ben")
    make_session(data_dir, "listed", ["Ana", "ben"])
    at = label_page(label_session="listed")
    at.run()
    give_name(at, "anna")
    assert any("'anna' is not on this deployment's list of reviewers (MEMLENS_REVIEWERS)" in e for e in error_texts(at))
    assert "label_relevant" not in [b.key for b in at.button]
    give_name(at, "  ANA ")  # the same reviewer, in the list's spelling
    assert at.session_state["label_reviewer"] == "Ana"
    at.button(key="label_relevant").click().run()
    store = labels_db(data_dir)
    try:
        assert {row.reviewer for row in store.sessions.labels("listed")} == {"Ana"}
    finally:
        store.close()


def test_a_session_names_reviewers_by_e_mail_and_refuses_anyone_else(label_page, data_dir):
    make_session(data_dir, "mailed", ["ana@example.test", "ben@example.test"])
    at = label_page(label_session="mailed")
    at.secrets["auth"] = AUTH
    at.user = {"is_logged_in": True, "email": "Ana@Example.test"}  # the provider's spelling
    at.run()
    assert not at.exception and not error_texts(at)
    at.button(key="label_not_relevant").click().run()

    eve = label_page(label_session="mailed")
    eve.secrets["auth"] = AUTH
    eve.user = {"is_logged_in": True, "email": "eve@example.test"}
    eve.run()
    assert any("'eve@example.test' is not among this session's reviewers" in e for e in error_texts(eve))
    assert "label_relevant" not in [b.key for b in eve.button]
    store = labels_db(data_dir)
    try:
        assert [row.reviewer for row in store.sessions.labels("mailed")] == ["Ana@Example.test"]
    finally:
        store.close()


def test_the_lead_adjudicates_a_tie_on_the_page_and_sees_pairwise_agreement(label_page, data_dir):
    store = labels_db(data_dir)
    try:
        expected = build_team_session(store)
    finally:
        store.close()
    [tie] = [p for p in pairs() if p[:2] not in expected]
    at = label_page(label_reviewer="lead", label_session=SESSION)
    at.run()
    assert not at.exception, at.exception
    assert any("'lead' is not among this session's reviewers" in e for e in error_texts(at))  # no labelling...
    # ...but the team's figures and the screen: pairwise, rates, then the disagreements
    pairwise, rates, disputed, history = (frame.value for frame in at.dataframe)
    assert list(pairwise["reviewers"]) == ["ana – ben", "ana – cy", "ben – cy"]
    assert list(rates["reviewer"]) == ["ana", "ben", "cy"] and list(rates["labels"]) == [20, 20, 16]
    assert any("1 unresolved tie(s) left out" in seen(c.value) for c in at.caption)
    assert len(disputed) == 5 and disputed.iloc[0]["counts as"] == "unresolved (tie)"  # ties first

    title = next(o for o in at.selectbox(key="label_adjudicate_pair").options if o.startswith(f"{tie[0]} {tie[1]} "))
    at.selectbox(key="label_adjudicate_pair").select(title).run()
    at.radio(key="label_adjudicate_label").set_value("not_relevant").run()
    at.button(key="label_adjudicate_save").click().run()
    assert any("needs a note" in e for e in error_texts(at))  # no reason, no adjudication
    at.text_input(key="label_adjudicate_note").input("off topic for this turn").run()
    at.button(key="label_adjudicate_save").click().run()
    assert not at.exception, at.exception
    assert any("0 unresolved tie(s) left out" in seen(c.value) for c in at.caption)
    store = labels_db(data_dir)
    try:
        [decided] = [a for a in store.adjudications.find() if (a.message_id, a.memory_id) == tie[:2]]
    finally:
        store.close()
    assert (decided.label, decided.adjudicator, decided.note) == ("not_relevant", "lead", "off topic for this turn")
    assert decided.session == SESSION and decided.created_at
    # label_history, readable on the page: the two fixture adjudications, then this one on top
    assert len(history) == 2 and set(history["reviewer"]) == {"adjudicator:lead"}
    newest = at.dataframe[3].value.iloc[0]
    assert (newest["memory_id"], newest["reviewer"], newest["new_label"]) == (tie[1], "adjudicator:lead", "not_relevant")


def test_a_lead_edits_archives_and_deletes_a_session_from_the_page(label_page, data_dir):
    make_session(data_dir, "week", ["ana", "ben"])
    at = label_page(label_reviewer="ana", label_session="week")
    at.run()
    at.text_input(key="label_manage_reviewers").input("ana, ben, cy@example.test")
    at.button(key="label_manage_save").click().run()
    assert not at.exception, at.exception
    assert any("turn(s) reassigned" in seen(s.value) for s in at.success)
    store = labels_db(data_dir)
    try:
        assert store.sessions.get("week").reviewers == ["ana", "ben", "cy@example.test"]
    finally:
        store.close()

    at.button(key="label_manage_archive").click().run()
    assert not at.exception, at.exception
    assert "label_session" not in [box.key for box in at.selectbox]  # its only session, now hidden
    at.checkbox(key="label_show_archived").check().run()
    assert "week" in at.selectbox(key="label_session").options
    at.selectbox(key="label_session").select("week").run()
    assert at.button(key="label_manage_delete").disabled  # not until the deletion is confirmed
    at.checkbox(key="label_manage_confirm").check().run()
    at.button(key="label_manage_delete").click().run()
    assert not at.exception, at.exception
    store = labels_db(data_dir)
    try:
        assert store.sessions.get("week") is None
    finally:
        store.close()


def test_inspects_reviewer_box_takes_only_a_name_on_the_operator_list(app, monkeypatch):
    monkeypatch.delenv("MEMLENS_REVIEWER", raising=False)
    monkeypatch.setenv("MEMLENS_REVIEWERS", "ana; ben")
    at = app()
    at.run()
    assert not at.exception, at.exception
    at.text_input(key="reviewer").input("anna").run()
    assert any("'anna' is not on this deployment's list of reviewers" in e for e in error_texts(at))
    assert "label_reviewer" not in at.session_state  # no name taken
    assert at.text_input(key="reviewer").value == ""
    at.text_input(key="reviewer").input("BEN").run()
    assert at.session_state["label_reviewer"] == "ben" and not error_texts(at)
