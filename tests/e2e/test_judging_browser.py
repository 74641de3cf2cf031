"""A model in the loop, in headless Chromium: the app served with a chat model
configured (the loopback OpenAI-compatible server of the tests, on 127.0.0.1), the
LLM ranker run on Inspect and its order read beside the store's, and a judge's
suggestions on the Label page accepted with the A key. The README's two pictures
of judging come from here."""

from __future__ import annotations

import json
import re

import pytest
from chat_model_server import ChatModelServer, Reply, formula_ranker
from conftest import checked_page, running_streamlit
from demo_questions import THEME
from playwright.sync_api import expect
from st_browser import ask, choose, grid_rows, grid_with_column, open_app, wait_idle, widget

pytestmark = pytest.mark.e2e

MODEL = "loopback-model"
REVIEWER = "ana-judged"
SESSION = "judged-e2e"
SOURCE = f"judge:umbrela@{MODEL}"
GRADES = {0: "unrelated", 1: "related", 2: "partly answers", 3: "answers"}
STOP = {"the", "does", "what", "which", "who", "where", "when", "how", "user", "user's", "for", "and", "with", "her", "his", "she", "has", "was"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z']+", text.lower()) if w not in STOP and len(w) > 2}


def umbrela_grade(prompt: str) -> tuple[int, str]:
    """A small, predictable judge: the content words the passage shares with the query."""
    query = prompt.split("Query: ", 1)[1].split("\n", 1)[0]
    passage = prompt.split("Passage: ", 1)[1].split("\n", 1)[0]
    shared = sorted({w.rstrip("s") for w in words(query)} & {w.rstrip("s") for w in words(passage)})
    if not shared:
        return 0, "nothing in common with the question"
    return (3 if len(shared) > 1 else 2), f"shares {', '.join(shared)} with the question"


ALIGN_PAIRS = 160  # about half held out: over the default bar of 50 people's labels


def aligned_people(n: int) -> list[dict]:
    """People's labels with their texts, as an export with text holds them: a memory
    sharing the question's words is relevant, one sharing none is not (as people, and
    this judge, see it)."""
    rows = []
    for i in range(n):
        relevant = i % 2 == 0
        rows.append({
            "message_id": f"people-q{i // 4}", "memory_id": f"people-m{i}", "reviewer": "ben",
            "label": "relevant" if relevant else "not_relevant",
            "query_text": f"Which city does the runner {i // 4} train in?",
            "memory_text": f"The runner {i // 4} trains in city number {i}" if relevant else f"Prefers tea number {i}",
        })
    return rows


class Model:
    """Ranks as the documented formula does (tests/chat_model_server.py) and grades
    as umbrela_grade; every answer is kept, so the test knows what the page got."""

    def __init__(self) -> None:
        self.answers: list[dict] = []

    def __call__(self, body) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "Passage: " in prompt:
            grade, reason = umbrela_grade(prompt)
            reply = Reply(content=json.dumps({"grade": grade, "reason": reason}))
        else:
            reply = formula_ranker(body)
        self.answers.append(json.loads(reply.content or "{}"))
        return reply


@pytest.fixture(scope="module")
def model():
    answers = Model()
    with ChatModelServer(answers) as server:
        server.answers = answers
        yield server


@pytest.fixture(scope="module")
def app(tmp_path_factory, model):
    """The app as `make run` serves it, with the loopback model configured."""
    data = tmp_path_factory.mktemp("e2e-model-data")
    settings = {"MEMLENS_LLM_BASE_URL": model.url, "MEMLENS_LLM_MODEL": MODEL}
    with running_streamlit(data, data.parent / "streamlit-model.log", settings) as started:
        yield started


@pytest.fixture
def tab(browser, app):
    with checked_page(browser, app) as page:
        yield page


def picture(page, path, top, bottom) -> None:
    """The part of the page from `top`'s top to `bottom`'s bottom (Streamlit scrolls
    inside its main section, so the window is stretched to the content first)."""
    wait_idle(page)
    viewport = page.viewport_size
    assert viewport is not None
    content = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": int(content) + 40})
    page.wait_for_timeout(500)  # let the grids re-layout to the new size
    first, last = top.bounding_box(), bottom.bounding_box()
    assert first is not None and last is not None
    y = max(0.0, first["y"] - 16)
    page.screenshot(path=str(path), clip={"x": 0, "y": y, "width": viewport["width"], "height": last["y"] + last["height"] + 16 - y})
    page.set_viewport_size(viewport)


def test_the_llm_ranker_shows_the_models_order_beside_the_stores(tab, model, screenshots):
    open_app(tab)
    ask(tab, THEME)
    panel = widget(tab, "llm_ranker")
    panel.scroll_into_view_if_needed()
    # Nothing goes to the model until the box naming its host is ticked.
    consent = widget(tab, "llm_rank_send_text")
    expect(consent).to_contain_text(f"Send this query and the text of these 5 memories to {model.url.removesuffix('/v1')} ({MODEL})")
    expect(widget(tab, "llm_rank_run").get_by_role("button", name="Rank with the model")).to_be_disabled()
    before = len(model.received)
    tab.wait_for_timeout(500)
    assert len(model.received) == before
    consent.locator("label").click()
    wait_idle(tab)
    widget(tab, "llm_rank_run").get_by_role("button", name="Rank with the model").click()
    wait_idle(tab)

    [asked] = [r.body for r in model.received[before:]]
    sent = json.loads(asked["messages"][-1]["content"])
    assert sent["query"] == THEME and len(sent["candidates"]) == 5
    expect(panel.get_by_test_id("stMetric").filter(has_text="Outcome")).to_contain_text("valid")
    expect(panel.get_by_text("The model's ranking passes every check.")).to_be_visible()

    answer = model.answers.answers[-1]
    rows = grid_rows(grid_with_column(tab, "model rank"))
    by_id = {row["memory id"]: row for row in rows}
    # Every candidate is listed with its place in the store's order and in the model's,
    # the table reading in the model's order, each with the status the model gave it.
    assert set(by_id) == {c["entry_id"] for c in sent["candidates"]}
    assert sorted(int(row["store rank"]) for row in rows) == [1, 2, 3, 4, 5]
    assert [row["memory id"] for row in rows] == [e["entry_id"] for e in answer["ranked_results"]]
    assert [int(row["model rank"]) for row in rows] == [1, 2, 3, 4, 5]
    for entry in answer["ranked_results"]:
        status = " + ".join(f for f in ("excluded", "stale") if entry[f]) or "returned"
        assert by_id[entry["entry_id"]]["model status"] == status
    store_order = [c["entry_id"] for c in sent["candidates"]]  # the prompt lists them in the store's order
    assert [int(by_id[i]["store rank"]) for i in store_order] == [1, 2, 3, 4, 5]
    picture(tab, screenshots / "inspect-llm-ranker.png", tab.get_by_role("heading", name="What-if re-ranking"), panel)

    # Asking again with nothing changed is answered from the ranking cache: no request.
    widget(tab, "llm_rank_run").get_by_role("button", name="Rank with the model").click()
    wait_idle(tab)
    expect(widget(tab, "llm_ranker").get_by_text("From the ranking cache")).to_be_visible()
    assert len(model.received) == before + 1


def test_judge_suggestions_show_beside_each_row_and_the_a_key_accepts_one(tab, app, model, screenshots, monkeypatch, capsys):
    from dashboard.cli.main import main
    from dashboard.database import AppDatabase

    open_app(tab, "label")
    widget(tab, "label_reviewer_input").locator("input").fill(REVIEWER)
    tab.get_by_role("button", name="Start labelling").click()
    wait_idle(tab)
    widget(tab, "log_read").locator("button").click()  # the bundled sample log, with its message text
    wait_idle(tab)
    widget(tab, "session_name").locator("input").fill(SESSION)
    choose(tab, "sample_method", "Whole turns: every row of the drawn messages")
    widget(tab, "sample_size").locator("input").fill("2")
    widget(tab, "session_keep_text").locator("label").click()
    tab.get_by_role("button", name="Create session").click()
    wait_idle(tab)
    expect(tab.get_by_text(f"Session '{SESSION}' created")).to_be_visible()

    # A judge grades the session's pairs from the command line, as a team would.
    labels = app.data_dir / "labels.sqlite"
    judge = app.data_dir.parent / "umbrela.toml"
    judge.write_text('name = "umbrela"\nkind = "llm"\n')
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", model.url)
    monkeypatch.setenv("MEMLENS_LLM_MODEL", MODEL)
    command = ["judge", SESSION, "--judge", str(judge), "--db", str(app.data_dir / "demo.sqlite"), "--labels", str(labels), "--send-text"]
    assert main(command) == 0
    assert re.search(rf"{re.escape(SOURCE)}: graded \d+ pair\(s\), 0 failed", capsys.readouterr().out)
    db = AppDatabase(labels)
    try:
        items = db.sessions.items(SESSION)
        judged = {j.memory_id: j for j in db.judge_labels.find(source=SOURCE) if j.message_id == items[0].message_id}
    finally:
        db.close()
    first_turn = [i for i in items if i.message_id == items[0].message_id]
    assert set(judged) == {i.memory_id for i in first_turn}

    tab.reload()  # a new browser session: the name is asked again, the judge labels are on disk
    wait_idle(tab, timeout=120_000)
    widget(tab, "label_reviewer_input").locator("input").fill(REVIEWER)
    tab.get_by_role("button", name="Start labelling").click()
    wait_idle(tab)
    progress = tab.get_by_test_id("stProgress")
    expect(progress).to_contain_text(f"0 of {len(items)} rows done by {REVIEWER}")  # judge labels are not people's
    main_part = tab.get_by_test_id("stMain")
    for item in first_turn:
        j = judged[item.memory_id]
        expect(main_part.get_by_text(f"Suggested by {SOURCE}: grade {j.grade} ({GRADES[j.grade]}), {j.reason}").first).to_be_visible()
    expect(tab.get_by_text("A accept the suggestion")).to_be_visible()
    # No person's label measures this judge yet: its suggestions are hints, Accept is off.
    expect(main_part.get_by_text("are hints only, Accept is off: agreement is measured on 0 people's label(s)").first).to_be_visible()
    expect(widget(tab, "label_accept_suggestion").get_by_role("button")).to_be_disabled()

    # The team aligns the judge on labels people gave elsewhere (an export with text):
    # its held-out agreement is recorded, and the page offers Accept from then on.
    people = app.data_dir.parent / "people.jsonl"
    people.write_text("".join(json.dumps(row) + "\n" for row in aligned_people(ALIGN_PAIRS)))
    assert main(["judge", "align", str(people), "--judge", str(judge), "--labels", str(labels), "--send-text"]) == 0
    report = capsys.readouterr().out
    held_out = int(re.search(r"(\d+) held-out", report).group(1))
    assert held_out >= 50 and "recorded for " + SOURCE in report
    tab.reload()
    wait_idle(tab, timeout=120_000)
    widget(tab, "label_reviewer_input").locator("input").fill(REVIEWER)
    tab.get_by_role("button", name="Start labelling").click()
    wait_idle(tab)
    expect(main_part.get_by_text(f"on {held_out} people's label(s) (memlens judge align, held-out labels)").first).to_be_visible()
    expect(widget(tab, "label_accept_suggestion").get_by_role("button")).to_be_enabled()

    current = first_turn[0]
    tab.evaluate("() => document.activeElement && document.activeElement.blur()")
    tab.keyboard.press("a")
    wait_idle(tab)
    expect(progress).to_contain_text(f"1 of {len(items)} rows done by {REVIEWER}")
    db = AppDatabase(labels)
    try:
        [saved] = db.sessions.labels(SESSION)
    finally:
        db.close()
    expected = "relevant" if judged[current.memory_id].grade >= 2 else "not_relevant"
    assert (saved.memory_id, saved.reviewer, saved.label) == (current.memory_id, REVIEWER, expected)
    top = tab.get_by_test_id("stProgress")
    bottom = tab.get_by_text("Keys: 1 relevant · 2 not relevant · 3 skip · U undo · A accept the suggestion")
    picture(tab, screenshots / "label-suggestions.png", top, bottom)
