"""Drawing a labelling session from a log. Pure, seeded, and vectorised.

Three ways to pick the rows (calibration needs labelled rows from real traffic:
docs/domain.md, "Floors come from labels"):

    uniform     rows drawn uniformly at random
    stratified  rows drawn evenly across score bands, so the scores near a candidate
                floor, where calibration is decided, are as well covered as the
                crowded middle; a band with too few rows gives its share to the others
    turns       whole turns (every row of a drawn message): shows what the floor does
                to a turn, including turns left with no memory

The same log, method, size and seed always give the same session. A session is
labelled a turn at a time; with reviewers named, each turn goes to one of them and
a share of turns (the overlap) to a second one, so agreement can be measured.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard.database import AppDatabase
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels.resolution import parse_names

METHODS = ("uniform", "stratified", "turns")
DEFAULT_BAND_WIDTH = 0.05


def score_bands(scores: np.ndarray, band_width: float = DEFAULT_BAND_WIDTH) -> np.ndarray:
    """The band index of every score: bands of `band_width` aligned on 0 (so 0.30 to
    0.35 is one band whatever the data), counted from the lowest band present."""
    if band_width <= 0 or not math.isfinite(band_width):
        raise ValueError(f"band width must be a number above 0, got {band_width!r}")
    values = np.asarray(scores, dtype=float)
    scored = np.isfinite(values)
    index = np.zeros(len(values), dtype=np.int64)
    # a hair of tolerance so 0.35 lands in [0.35, 0.40), not in the band below
    index[scored] = np.floor(values[scored] / band_width + 1e-9).astype(np.int64)
    if not scored.all():
        # A memory the store returned with no score (the log writes it so): a band of
        # its own below every scored one, so it is sampled too and never cast from NaN.
        index[~scored] = index[scored].min() - 1 if scored.any() else 0
    return index - index.min() if len(index) else index


def allocate(band_sizes: np.ndarray, size: int) -> np.ndarray:
    """How many rows to draw from each band: as equal as possible, a band never
    asked for more rows than it has; what a small band cannot give goes to the rest."""
    band_sizes = np.asarray(band_sizes, dtype=np.int64)
    take = np.zeros_like(band_sizes)
    remaining = min(int(size), int(band_sizes.sum()))
    open_bands = band_sizes > 0
    while remaining > 0 and open_bands.any():
        share = max(1, remaining // int(open_bands.sum()))
        for band in np.flatnonzero(open_bands):
            extra = min(share, int(band_sizes[band] - take[band]), remaining)
            take[band] += extra
            remaining -= extra
            if take[band] == band_sizes[band]:
                open_bands[band] = False
            if remaining == 0:
                break
    return take


def draw_sample(
    rows: pd.DataFrame,
    method: str,
    size: int,
    *,
    seed: int | None = None,
    band_width: float = DEFAULT_BAND_WIDTH,
) -> pd.DataFrame:
    """The sampled log rows in log order. `size` counts rows, or turns for "turns";
    asking for more than the log has gives the whole log."""
    if method not in METHODS:
        raise ValueError(f"sampling method must be one of {', '.join(METHODS)}, got {method!r}")
    if size < 1:
        raise ValueError(f"sample size must be at least 1, got {size}")
    rng = np.random.default_rng(seed)
    count = len(rows)
    if method == "uniform":
        chosen = rng.choice(count, size=min(size, count), replace=False)
    elif method == "stratified":
        bands = score_bands(rows["score"].to_numpy(), band_width)
        # Shuffle once, then group by band keeping the shuffled order: the first
        # rows of each band's run are a uniform draw from that band.
        shuffled = rng.permutation(count)
        by_band = shuffled[np.argsort(bands[shuffled], kind="stable")]
        band_sizes = np.bincount(bands, minlength=int(bands.max()) + 1 if count else 0)
        take = allocate(band_sizes, size)
        starts = np.concatenate([[0], np.cumsum(band_sizes)[:-1]])
        chosen = np.concatenate([by_band[s : s + t] for s, t in zip(starts, take, strict=True)] or [np.empty(0, np.int64)])
    else:
        turn_ids = rows["message_id"].drop_duplicates().to_numpy()
        picked = rng.choice(turn_ids, size=min(size, len(turn_ids)), replace=False)
        chosen = np.flatnonzero(rows["message_id"].isin(picked).to_numpy())
    sample = rows.iloc[np.sort(chosen)]
    # a turn's rows together, in the order its first row appears in the log
    first_seen = sample.groupby("message_id", sort=False)["line"].transform("min")
    return sample.assign(_turn=first_seen.to_numpy()).sort_values(["_turn", "rank", "line"]).drop(columns="_turn")


def assign_turns(
    message_ids: list[str], reviewers: list[str], overlap: float, *, seed: int | None = None
) -> dict[str, list[str]]:
    """Each turn to one reviewer in turn; `overlap` (0-1) of the turns also to the
    next reviewer, so those turns get two independent labels. No reviewers: no
    assignment (everyone may label every turn)."""
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"overlap must be between 0 and 1, got {overlap!r}")
    reviewers = list(dict.fromkeys(r.strip() for r in reviewers if r and r.strip()))
    if not reviewers:
        return {}
    rng = np.random.default_rng(None if seed is None else seed + 1)
    order = rng.permutation(len(message_ids))
    assigned = {message_ids[i]: [reviewers[slot % len(reviewers)]] for slot, i in enumerate(order)}
    if len(reviewers) > 1:
        doubled = round(overlap * len(message_ids))
        for slot, i in enumerate(order[:doubled]):
            # the rotation puts consecutive slots with different people, so the
            # second reviewer is never the first one
            assigned[message_ids[i]].append(reviewers[(slot + 1) % len(reviewers)])
    return assigned


def parse_reviewers(text: str) -> list[str]:
    """Reviewer names (or e-mails) from "ana, ben; cy" (commas, semicolons or new
    lines); a repeat in another case is the same reviewer (resolution.parse_names)."""
    return parse_names(text)


def build_session(
    name: str,
    rows: pd.DataFrame,
    *,
    method: str,
    size: int,
    seed: int | None = None,
    reviewers: list[str] | None = None,
    overlap: float = 0.0,
    source: str | None = None,
    keep_text: bool = False,
    band_width: float = DEFAULT_BAND_WIDTH,
    drawn_store: str | None = None,
) -> tuple[LabelSession, list[SessionItem], dict[str, list[str]]]:
    """The session, its rows and its assignments, ready for ``db.sessions.create``.
    `drawn_store` is the fingerprint of the store the reviewers will look the rows up in."""
    sample = draw_sample(rows, method, size, seed=seed, band_width=band_width)
    stores = sample["store"].dropna().unique().tolist() if "store" in sample else []
    items = [
        SessionItem(
            position=position,
            message_id=str(row.message_id),
            memory_id=str(row.memory_id),
            rank=int(row.rank),
            score=float(row.score),
            user_id=_text_or_none(row.user_id),
            store=_text_or_none(row.store),
            query_text=_text_or_none(row.query) if keep_text else None,
        )
        for position, row in enumerate(sample.itertuples(index=False), start=1)
    ]
    turn_ids = list(dict.fromkeys(item.message_id for item in items))
    reviewers = list(dict.fromkeys(reviewers or []))
    params: dict[str, Any] = {"turns": len(turn_ids)}
    if method == "stratified":
        params["band_width"] = band_width
    session = LabelSession(
        name=name.strip(),
        method=method,
        size=len(items),
        seed=seed,
        overlap=overlap if len(reviewers) > 1 else 0.0,
        reviewers=reviewers,
        source=source,
        store=stores[0] if len(stores) == 1 else None,
        keep_text=keep_text,
        params=params,
        drawn_store=drawn_store,
    )
    return session, items, assign_turns(turn_ids, reviewers, session.overlap, seed=seed)


def save_session(db: AppDatabase, name: str, rows: pd.DataFrame, **options: Any) -> LabelSession:
    """Draw a sample and save it as a named labelling session in the label database."""
    session, items, assignments = build_session(name, rows, **options)
    return db.sessions.create(session, items, assignments)


def _text_or_none(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return str(value)
