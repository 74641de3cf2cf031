"""A labelling session three reviewers disagree on, on known pairs, with a lead's
adjudications: what every surface must count the same (tests/dashboard/labels/
test_team_labels.py, tests/ui/test_team_session_pages.py)."""

from __future__ import annotations

import pytest

from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels import labelling

SESSION = "team"
REVIEWERS = ["ana", "ben", "cy"]
STORE = "embedded:team"


def pairs() -> list[tuple[str, str, float, str]]:
    """24 pairs in 6 turns: (message, memory, score, the truth). Relevant memories
    score higher, with an overlap, so no floor separates them perfectly."""
    rows = []
    scores = [0.82, 0.61, 0.33, 0.12, 0.74, 0.45, 0.38, 0.09, 0.66, 0.52, 0.29, 0.18,
              0.91, 0.41, 0.36, 0.22, 0.57, 0.48, 0.31, 0.05, 0.69, 0.44, 0.27, 0.14]  # fmt: skip
    for i, score in enumerate(scores):
        truth = "relevant" if (score > 0.4) != (i in (5, 6, 14)) else "not_relevant"
        rows.append((f"turn-{i // 4 + 1}", f"mem-{i:02d}", score, truth))
    return rows


def flip(label: str) -> str:
    return "not_relevant" if label == "relevant" else "relevant"


def build_team_session(store) -> dict[tuple[str, str], str]:
    """The session, the reviewers' labels and two adjudications; returns what every
    surface must count: pair -> label."""
    rows = pairs()
    items = [SessionItem(i, m, k, 1 + i % 4, s) for i, (m, k, s, _) in enumerate(rows)]
    session = LabelSession(name=SESSION, method="turns", size=len(items), reviewers=list(REVIEWERS), store=STORE)
    store.sessions.create(session, items)
    session = store.sessions.get(SESSION)
    expected: dict[tuple[str, str], str] = {}
    for i, (message, memory, _, truth) in enumerate(rows):
        item = items[i]
        if i < 12:  # all three label it; cy overrules no one on 2, ben is outvoted on 5
            votes = {"ana": truth, "ben": flip(truth) if i == 5 else truth, "cy": flip(truth) if i == 2 else truth}
        elif i < 20:  # ana and ben only; 13, 16 and 17 are ties
            votes = {"ana": truth, "ben": flip(truth) if i in (13, 16, 17) else truth}
        else:  # cy alone, signed in with a capital: the same reviewer
            votes = {"CY": truth}
        for reviewer, label in votes.items():
            labelling.record(store, session, item, reviewer, label, connected_store=STORE)
        expected[(message, memory)] = truth
    del expected[rows[17][:2]]  # a tie nobody adjudicates: unresolved, left out
    store.adjudications.save(message_id=rows[13][0], memory_id=rows[13][1], label=rows[13][3], adjudicator="lead",
                     note="the memory answers the question", session=SESSION)  # fmt: skip
    # The lead overrules both reviewers' truth on 16: the adjudicated label wins over any vote.
    overruled = flip(rows[16][3])
    store.adjudications.save(message_id=rows[16][0], memory_id=rows[16][1], label=overruled, adjudicator="lead",
                     note="stale memory: no longer true", session=SESSION)  # fmt: skip
    expected[rows[16][:2]] = overruled
    return expected


def mistype(store) -> None:
    """'anna' labels five rows the other way: the Label page refuses her, so these are
    written straight into the label database, as an old version or a script would."""
    session = store.sessions.get(SESSION)
    item = store.sessions.items(SESSION)[0]
    with pytest.raises(labelling.NotAReviewer, match="'anna' is not among this session's reviewers"):
        labelling.record(store, session, item, "anna", "not_relevant", connected_store=STORE)
    for message, memory, score, truth in pairs()[20:] + pairs()[:1]:
        store.labels.save(message_id=message, memory_id=memory, label=flip(truth), reviewer="anna", store=STORE, rank=1, score=score)
