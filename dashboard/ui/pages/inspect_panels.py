"""The Inspect panels below the result, each imported on its first call.

A shared link's first run imports only what its first view draws (ui/widgets/start_up.py
imports that before the server answers, tests/ui/test_start_up.py checks it). These
panels' modules bring more: the store feedback and the rank lookup pandas, the re-rank
panel the judge's HTTP client (httpx), a quarter of a second on a cold server. So they
are imported here, when the page reaches them, once the result is on its way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectors.base import Hit, QueryResult
    from dashboard.ui.widgets.sidebar import StoreChoice


def show_feedback(result: QueryResult, choice: StoreChoice, user: str | None, kept: list[Hit], dropped: list[Hit]) -> None:
    from dashboard.ui.pages.inspect_feedback import show_feedback

    show_feedback(result, choice, user, kept, dropped)


def show_rank_lookup(result: QueryResult, choice: StoreChoice, user: str | None) -> None:
    from dashboard.ui.pages.inspect_feedback import show_rank_lookup

    show_rank_lookup(result, choice, user)


def show_rerank_panel(result: QueryResult, message_id: str, include_text: bool) -> None:
    from dashboard.ui.widgets.rerank_panel import show_rerank_panel

    show_rerank_panel(result, message_id, include_text)
