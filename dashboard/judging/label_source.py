"""Which labels a figure is computed from: people's, one judge's, or people's where a
person labelled the pair and the judge's elsewhere. Pure.

A judge label becomes a binary label the way agreement reads it (relevant at grade
``RELEVANT_GRADE`` or more), with the store's score and rank it was graded at and
the judge's source as its reviewer, so the calibration reads it like a person's
label and every figure still says where a label came from. Its store is the one
`memlens judge` recorded (the store the graded hits came from); a judge label
written before that was recorded takes the store people's labels of the same
message name, and has none when no person labelled the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import NOT_RELEVANT, RELEVANT, Label

PEOPLE = "people"
JUDGE = "judge"
PEOPLE_ELSE_JUDGE = "people_else_judge"
RULES = (PEOPLE, JUDGE, PEOPLE_ELSE_JUDGE)


@dataclass
class MergedLabels:
    labels: list[Label]
    from_people: int
    from_judge: int

    @property
    def uses_judge(self) -> bool:
        return self.from_judge > 0


def judge_as_label(judgment: JudgeLabel, store: str = "") -> Label:
    """A judge's grade as a binary label whose reviewer is the judge's source."""
    return Label(
        message_id=judgment.message_id,
        memory_id=judgment.memory_id,
        rank=judgment.rank,
        score=judgment.store_score,
        label=RELEVANT if judgment.relevant else NOT_RELEVANT,
        reviewer=judgment.source,
        store=store,
        created_at=judgment.created_at,
        updated_at=judgment.created_at,
    )


def merge_labels(
    people: Iterable[Label],
    judgments: Iterable[JudgeLabel],
    rule: str,
    source: str | None = None,
    *,
    stores: dict[str, str] | None = None,
    store: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> MergedLabels:
    """The labels `rule` picks. `people` are already filtered as the page asks;
    `judgments` are those of `source` (others are ignored). `stores` maps a message
    id to the store people's labels name for it, for judge labels that recorded none; `store`, `since` and `until`
    filter the judge labels as the people's were (by store and by the ISO time
    they were written, `until` exclusive)."""
    if rule not in RULES:
        raise ValueError(f"the label source must be one of {', '.join(RULES)}, got {rule!r}")
    people = list(people)
    if rule == PEOPLE:
        return MergedLabels(people, len(people), 0)
    if source is None:
        raise ValueError(f"the label source {rule!r} needs a judge")
    stores = stores or {}
    judged: list[Label] = []
    for judgment in judgments:
        if judgment.source != source:
            continue
        label = judge_as_label(judgment, judgment.store or stores.get(judgment.message_id, ""))
        if store is not None and label.store != store:
            continue
        if (since and label.updated_at < since) or (until and label.updated_at >= until):
            continue
        judged.append(label)
    if rule == JUDGE:
        return MergedLabels(judged, 0, len(judged))
    by_people = {(label.message_id, label.memory_id) for label in people}
    fill = [label for label in judged if (label.message_id, label.memory_id) not in by_people]
    return MergedLabels(people + fill, len(people), len(fill))
