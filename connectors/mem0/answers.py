"""What a Mem0 answer means, shared by the library and the Platform: whether
``score`` is a similarity or a distance for one (version, backend) pair, and the
mapping of Mem0's result objects to memlens's hits and memories."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from connectors.base import BadResponse, Hit, InvalidRequest, Memory, StoreUnavailable, as_datetime

# The release from which Mem0 turns Chroma/pgvector distances into similarities.
FIRST_SIMILARITY_RELEASE = (2, 0, 5)


# ------------------------------------------------------------------ score rule


@dataclass(frozen=True)
class ScoreRule:
    """What a Mem0 ``score`` means for one (version, backend) pair."""

    version: str
    backend: str
    returns_distance: bool
    raw_kind: str | None = None  # the distance named for the page, when one
    formula: str | None = None  # how the distance becomes higher-is-better

    def normalise(self, raw: float | None) -> float | None:
        if raw is None or not self.returns_distance:
            return raw
        if self.formula == "1 - d":
            return max(0.0, 1.0 - raw)
        return 1.0 / (1.0 + max(0.0, raw))

    @property
    def note(self) -> str | None:
        if not self.returns_distance:
            return None
        return (
            f"Mem0 {self.version} with the {self.backend} backend returns a {self.raw_kind} in `score` "
            f"(lower is better; Mem0 fixed this in 2.0.5). Scores here are {self.formula}, as Mem0 "
            "computes them from 2.0.5 on, with the store's value in the raw score column."
        )


def _release(version: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version string, a pre-release counting as
    before its release; None when the string is not a version at all."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # packaging ships with pip/setuptools/streamlit; belt and braces
        parts = version.split(".")[:3]
        return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    release = tuple(parsed.release[:3]) + (0,) * (3 - len(parsed.release[:3]))
    if parsed.is_prerelease or parsed.is_devrelease:
        # 2.0.5rc1 is not yet 2.0.5: step back below the release it leads to.
        return release[:2] + (release[2] - 1,) if release[2] > 0 else release[:2] + (-1,)
    return release


def score_rule(version: str, backend: str) -> ScoreRule:
    """Whether Mem0 `version` with vector store `backend` returns distances.

    Before 2.0.5, Chroma returned its (squared L2) distance and pgvector its
    cosine distance (`<=>`) as the memory's score; from 2.0.5 Mem0 converts them
    (Chroma 1/(1+d), pgvector max(0, 1-d)). Every other backend, and every version
    memlens cannot read, is taken as a similarity.
    """
    backend_name = (backend or "").strip().lower()
    release = _release(version or "")
    old = release is not None and release < FIRST_SIMILARITY_RELEASE
    if old and backend_name in ("chroma", "chromadb"):
        return ScoreRule(version, backend_name, True, "Chroma L2 distance", "1/(1+d)")
    if old and backend_name == "pgvector":
        return ScoreRule(version, backend_name, True, "pgvector cosine distance", "1 - d")
    return ScoreRule(version, backend_name, False)


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mem0ai")
    except PackageNotFoundError:
        raise StoreUnavailable(
            "Mem0 is not installed: `pip install 'memlens[mem0]'` (the mem0ai package)."
        ) from None


# ------------------------------------------------------------------ shared mapping


def _numbers(mapping: Any) -> dict[str, float]:
    """Every numeric entry of a breakdown dict (booleans and non-finite values left out)."""
    if not isinstance(mapping, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in mapping.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


# score_details also reports what the score was computed under: the threshold the
# search applied and the divisor of the hybrid score. They are not parts of the score,
# so they go to Hit.metadata["score_settings"], not into the breakdown columns.
SCORE_SETTINGS = ("threshold", "max_possible_score")

_MEMORY_KEYS = {"id", "memory", "score", "score_details", "score_breakdown", "created_at", "user_id", "metadata"}


def memory_from_item(item: dict[str, Any]) -> Memory:
    metadata = dict(item.get("metadata") or {})
    metadata.update({k: v for k, v in item.items() if k not in _MEMORY_KEYS and v is not None})
    return Memory(
        memory_id=str(item["id"]),
        text=str(item.get("memory") or ""),
        user_id=item.get("user_id"),
        created_at=as_datetime(item.get("created_at")),
        metadata=metadata,
    )


def results_list(body: Any, where: str) -> list[dict[str, Any]]:
    """The list of memories in a Mem0 answer ({"results": [...]}, or a bare list)."""
    items = body.get("results") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise BadResponse(f"{where}: expected a list of memories under 'results', got {type(items).__name__}")
    bad = [i for i, item in enumerate(items) if not isinstance(item, dict) or "id" not in item]
    if bad:
        raise BadResponse(f"{where}: result #{bad[0] + 1} is not a memory object with an 'id'")
    return items


def hits_from_search(items: list[dict[str, Any]], rule: ScoreRule | None = None, *, breakdown_key: str) -> list[Hit]:
    """Hits in Mem0's own order; a distance is normalised by `rule`, the raw value kept."""
    hits = []
    for rank, item in enumerate(items, start=1):
        raw = item.get("score")
        raw = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        memory = memory_from_item(item)
        breakdown = _numbers(item.get(breakdown_key))
        settings = {name: breakdown.pop(name) for name in SCORE_SETTINGS if name in breakdown}
        metadata = {"user_id": memory.user_id, **memory.metadata}
        if settings:
            metadata["score_settings"] = settings
        hits.append(
            Hit(
                memory_id=memory.memory_id,
                rank=rank,
                text=memory.text,
                score=rule.normalise(raw) if rule else raw,
                raw_score=raw,
                breakdown=breakdown,
                created_at=memory.created_at,
                metadata=metadata,
            )
        )
    return hits


def optional_threshold(value: float | str | None) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"threshold: {value!r} is not a number in [0, 1]") from None
    if not 0.0 <= number <= 1.0:
        raise InvalidRequest(f"threshold: {number} is outside [0, 1]")
    return number
