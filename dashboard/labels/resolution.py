"""The one rule that turns several reviewers' labels of a pair into the pair's label. Pure.

Every figure and export counts labels through here (Calibrate, Quality, the JSONL,
CSV and qrels exports, agreement, the judge's comparison, `memlens calibrate
--labels`, `memlens labels export`), so one set of labels gives one floor:

1. an adjudicated label (a lead's final word on the pair, with who, when and a
   note) decides the pair;
2. else the majority of the reviewers' labels;
3. a tie is unresolved: the pair is left out of every figure and export, and
   counted, until someone adjudicates it.

Reviewer and adjudicator names are matched by ``reviewer_key``: Unicode NFKC and case
folded ("Ana" is "ana"; "José" typed with a precomposed é is "José" typed with e and a
combining accent); one reviewer has one vote per pair (their most recently written label). When a list of reviewers
applies (the session's, else the operator list in ``MEMLENS_REVIEWERS``), labels
from names not on it are flagged and left out of the figures, never counted unseen.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from dashboard.database.adjudications import Adjudication
from dashboard.database.model import Label, distinct_reviewers, reviewer_key

RULE = "adjudicated label first, else the majority of reviewers; a tie is unresolved and left out"
REVIEWERS_ENV = "MEMLENS_REVIEWERS"  # the operator's list of reviewer names, behind the password gate

ADJUDICATED, MAJORITY, SINGLE = "adjudicated", "majority", "single"


# Letters of other scripts drawn like Latin ones: a name typed with one of them is
# another name to reviewer_key, and looks the same on a page. Flagged, never merged:
# "Sаm" with a Cyrillic а may be another person.
_LOOKALIKES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y",
    "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y",
})  # fmt: skip


def _skeleton(name: str) -> str:
    return reviewer_key(name).translate(_LOOKALIKES)


def _scripts(name: str) -> set[str]:
    """The scripts of a name's letters, by the first word of their Unicode names."""
    return {unicodedata.name(char, "?").split()[0] for char in name if char.isalpha()}


def lookalike_notes(names: Iterable[str]) -> list[str]:
    """A note per group of names that are different reviewers to ``reviewer_key`` but
    look alike (a letter of another script standing for a Latin one), and per name
    mixing scripts: printed wherever names are listed, for a person to decide."""
    groups: dict[str, dict[str, str]] = {}
    for name in names:
        groups.setdefault(_skeleton(name), {}).setdefault(reviewer_key(name), name)
    notes = []
    for spellings in groups.values():
        shown = sorted(spellings.values())
        mixed = [name for name in shown if len(_scripts(name)) > 1]
        if len(shown) > 1 or mixed:
            which = ", ".join(
                f"'{name.encode('unicode_escape').decode('ascii')}'" + (f" ({'+'.join(sorted(_scripts(name))).lower()})"
                                                                          if len(_scripts(name)) > 1 else "")
                for name in shown
            )
            notes.append(
                f"note: reviewer name(s) {which} look alike but are "
                + ("different names" if len(shown) > 1 else "written in mixed scripts")
                + ": check whether they are one person and use one spelling"
            )
    return notes


def parse_names(text: str | None) -> list[str]:
    """Reviewer names (or e-mails) from "ana, ben; cy" (commas, semicolons or new
    lines), first spelling kept, repeats (in any case) dropped."""
    return distinct_reviewers(name.strip() for name in re.split(r"[,;\n]", text or "") if name.strip())


def on_list(name: str, names: Sequence[str]) -> bool:
    return reviewer_key(name) in {reviewer_key(n) for n in names}


def listed_spelling(name: str, names: Sequence[str]) -> str | None:
    """The list's own spelling of `name` (matched case-insensitively), None when off the list."""
    return next((n for n in names if reviewer_key(n) == reviewer_key(name)), None)


def majority(votes: Sequence[str]) -> str | None:
    """The label most votes give; None on a tie (the pair is unresolved)."""
    counts = Counter(votes).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


@dataclass
class Unresolved:
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    votes: dict[str, str]  # reviewer -> label


@dataclass
class Resolution:
    """The pairs' labels by the rule, and what was left out and why."""

    labels: list[Label]  # one per resolved pair, in the order pairs first appear
    how: dict[tuple[str, str], str] = field(default_factory=dict)  # pair -> adjudicated | majority | single
    unresolved: list[Unresolved] = field(default_factory=list)
    flagged: Counter[str] = field(default_factory=Counter)  # off-list reviewer -> labels left out
    listed: list[str] | None = None  # the list that applied (None: every reviewer counts)

    @property
    def adjudicated(self) -> int:
        return sum(1 for how in self.how.values() if how == ADJUDICATED)

    @property
    def by_majority(self) -> int:
        return sum(1 for how in self.how.values() if how == MAJORITY)

    def lines(self) -> list[str]:
        """What a page or command prints wherever these labels are counted."""
        lines = [
            f"Rule: {RULE}.",
            f"{len(self.labels)} pair(s) counted: {self.adjudicated} adjudicated, {self.by_majority} by majority "
            f"of several reviewers, {len(self.labels) - self.adjudicated - self.by_majority} by one reviewer; "
            f"{len(self.unresolved)} unresolved tie(s) left out.",
        ]
        if self.flagged:
            who = ", ".join(f"{name!r} ({count})" for name, count in sorted(self.flagged.items()))
            lines.append(
                f"{sum(self.flagged.values())} label(s) from reviewer(s) not on the list left out until a lead "
                f"adds them to it: {who}."
            )
        return lines + lookalike_notes([*(self.listed or []), *self.flagged])


def counted_labels(labels: Iterable[Label], names: Sequence[str] | None) -> tuple[list[Label], Counter[str]]:
    """The labels whose reviewer is on `names` (every label when `names` is empty or
    None), and how many each off-list reviewer gave."""
    labels = list(labels)
    if not names:
        return labels, Counter()
    allowed = {reviewer_key(n) for n in names}
    kept = [label for label in labels if reviewer_key(label.reviewer) in allowed]
    flagged = Counter(label.reviewer for label in labels if reviewer_key(label.reviewer) not in allowed)
    return kept, flagged


def votes_by_pair(labels: Iterable[Label]) -> dict[tuple[str, str], dict[str, Label]]:
    """pair -> reviewer key -> that reviewer's label (their latest write when two
    spellings of one name labelled the pair), pairs in first-seen order."""
    by_pair: dict[tuple[str, str], dict[str, Label]] = {}
    for label in labels:
        votes = by_pair.setdefault((label.message_id, label.memory_id), {})
        key = reviewer_key(label.reviewer)
        if key not in votes or (label.updated_at or "") > (votes[key].updated_at or ""):
            votes[key] = label
    return by_pair


def resolve(
    labels: Iterable[Label],
    adjudications: Iterable[Adjudication] = (),
    *,
    reviewers: Sequence[str] | None = None,
) -> Resolution:
    """One label per pair by the rule (module doc). `reviewers`: the list that
    applies, if any; labels from other names are flagged and left out."""
    kept, flagged = counted_labels(labels, reviewers)
    decided: Mapping[tuple[str, str], Adjudication] = {(a.message_id, a.memory_id): a for a in adjudications}
    result = Resolution([], flagged=flagged, listed=list(reviewers) if reviewers else None)
    for pair, votes in votes_by_pair(kept).items():
        first = next(iter(votes.values()))
        final = decided.get(pair)
        if final is None and len(votes) == 1:  # the common case: one reviewer, their label as it is
            result.how[pair] = SINGLE
            result.labels.append(first)
            continue
        if final is not None:
            label, how, who, when = final.label, ADJUDICATED, final.adjudicator, final.created_at
        else:
            winner = majority([vote.label for vote in votes.values()])
            if winner is None:
                result.unresolved.append(
                    Unresolved(*pair, first.rank, first.score, {k: v.label for k, v in sorted(votes.items())})
                )
                continue
            label, how = winner, SINGLE if len(votes) == 1 else MAJORITY
            who = ",".join(sorted(key for key, vote in votes.items() if vote.label == label))
            when = max(vote.updated_at for vote in votes.values())
        result.how[pair] = how
        result.labels.append(
            replace(
                first,
                label=label,
                reviewer=first.reviewer if how == SINGLE else who,
                created_at=min(vote.created_at for vote in votes.values()),
                updated_at=when,
            )
        )
    return result
