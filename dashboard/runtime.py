"""The agent-side API: what a team puts in its agent once Calibrate has chosen a floor.

    from dashboard.runtime import FloorConfig, RetrievalLog, memory_for_prompt

    floor = FloorConfig.load("memlens-floor.json")    # or FloorConfig(floor=0.35)
    log = RetrievalLog("retrievals.jsonl")            # or .parquet; ids and scores only
    turn = memory_for_prompt(store, message, user_id="sam", k=5, floor=floor, log=log)
    turn.block, turn.kept, turn.dropped, turn.reason

``memory_for_prompt`` queries a memlens store; ``memory_from_hits`` takes the hits the
team's own client returned (id, text, the store's raw score) with the store kind, and
converts each raw score by the rule the connector uses (connectors/common/score_spaces.py),
so the floor applies in the space it was calibrated in. A floor config names its
score space; results from another space are refused (ScoreSpaceMismatch). Floors per
segment (user, tag, store) are looked up with the global floor as the fallback.

A floor config that holds a rule reading the whole turn (``rule``: learned,
largest-gap, top-ratio; dashboard/turn_rule.py) decides each hit by it, on the
turn's hits; a label-free cut is applied with the floor. ``shadow=`` takes a
candidate config: the shipped one decides the block, and the candidate's decision
per hit is only logged (``shadow_rule``, ``shadow_kept``), so a new rule can be
watched on live traffic before it ships.

The block follows the floor's rules (dashboard/floor.py): the kept memories, the
no-memory text with its instruction not to guess, or the store's own context block
only when nothing was dropped. ``send_feedback`` (off unless called) sends
``retrieved`` for kept memories and ``ignored`` for dropped ones after the reply.

Importing this module loads no Streamlit, pandas, DuckDB, Plotly or torch (a test
checks it in a fresh interpreter).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connectors.base import COMPARABLE_KINDS, Hit, MemoryStore, SupportsFeedback
from connectors.common.score_spaces import space_for, store_space
from dashboard.feedback import FeedbackOutcome, plan_from_floor, send
from dashboard.floor import prompt_block, split_kept
from dashboard.floor_config import FloorConfig, FloorConfigError, ScoreSpaceMismatch
from dashboard.logs.writer import RetrievalLog, RetrievalLogError, RetrievalSpans, as_score, as_text, normal_hits
from dashboard.turn_rule import TurnRule, kept_mask

__all__ = [
    "FloorConfig",
    "FloorConfigError",
    "RetrievalLog",
    "RetrievalLogError",
    "RetrievalSpans",
    "ScoreSpaceMismatch",
    "Turn",
    "memory_for_prompt",
    "memory_from_hits",
    "send_feedback",
]


# ------------------------------------------------------------------ one turn


@dataclass
class Turn:
    """What one message got from memory: the block for the prompt and why."""

    message_id: str
    block: str
    kept: list[Hit]
    dropped: list[Hit]
    reason: str | None  # why nothing was kept; None when something was
    floor: float  # the floor applied, at full precision
    segment: str  # "global", or the segment whose floor applied ("user=sam")
    source: str  # the block's source: "no_memory" | "store_context" | "kept_memories"
    notes: list[str] = field(default_factory=list)
    rule: str = "floor"  # what decided: "floor", or the config's rule ("learned", "largest-gap", "top-ratio")
    shadow_rule: str | None = None  # the candidate's rule, with shadow=
    shadow_kept: list[bool] | None = None  # the candidate's decision per hit (kept + dropped in the store's order)


def _as_config(floor: FloorConfig | float) -> FloorConfig:
    return floor if isinstance(floor, FloorConfig) else FloorConfig(floor=floor)


def _reason(hits: Sequence[Hit], kept: Sequence[Hit], floor: float, rule: TurnRule | None = None) -> str | None:
    if kept:
        return None
    if not hits:
        return "nothing returned"
    unscored = sum(1 for hit in hits if hit.score is None or math.isnan(hit.score))
    if unscored == len(hits):
        return f"all {len(hits)} without a score"
    tail = f" ({unscored} without a score)" if unscored else ""
    if rule is not None:
        return f"all {len(hits)} dropped by the {rule.describe()} at the floor {floor!r}{tail}"
    return f"all {len(hits)} under the floor {floor!r}{tail}"


def _decide(hits: list[Hit], config: FloorConfig, floor: float) -> list[bool]:
    """Kept or dropped per hit, by the config's rule on the turn's hits, else its floor
    (turn_rule.kept_mask decides both). The hits are normal: no NaN score, and each
    rank its position, which is kept_mask's rank when given none."""
    rule = config.rule
    breakdowns = [hit.breakdown for hit in hits] if rule is not None and rule.uses_parts else None
    return kept_mask([hit.score for hit in hits], rule, floor, None, breakdowns)


def _turn(
    hits: list[Hit],
    context: str | None,
    config: FloorConfig,
    *,
    message: str,
    user_id: str | None,
    tag: str | None,
    store_id: str | None,
    log: Any,
    message_id: str | None,
    shadow: FloorConfig | None = None,
) -> Turn:
    # one normalisation for both entry points: the floor and the log see the same
    # hits (ids as text, a NaN or infinite score as none, ranks 1.. in the store's order)
    hits = normal_hits(hits)
    user_id = as_text(user_id)
    floor, segment = config.floor_for(user_id=user_id, tag=tag, store=store_id)
    mask = _decide(hits, config, floor)
    kept, dropped = split_kept(hits, mask)
    shadow_rule = shadow_mask = None
    if shadow is not None:
        # the candidate's own floor for this turn (its segments), its own rule: logged only
        shadow_floor, _ = shadow.floor_for(user_id=user_id, tag=tag, store=store_id)
        shadow_rule, shadow_mask = shadow.rule_name, _decide(hits, shadow, shadow_floor)
    block = prompt_block(kept, dropped, context)
    # 128 random bits as 32 hex digits, like uuid4().hex: building a UUID object cost
    # several µs on every turn that came without an id
    turn_id = str(message_id) if message_id is not None else os.urandom(16).hex()
    if log is not None:
        # the log never raises here once open (RetrievalLog counts what it could not write)
        log.write_turn(
            turn_id, hits, user_id=user_id, store=store_id, query=message, floor=floor, floor_segment=segment,
            rule=config.rule_name, kept=mask, shadow_rule=shadow_rule, shadow_kept=shadow_mask,
        )  # fmt: skip
    return Turn(
        turn_id, block.text, kept, dropped, _reason(hits, kept, floor, config.rule), floor, segment, block.source,
        config.notes, config.rule_name, shadow_rule, shadow_mask,
    )  # fmt: skip


def memory_for_prompt(
    store: MemoryStore,
    message: str,
    *,
    user_id: str | None = None,
    k: int = 5,
    floor: FloorConfig | float,
    log: RetrievalLog | RetrievalSpans | None = None,
    message_id: str | None = None,
    tag: str | None = None,
    store_id: str | None = None,
    shadow: FloorConfig | None = None,
) -> Turn:
    """Query `store` with `message`, apply the floor (the segment's, else the global
    one) or the config's rule on the turn's hits, build the prompt block and log the
    turn by id. `store_id` names the store in the log and for a per-store floor
    (default: the store's kind, ``store.name``). `shadow`, a candidate FloorConfig, is
    applied to the same hits and only logged: the block is the shipped config's."""
    config = _as_config(floor)
    space = store_space(store)
    config.check_space(space, what=f"the {store.name} store's scores")
    if shadow is not None:
        shadow.check_space(space, what=f"the {store.name} store's scores (shadow config)")
    result = store.query(message, user_id=user_id, k=k)
    if result.score_kind not in COMPARABLE_KINDS:
        config.check_space(None, what=f"the {store.name} store's scores")
    return _turn(
        result.hits,
        result.context,
        config,
        message=message,
        user_id=user_id,
        tag=tag,
        store_id=store_id or store.name,
        log=log,
        message_id=message_id,
        shadow=shadow,
    )


def _raw_hit(item: Any, position: int) -> tuple[str, str, float | None, dict[str, Any]]:
    """(id, text, raw score, metadata) from a mapping or a tuple the team's client gave."""
    if isinstance(item, Mapping):
        memory_id = item.get("id", item.get("memory_id"))
        raw = item.get("score", item.get("raw_score", item.get("distance")))
        text, metadata = item.get("text", ""), item.get("metadata") or {}
    elif isinstance(item, Sequence) and not isinstance(item, str) and 3 <= len(item) <= 4:
        memory_id, text, raw = item[0], item[1], item[2]
        metadata = item[3] if len(item) == 4 else {}
    else:
        raise ValueError(f"hit {position}: give a mapping with id, text and score, or a tuple (id, text, raw score[, metadata])")
    if memory_id is None or str(memory_id) == "":
        raise ValueError(f"hit {position}: no id (a memory is logged and labelled by its id)")
    try:
        # a numpy float32 (FAISS), a Decimal: a float; NaN, inf or none: a memory with no score
        number = as_score(raw)
    except TypeError:
        raise ValueError(f"hit {position} ({memory_id}): score {raw!r} is not a number") from None
    return str(memory_id), "" if text is None else str(text), number, dict(metadata)


def memory_from_hits(
    hits: Iterable[Any],
    *,
    store_kind: str,
    setting: str | None = None,
    message: str = "",
    user_id: str | None = None,
    floor: FloorConfig | float,
    log: RetrievalLog | RetrievalSpans | None = None,
    message_id: str | None = None,
    tag: str | None = None,
    store_id: str | None = None,
    context: str | None = None,
    shadow: FloorConfig | None = None,
) -> Turn:
    """The same turn from hits the team's own client returned, in the store's order:
    each a mapping (``id``, ``text``, ``score`` (the store's raw value), optional
    ``metadata``) or a tuple (id, text, raw score[, metadata]). `store_kind` and
    `setting` (Chroma's space ``l2``, pgvector's operator ``<->``, ...) name the rule
    that turns the raw value into memlens's score, as the connector does. The message
    is logged only when the log includes queries. `shadow`: as for memory_for_prompt."""
    space = space_for(store_kind, setting)
    config = _as_config(floor)
    config.check_space(space, what=f"hits from {space.store}")
    if shadow is not None:
        shadow.check_space(space, what=f"hits from {space.store} (shadow config)")
    converted = []
    for position, item in enumerate(hits, start=1):
        memory_id, text, raw, metadata = _raw_hit(item, position)
        converted.append(Hit(memory_id, position, text, space.convert(raw), raw_score=raw, metadata=metadata))
    return _turn(
        converted,
        context,
        config,
        message=message,
        user_id=user_id,
        tag=tag,
        store_id=store_id or space.store,
        log=log,
        message_id=message_id,
        shadow=shadow,
    )


def send_feedback(store: SupportsFeedback, turn: Turn, *, user_id: str | None = None) -> list[FeedbackOutcome]:
    """After the reply, and only when called: ``retrieved`` for each kept memory,
    ``ignored`` for each dropped one (feedback moves importance for every later
    question, so it is never sent by ``memory_for_prompt`` itself)."""
    return send(store, plan_from_floor(turn.kept, turn.dropped), user_id=user_id)
