"""The score floor and the memory block the prompt would get. Pure functions."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from connectors.base import Hit

NO_MEMORY_TEXT = (
    "No stored memory is relevant to this message. "
    "Do not guess the user's details from unrelated facts; answer without them or ask."
)
DEFAULT_FLOOR = 0.35


def default_floor(environ: dict[str, str] | None = None) -> float:
    """MEMORY_SCORE_FLOOR when set to a number in [0, 1], else DEFAULT_FLOOR."""
    raw = (environ if environ is not None else os.environ).get("MEMORY_SCORE_FLOOR")
    if raw is None or raw.strip() == "":
        return DEFAULT_FLOOR
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_FLOOR
    return value if 0.0 <= value <= 1.0 else DEFAULT_FLOOR


def floor_text(floor: float) -> str:
    """A floor as a link or a page writes it: at full precision (a shipped 0.36577 is
    not 0.37), without a slider step's float noise (0.35000000000000003 is 0.35);
    a floor on the 0.01 grid keeps its two decimals (0.50), as links always had."""
    value = round(float(floor), 10)
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def floor_list(text: str) -> tuple[list[float], list[str]]:
    """The floors in comma- (or semicolon-) separated `text`, and one message per part
    that is not one, naming it: not a finite number, or outside [0, 1] (the range
    every floor memlens applies lies in, as MEMORY_SCORE_FLOOR's does)."""
    floors: list[float] = []
    problems: list[str] = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            problems.append(f"{part!r} is not a number")
            continue
        if not math.isfinite(value):
            problems.append(f"{part!r} is not a finite number")
        elif not 0.0 <= value <= 1.0:
            problems.append(f"{part!r} is outside [0, 1]: a floor is a score from 0 to 1")
        else:
            floors.append(value)
    return floors, problems


def has_score(hit: Hit) -> bool:
    return hit.score is not None and not math.isnan(hit.score)


def apply_floor(hits: list[Hit], floor: float) -> tuple[list[Hit], list[Hit]]:
    """(kept, dropped), each in the store's order. A hit exactly at the floor is
    kept (the floor is the lowest score allowed in); a hit with no score is dropped."""
    return split_kept(hits, [hit.score is not None and has_score(hit) and hit.score >= floor for hit in hits])


def split_kept(hits: Sequence[Hit], mask: Iterable[bool]) -> tuple[list[Hit], list[Hit]]:
    """(kept, dropped), each in the store's order, by each hit's decision in `mask`."""
    kept: list[Hit] = []
    dropped: list[Hit] = []
    for hit, keep in zip(hits, mask, strict=True):
        (kept if keep else dropped).append(hit)
    return kept, dropped


@dataclass
class PromptBlock:
    text: str
    source: str  # "no_memory" | "store_context" | "kept_memories"

    @property
    def explanation(self) -> str:
        return {
            "no_memory": "Nothing passed the floor, so the prompt says so and tells the model not to guess.",
            "store_context": "Nothing was dropped, so the store's own context block is used as is.",
            "kept_memories": "Built from the kept memories only: the store's context block "
            "would still list the dropped ones.",
        }[self.source]


def prompt_block(kept: list[Hit], dropped: list[Hit], context: str | None) -> PromptBlock:
    if not kept:
        return PromptBlock(NO_MEMORY_TEXT, "no_memory")
    if not dropped and context:
        return PromptBlock(context, "store_context")
    lines = "\n".join(f"- {hit.text}" for hit in kept)
    return PromptBlock(f"Relevant memories about the user:\n{lines}", "kept_memories")
