"""The "Label source" choice Calibrate and Quality share (people, a judge, or people
where present else the judge) and the judge's agreement with people shown beside
any figure computed from judge labels. The rule itself is
dashboard/judging/label_source.py."""

from __future__ import annotations

import hashlib

import streamlit as st

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import Label, LabelStoreError
from dashboard.display import code_span, inert_markdown
from dashboard.judging.judge_agreement import JudgeAgreement, judge_agreement
from dashboard.judging.label_source import JUDGE, PEOPLE, PEOPLE_ELSE_JUDGE

LABEL_PEOPLE = "People"
LABEL_PEOPLE_ELSE_JUDGE = "People, else the judge"


def label_rule(sources: list[str], key: str, judge_key: str) -> tuple[str, str | None]:
    """The "Label source" radio (`key`): people, one judge, or people where present
    else a judge (picked beside it, `judge_key`). Without judge labels, no choice."""
    if not sources:
        return PEOPLE, None
    cols = st.columns([2, 1])
    choice = cols[0].radio(
        "Label source",
        [LABEL_PEOPLE, *sources, LABEL_PEOPLE_ELSE_JUDGE],
        key=key,
        horizontal=True,
        help="A judge's grade counts as relevant at 2 or more. Judge labels carry no reviewer; "
        "their store is the one the judged memories were read from.",
    )
    if choice == LABEL_PEOPLE:
        return PEOPLE, None
    if choice == LABEL_PEOPLE_ELSE_JUDGE:
        judge = cols[1].selectbox("Judge for pairs no person labelled", sources, key=judge_key)
        return PEOPLE_ELSE_JUDGE, judge
    return JUDGE, choice


def agreement(
    people: list[Label], judgments: list[JudgeLabel], source: str, resolved: list[Label] | None = None
) -> JudgeAgreement:
    """judge_agreement, computed again only when the labels change (its bootstrap
    is not free, and a page reruns on every control). `resolved`: the people's
    labels one per pair by the one rule (adjudications applied), for the overall figure."""
    digest = hashlib.sha1(source.encode())
    for row in [*people, *(resolved or [])]:
        digest.update(f"{row.message_id}\x1f{row.memory_id}\x1f{row.reviewer}\x1f{row.label}\x1e".encode())
    for j in judgments:
        digest.update(f"{j.message_id}\x1f{j.memory_id}\x1f{j.source}\x1f{j.grade}\x1e".encode())
    memo: dict[str, JudgeAgreement] = st.session_state.setdefault("_judge_agreement_memo", {})
    key = digest.hexdigest()
    if key not in memo:
        if len(memo) > 8:  # two pages, a few judges: keep it small
            memo.clear()
        memo[key] = judge_agreement(people, judgments, source, resolved=resolved)
    return memo[key]


def show_agreement(found: JudgeAgreement, used: int) -> None:
    """How far the judge agrees with people, or plainly that nothing is labelled by
    both yet; `used` is how many of the figures' labels came from the judge."""
    if not found.count:
        st.warning(
            f"{used:,} of these labels come from the judge {code_span(found.source)}, and no pair is labelled "
            "by both a person and this judge, so its agreement with people is unknown: label some of the "
            "same pairs on the Label page before trusting these figures."
        )
        return
    st.info(f"{used:,} of these labels come from a judge. {inert_markdown(found.headline())}.", icon="⚖️")
    show_record(found.source)


def show_record(source: str) -> None:
    """The agreement `memlens judge align` recorded for the judge, when there is one,
    and a warning for each problem of its grades (dashboard/judging/run_check.py)."""
    from dashboard.judging.trust import TrustBar, trust_from_summary
    from dashboard.ui.widgets import cache

    try:
        db = cache.app_database()
        record = db.judge_labels.record(source)
        check = trust_from_summary(source, db.judge_labels.summary(source), TrustBar()).check
    except LabelStoreError:
        return  # the figures above stand; the record is an extra
    for warning in check.warnings():
        st.warning(inert_markdown(f"Broken judge? {warning}"))
    if record:
        kappa = record.get("kappa")
        st.caption(inert_markdown(
            f"Recorded by {record.get('measured_by', 'an alignment')}: held-out kappa "
            f"{'undefined' if kappa is None else format(kappa, '.3f')} over {record.get('count')} people's label(s), "
            f"prompt variant {record.get('variant')}."
        ))
