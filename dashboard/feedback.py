"""Feedback a reviewer sends back to a store, planned from the floor. No streamlit.

Two plans, both explicit and sent only after the reviewer confirms them:

- from the floor: ``retrieved`` for every kept hit (shown and used), ``ignored`` for
  every dropped one (shown, not used: a weak negative);
- one row: ``negative`` with the reviewer's comment.

Feedback moves importance, which applies to every future question, so sending is
never automatic. Results carry ids and importance, never memory text.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from connectors.base import ConnectorError, FeedbackResult, Hit, InvalidRequest, NotFound, Signal, SupportsFeedback


@dataclass(frozen=True)
class FeedbackItem:
    memory_id: str
    signal: Signal
    comment: str | None = None


@dataclass
class FeedbackOutcome:
    item: FeedbackItem
    result: FeedbackResult | None = None
    error: str | None = None  # set when this item failed or was not sent

    def row(self) -> dict:
        result = self.result
        return {
            "memory id": self.item.memory_id,
            "signal": self.item.signal,
            "importance before": result.importance_before if result else None,
            "importance after": result.importance_after if result else None,
            "adjustment": result.adjustment if result else None,
            "influenced ranking": result.influenced_ranking if result else None,
            "error": self.error or "",
        }


def supports_feedback(store: object) -> bool:
    return isinstance(store, SupportsFeedback)


def plan_from_floor(kept: list[Hit], dropped: list[Hit]) -> list[FeedbackItem]:
    return [FeedbackItem(h.memory_id, "retrieved") for h in kept] + [
        FeedbackItem(h.memory_id, "ignored") for h in dropped
    ]


def plan_negative(memory_id: str, comment: str) -> list[FeedbackItem]:
    if not (memory_id or "").strip():
        raise ValueError("Choose the row to mark negative.")
    if not (comment or "").strip():
        raise ValueError("A negative signal needs a comment saying what is wrong with the memory.")
    return [FeedbackItem(memory_id.strip(), "negative", comment.strip())]


def send(store: SupportsFeedback, items: list[FeedbackItem], *, user_id: str | None = None) -> list[FeedbackOutcome]:
    """Send each item in order. A fault about one memory (not found, rejected) is
    recorded and the rest still go; any other fault (auth, rate limit, the store
    down) stops the batch, and the items after it are marked not sent."""
    takes_user = "user_id" in inspect.signature(store.feedback).parameters
    outcomes: list[FeedbackOutcome] = []
    stopped: str | None = None
    for item in items:
        if stopped:
            outcomes.append(FeedbackOutcome(item, error=f"not sent: {stopped}"))
            continue
        try:
            kwargs = {"comment": item.comment}
            if takes_user:
                kwargs["user_id"] = user_id
            outcomes.append(FeedbackOutcome(item, result=store.feedback(item.memory_id, item.signal, **kwargs)))
        except (NotFound, InvalidRequest) as exc:
            outcomes.append(FeedbackOutcome(item, error=f"{type(exc).__name__}: {exc}"))
        except ConnectorError as exc:
            stopped = f"{type(exc).__name__} on {item.memory_id}"
            outcomes.append(FeedbackOutcome(item, error=f"{type(exc).__name__}: {exc}"))
    return outcomes
