"""Aligning a judge to people: prompt variants measured on people's labels, on a part
of them held out from the choice.

1. The pairs people labelled (several people on one pair: the label they agree on;
   a pair they split on is left out, there is nothing to align to) are split by
   turn, with a seed, into a tuning part and a held-out part (``held_out`` share).
2. Each prompt variant grades every pair, optionally with few-shot examples drawn
   from the tuning part, people's corrections of the judge first (pairs where the
   judge's stored grade and people disagree), then relevant and not relevant in turn.
3. For each variant: Cohen's kappa on the tuning part, and on the held-out part
   kappa with a bootstrap interval, precision and recall per label and the bias
   (how often the judge says relevant against people). Each row is marked aligned
   (the judge's verdict is people's) or not.
4. The variant with the highest tuning kappa is chosen (the held-out figures are
   never used to choose, so they stay an honest estimate), and its held-out figures
   are what is recorded for the judge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from dashboard.database.model import RELEVANT, Label
from dashboard.judging.client import bounded_map
from dashboard.judging.judge_agreement import DEFAULT_RESAMPLES, JudgeAgreement, compare
from dashboard.judging.judges import Judgment

TUNING, HELD_OUT = "tuning", "held-out"
DEFAULT_HELD_OUT = 0.5
EXAMPLES_HEADER = "Examples of pairs people graded (follow how they grade):"
EXAMPLE_TEXT_CHARS = 500


@dataclass(frozen=True)
class AlignPair:
    message_id: str
    memory_id: str
    query: str
    text: str
    relevant: bool  # what people say
    part: str  # TUNING | HELD_OUT


@dataclass(frozen=True)
class Variant:
    name: str
    prompt: str
    prompt_file: str | None = None  # None: the judge's own prompt
    examples: tuple[AlignPair, ...] = ()  # few-shot examples in the prompt (tuning pairs)

    def with_few_shot(self, examples: Sequence[AlignPair]) -> Variant:
        return Variant(f"{self.name} + {len(examples)} examples", with_examples(self.prompt, examples), self.prompt_file, tuple(examples))


@dataclass
class RowResult:
    pair: AlignPair
    grade: int | None  # None: the judge gave no usable grade
    relevant: bool | None

    @property
    def aligned(self) -> bool | None:
        return None if self.relevant is None else self.relevant == self.pair.relevant


@dataclass
class VariantResult:
    variant: Variant
    tuning: JudgeAgreement
    held_out: JudgeAgreement
    rows: list[RowResult] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row.grade is None)


def people_verdicts(labels: Iterable[Label]) -> tuple[dict[tuple[str, str], bool], int]:
    """(message id, memory id) -> people's label where they agree; and how many pairs
    were left out because people split on them."""
    seen: dict[tuple[str, str], set[bool]] = {}
    for label in labels:
        seen.setdefault((label.message_id, label.memory_id), set()).add(label.label == RELEVANT)
    agreed = {key: next(iter(values)) for key, values in seen.items() if len(values) == 1}
    return agreed, len(seen) - len(agreed)


def part_of(message_id: str, seed: int, held_out: float) -> str:
    """The part a turn falls in: a hash of the seed and its id, so the split is the same
    on every run and machine, and a turn's pairs never straddle the two parts."""
    digest = hashlib.sha256(f"{seed}\x1f{message_id}".encode()).digest()
    return HELD_OUT if int.from_bytes(digest[:8], "big") / 2**64 < held_out else TUNING


def few_shot(pairs: Sequence[AlignPair], n: int, corrections: set[tuple[str, str]], seed: int) -> list[AlignPair]:
    """Up to `n` tuning pairs as examples: people's corrections of the judge first,
    then relevant and not relevant alternately, in a seeded order."""
    tuning = sorted(
        (p for p in pairs if p.part == TUNING),
        key=lambda p: hashlib.sha256(f"{seed}\x1f{p.message_id}\x1f{p.memory_id}".encode()).digest(),
    )
    chosen = [p for p in tuning if (p.message_id, p.memory_id) in corrections][:n]
    rest = [p for p in tuning if p not in chosen]
    by_label = [[p for p in rest if p.relevant], [p for p in rest if not p.relevant]]
    turn = 0
    while len(chosen) < n and (by_label[0] or by_label[1]):
        if by_label[turn % 2]:
            chosen.append(by_label[turn % 2].pop(0))
        turn += 1
    return chosen


def with_examples(prompt: str, examples: Sequence[AlignPair]) -> str:
    """The prompt with the examples placed before its query (braces in their text
    doubled, so the template still fills only {query} and {passage})."""
    if not examples:
        return prompt

    def inert(text: str) -> str:
        return " ".join(text.split())[:EXAMPLE_TEXT_CHARS].replace("{", "{{").replace("}", "}}")

    block = [EXAMPLES_HEADER]
    for example in examples:
        grade = 3 if example.relevant else 0
        block.append(f'Query: {inert(example.query)}\nPassage: {inert(example.text)}\nAnswer: {{{{"grade": {grade}}}}}')
    examples_text = "\n\n".join(block) + "\n\n"
    at = prompt.find("Query: {query}")
    return prompt[:at] + examples_text + prompt[at:] if at >= 0 else examples_text + prompt


def run_variant(
    variant: Variant,
    grade: Callable[[str, AlignPair], Judgment],
    pairs: Sequence[AlignPair],
    *,
    limit: int,
    source: str,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> VariantResult:
    """Every pair graded with the variant's prompt (`grade(prompt, pair)`), and the
    figures on each part. A pair with no usable grade counts in neither part's figures
    and is reported as failed."""
    rows: dict[tuple[str, str], RowResult] = {}
    for pair, judgment, _error in bounded_map(lambda p: grade(variant.prompt, p), pairs, limit):
        rows[(pair.message_id, pair.memory_id)] = RowResult(
            pair, judgment.grade if judgment else None, judgment.relevant if judgment else None
        )
    ordered = [rows[(p.message_id, p.memory_id)] for p in pairs]

    shown = {(p.message_id, p.memory_id) for p in variant.examples}

    def figures(part: str, samples: int) -> JudgeAgreement:
        # An example's own pair would be graded with its answer in the prompt: left out.
        usable = [r for r in ordered if r.pair.part == part and r.relevant is not None
                  and (r.pair.message_id, r.pair.memory_id) not in shown]
        return compare(source, [r.pair.relevant for r in usable], [bool(r.relevant) for r in usable],
                       resamples=samples, seed=seed)

    return VariantResult(variant, figures(TUNING, 0), figures(HELD_OUT, resamples), ordered)


def choose(results: Sequence[VariantResult]) -> VariantResult:
    """The variant with the highest tuning kappa (undefined counts lowest; ties: first)."""

    def tuning_kappa(result: VariantResult) -> float:
        kappa = result.tuning.kappa
        return -2.0 if kappa is None or kappa != kappa else kappa

    return max(results, key=tuning_kappa)
