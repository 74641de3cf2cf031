"""memlens on the agent's side: the floor Calibrate chose, applied on every turn.

    from memlens import FloorConfig, RetrievalLog, memory_for_prompt

    floor = FloorConfig.load("memlens-floor.json")   # or FloorConfig(floor=0.35)
    log = RetrievalLog("retrievals.jsonl")           # ids and scores only
    turn = memory_for_prompt(store, message, user_id="sam", k=5, floor=floor, log=log)
    turn.block, turn.kept, turn.dropped, turn.reason

`pip install memlens` installs this and nothing else (the standard library; pyarrow only
for a Parquet log). The dashboard and the `memlens` command are `pip install "memlens[app]"`.
The code lives in dashboard/runtime.py; this package is the public name a team imports,
so moving a module inside memlens never breaks an agent.
"""

from __future__ import annotations

from typing import Any

from dashboard.runtime import (
    FloorConfig,
    FloorConfigError,
    RetrievalLog,
    RetrievalLogError,
    RetrievalSpans,
    ScoreSpaceMismatch,
    Turn,
    memory_for_prompt,
    memory_from_hits,
    send_feedback,
)

__all__ = [
    "FloorConfig",
    "FloorConfigError",
    "RetrievalLog",
    "RetrievalLogError",
    "RetrievalSpans",
    "ScoreSpaceMismatch",
    "Turn",
    "create_store",
    "memory_for_prompt",
    "memory_from_hits",
    "send_feedback",
]


def __getattr__(name: str) -> Any:
    # Both are loaded only when asked: the store registry (inspect, every store's
    # settings) and importlib.metadata (a scan of site-packages) cost an agent that
    # never uses them tens of milliseconds at every start.
    if name == "create_store":
        from connectors.registry import create_store

        return create_store
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("memlens")
        except PackageNotFoundError:  # run from a checkout that was never installed
            return "0+unknown"
    raise AttributeError(f"module 'memlens' has no attribute {name!r}")
