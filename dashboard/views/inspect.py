"""Inspect: one query against one store, every hit against the floor, and labels."""

from __future__ import annotations

import streamlit as st

from dashboard.floor import apply_floor, prompt_block
from dashboard.hit_decisions import decide_hits
from dashboard.ui.pages import inspect as view
from dashboard.ui.pages import inspect_labels as labelling
from dashboard.ui.pages import inspect_panels as panels
from dashboard.ui.widgets import held_controls, session
from dashboard.ui.widgets import reviewer as reviewer_ui
from dashboard.ui.widgets.access import require_access
from dashboard.ui.widgets.errors import show_store_error
from dashboard.ui.widgets.score_notes import show_score_space
from dashboard.ui.widgets.sidebar import default_store, store_picker, user_picker, warm_model

# The modules above are imported before the server answers (ui/widgets/start_up.py),
# so on a cold start the title goes out at once; the panels that bring pandas and the
# judge's HTTP client are imported when the page reaches them (ui/pages/inspect_panels.py).
st.title("Inspect a retrieval")
st.caption("Type the message the agent would query memory with; see what comes back, why, and what survives the floor.")

# A link's first result needs the embedding model of the linked (or default) store.
# Start-up has opened the default store's (ui/widgets/start_up.py); a linked store's, or one
# whose start-up failed, starts opening now, on its own thread, beside the sidebar
# below. Not before the title: started in navigation.py, its imports (numpy,
# onnxruntime) took the GIL from the first run and the title went out about half a
# second later (benchmarks/RESULTS.md, issue 24). Once per process.
warm_model(st.query_params.get("store") or default_store())

require_access()  # the page shows memory text
# A shared link's first run shows its result without the page's controls (their code
# held the result back): their values come from the link, and the next run draws them
# (ui/widgets/held_controls.py).
view.restore_from_url()
choice = store_picker(keep_notes=view.holding_the_rest())
user = user_picker(choice.store)
view.inspect_clock.sidebar(choice)
# Shared widgets (ui/widgets/session.py): what was set here is here again after another page.
k = session.widget(held_controls.drawn(st.sidebar.number_input), "k", 5, "k (results)", min_value=1, max_value=50, step=1)
reviewer = reviewer_ui.sidebar_box()
store_text = session.widget(
    held_controls.drawn(st.sidebar.checkbox),
    "store_text",
    False,
    "Store memory and query text with labels",
    help="Off: labels and exports carry ids and scores only.",
)
# A floor file applied here (its rule that reads the whole turn, or its floor) shows
# what the agent would keep; without one the slider alone decides, as always.
floor_config = view.floor_file(user)
warm_model(choice.name)

with held_controls.section(st.form, "query_form"):
    session.widget(
        held_controls.drawn(st.text_input), "query", "", "Message", placeholder="What is the user's favourite pizza topping?"
    )
    if not view.holding_the_rest():
        st.form_submit_button("Search", type="primary")

if choice.error:
    view.show_the_rest_now()  # the settings to mend it are in the sidebar
    show_store_error(choice.error)
    st.stop()

result = view.current_result(choice, user, int(k))
if result is None:
    view.show_the_rest_now()  # no result to show first: the page, controls and all
view.show_embedding_path(choice)


# A floor move reruns only this fragment: the parts that depend on the floor (the
# summary, the table's status column, the chart, the prompt block, and the store
# feedback planned from kept/dropped). Labels, the rank lookup, the re-rank panel
# and the raw response are not redrawn for it.
@st.fragment
def floor_dependent_parts() -> None:
    floor = view.floor_slider()
    view.sync_url(choice, user, int(k), floor)
    if result is None:
        return
    view.show_notes(result)
    show_score_space(result, floor)
    if floor_config is None:
        kept, dropped = apply_floor(result.hits, floor)
        decided = None
    else:
        decided = decide_hits(result.hits, floor, floor_config.rule)
        kept, dropped = decided.kept, decided.dropped
        view.show_rule(floor_config, floor)
    view.show_summary(result, kept, dropped, floor, decided)
    view.show_hits_table(result, kept, decided)
    if view.holding_the_rest():
        return  # a shared link's first run: the rest follows once the result is painted
    view.show_chart(result, floor, kept, decided)
    view.show_prompt_block(prompt_block(kept, dropped, result.context))
    # Feedback is planned from kept/dropped, so it moves with the floor.
    panels.show_feedback(result, choice, user, kept, dropped)


floor_dependent_parts()
if result is None:
    st.stop()
if view.holding_the_rest():
    view.ask_for_the_rest(result)
    st.stop()

msg = view.current_message_id()  # one id per result: labels and the re-rank export
labelling.show_labelling(result, msg, choice, reviewer, store_text)
panels.show_rank_lookup(result, choice, user)
labelling.show_session_labels(store_text)
panels.show_rerank_panel(result, msg, store_text)
view.show_raw_response(result)
