"""What a floor file decides for one result, with a reason per hit: the computation
Inspect runs when a floor file is applied (issue 54).

The agent side decides a turn in dashboard/runtime.py (``memory_from_hits``,
``memory_for_prompt``): hits normalised as the log takes them (ranks 1.. in the
store's order, a score that is not a finite number as none), then the config's rule
on the turn's hits (``turn_rule.kept_mask``), else its floor. ``decide_hits`` takes
the hits the same way and asks ``turn_rule.decide``, which gives the same decisions
with a sentence each, so the page shows what the agent would keep (a parity test
holds the three together). No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from connectors.base import Hit
from dashboard.floor import floor_text, split_kept
from dashboard.logs.writer import normal_hits
from dashboard.turn_rule import LEARNED, Decision, TurnRule, decide


@dataclass(frozen=True)
class HitDecisions:
    """One result's hits under a floor (and a rule): kept and dropped in the store's
    order, and each hit's decision with its reason (in the store's order too)."""

    kept: list[Hit]
    dropped: list[Hit]
    decisions: list[Decision]
    floor: float
    rule: TurnRule | None


def decide_hits(hits: Sequence[Hit], floor: float, rule: TurnRule | None = None) -> HitDecisions:
    """Kept or dropped per hit of one turn, by ``rule`` on the turn's hits (with
    ``floor`` beside a label-free cut; the learned rule reads no floor), else by the
    floor alone, as the agent side decides it."""
    normal = normal_hits(hits)
    # as the agent side does: the store's parts are read only by a rule that uses them
    uses_parts = rule is not None and rule.uses_parts
    decisions = decide(
        [hit.score for hit in normal],
        rule,
        floor,
        [hit.rank for hit in normal],
        [hit.breakdown for hit in normal] if uses_parts else None,
    )
    kept, dropped = split_kept(hits, [said.kept for said in decisions])
    return HitDecisions(kept, dropped, decisions, floor, rule)


def applies_text(rule: TurnRule | None, floor: float, source: str) -> str:
    """Which rule the floor file applies, and what the floor slider is under it."""
    if rule is None:
        return f"{source} holds no rule: the floor alone decides, and the slider is that floor ({floor_text(floor)})."
    if rule.kind == LEARNED:
        return (
            f"{source} applies its {rule.describe()}: each hit's relevance from its score, rank and place among "
            "the turn's scores; the floor slider is not used by this rule."
        )
    return f"{source} applies its {rule.describe()}: the slider is the rule's floor ({floor_text(floor)}), applied with the turn's cut."


def none_kept_text(decided: HitDecisions) -> str:
    """Why the prompt gets the no-memory block, in a line for the summary."""
    if decided.rule is None:
        return f"Every hit scores under the floor {floor_text(decided.floor)}."
    return f"The {decided.rule.describe()} drops every hit: the prompt gets the no-memory block."


def rule_line(decided: HitDecisions) -> tuple[float | None, str]:
    """Where the score chart draws the rule's line, and its label: a label-free cut's
    edge (the turn's cut or the floor, the higher: the lowest score kept); no line for
    the learned rule, which keeps by relevance, not by a score."""
    if decided.rule is None:
        return decided.floor, f"floor {floor_text(decided.floor)}"
    if decided.rule.kind == LEARNED:
        return None, "learned rule: kept by relevance (see the status column)"
    cut = next((said.cut for said in decided.decisions if said.cut is not None), None)
    return cut, f"{decided.rule.kind} cut {floor_text(cut)}" if cut is not None else decided.rule.kind
