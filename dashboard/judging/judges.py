"""Judges that grade (query, memory text) pairs 0-3, to suggest labels.

    0 unrelated    the memory has nothing to do with the message
    1 related      on the topic, but does not answer it
    2 partly       holds some of the answer, unclear or among other things
    3 answers      holds the answer

Two kinds, one interface (``grade(query, text) -> Judgment``):

- ``LlmJudge``: an UMBRELA-style prompt (Upadhyay et al., 2024, the TREC RAG
  relevance assessor) over the chat-model client, asked for ``{"grade", "reason"}``
  with a JSON schema, checked, and asked once more with what was wrong;
- ``CrossEncoderJudge``: a sentence-transformers ``CrossEncoder`` from a local
  path. Its output is a raw logit, not a probability and not a grade, so it is
  turned into one against a cut-off that is calibrated on people's labels the way
  a score floor is (``calibrate_cutoff``): at or over it, grade 2 (relevant);
  under it, grade 0.

A judge config (``--judge CONFIG``, TOML or JSON) names the judge and its kind:

    name = "umbrela"            kind = "llm"             # the model comes from MEMLENS_LLM_*
    name = "minilm-ce"          kind = "cross-encoder"   model_path = "/models/ce"   cutoff = 0.0

An llm judge's prompt is UMBRELA_PROMPT unless ``prompt_file`` names another (a
variant `memlens judge align` measured), holding ``{query}`` and ``{passage}``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from connectors.common import inbound
from connectors.common.errors import MemlensError
from dashboard.database.judge_labels import GRADES, RELEVANT_GRADE, judge_source
from dashboard.judging.client import ChatClient, TokenUsage, config_from_environ, decode_json_content

JUDGE_KINDS = ("llm", "cross-encoder")
MAX_REASON_CHARS = 300
MAX_TEXT_CHARS = 4_000  # of a memory in the prompt

GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}, "reason": {"type": "string"}},
    "required": ["grade", "reason"],
    "additionalProperties": False,
}

UMBRELA_PROMPT = """Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:
0 = represents that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and
3 = represents that the passage is dedicated to the query and contains the exact answer.

Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.

The query is a message a user sent to an assistant; the passage is a memory the assistant stored about the user.

Query: {query}
Passage: {passage}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score must be an integer value only.
Answer with a JSON object only: {{"grade": <0-3>, "reason": "<one short sentence>"}}"""


class JudgeError(MemlensError, ValueError):
    """A judge config that cannot be used, or a judge that gave no usable grade."""


class UnusableAnswer(JudgeError):
    """The model answered, twice, with nothing that parses as a grade (counted by
    the run's checks, dashboard/judging/run_check.py)."""


@dataclass(frozen=True)
class Judgment:
    grade: int
    reason: str
    score: float | None = None  # a cross-encoder's raw logit
    attempts: int = 1
    usage: TokenUsage = field(default_factory=TokenUsage)

    @property
    def relevant(self) -> bool:
        return self.grade >= RELEVANT_GRADE


class Judge(Protocol):
    name: str
    model: str

    @property
    def source(self) -> str: ...

    def grade(self, query: str, text: str) -> Judgment: ...


def check_grade(payload: Any) -> list[str]:
    """What is wrong with a judge's answer (empty: usable)."""
    if not isinstance(payload, dict):
        return ["(answer): expected a JSON object with grade and reason"]
    problems = []
    grade = payload.get("grade")
    if "grade" not in payload:
        problems.append("grade: required field is missing")
    elif isinstance(grade, bool) or not isinstance(grade, int) or grade not in GRADES:
        problems.append(f"grade: must be a whole number 0, 1, 2 or 3, got {grade!r}")
    reason = payload.get("reason")
    if "reason" not in payload:
        problems.append("reason: required field is missing")
    elif not isinstance(reason, str) or not reason.strip():
        problems.append("reason: must be a non-empty string")
    for name in payload:
        if name not in ("grade", "reason"):
            problems.append(f"{name}: unexpected field (the answer has grade and reason)")
    return problems


def check_prompt(template: str, where: str) -> str:
    """A prompt variant's text: it must hold {query} and {passage} once each, and any
    other brace doubled (as in UMBRELA_PROMPT's JSON example)."""
    try:
        filled = template.format(query="\x00q", passage="\x00p")
    except (KeyError, IndexError, ValueError) as exc:
        raise JudgeError(f"{where}: the prompt can hold only {{query}} and {{passage}} (write other braces doubled): {exc!r}") from None
    missing = [name for name, mark in (("{query}", "\x00q"), ("{passage}", "\x00p")) if mark not in filled]
    if missing:
        raise JudgeError(f"{where}: the prompt must hold {' and '.join(missing)}")
    return template


class LlmJudge:
    def __init__(self, client: ChatClient, name: str = "umbrela", prompt: str = UMBRELA_PROMPT):
        self.client = client
        self.name = name
        self.model = client.config.model
        self.prompt = prompt

    @property
    def source(self) -> str:
        return judge_source(self.name, self.model)

    def grade(self, query: str, text: str) -> Judgment:
        """The model's grade, checked; asked once more with the problems when the
        first answer is unusable. Raises JudgeError when the second is too, or a
        ConnectorError when the model cannot be reached."""
        messages = [{"role": "user", "content": self.prompt.format(query=query, passage=text[:MAX_TEXT_CHARS])}]
        usage = TokenUsage()
        problems: list[str] = []
        for attempt in (1, 2):
            reply = self.client.complete(messages, schema=GRADE_SCHEMA, schema_name="grade", max_tokens=300)
            usage = usage + reply.usage
            payload, error = decode_json_content(reply.content)
            problems = [error] if error else check_grade(payload)
            if not problems:
                reason = " ".join(str(payload["reason"]).split())[:MAX_REASON_CHARS]
                return Judgment(int(payload["grade"]), reason, attempts=attempt, usage=usage)
            messages = [
                *messages,
                {"role": "assistant", "content": reply.content},
                {"role": "user", "content": "Your answer is unusable:\n" + "\n".join(f"- {p}" for p in problems)
                 + '\nAnswer again with the JSON object only: {"grade": <0-3>, "reason": "..."}'},
            ]
        raise UnusableAnswer(f"{self.source} gave no usable grade after 2 answers: {'; '.join(problems)}")


class CrossEncoderJudge:
    """A cross-encoder from a local directory (never a hub name: nothing is downloaded)."""

    def __init__(self, model_path: str | Path, name: str = "cross-encoder", logit_cutoff: float = 0.0):
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise JudgeError(f"model_path {str(path)!r} is not a folder holding a cross-encoder")
        if not math.isfinite(logit_cutoff):
            raise JudgeError(f"cutoff must be a finite number, got {logit_cutoff!r}")
        self.path = path
        self.name = name
        self.model = path.name
        self.logit_cutoff = float(logit_cutoff)
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        return judge_source(self.name, self.model)

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(str(self.path), device="cpu", local_files_only=True)
            return self._model

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Raw logits (no sigmoid), one per (query, text) pair."""
        import torch

        values = self._loaded().predict(list(pairs), activation_fn=torch.nn.Identity(), show_progress_bar=False)
        return [float(v) for v in values]

    def judgment(self, score: float) -> Judgment:
        relevant = score >= self.logit_cutoff
        side = "at or over" if relevant else "under"
        return Judgment(
            RELEVANT_GRADE if relevant else 0,
            f"cross-encoder score {score:.3f} {side} the cut-off {self.logit_cutoff:g}",
            score=score,
        )

    def grade(self, query: str, text: str) -> Judgment:
        return self.judgment(self.scores([(query, text[:MAX_TEXT_CHARS])])[0])


def calibrate_cutoff(scores: Sequence[float], relevant: Sequence[bool], cost_ratio: float = 1.0) -> float:
    """The cut-off for a cross-encoder's raw scores, chosen on people's labels as a
    floor is: the floor with the least cost (a kept irrelevant pair costing
    `cost_ratio` times a dropped relevant one), from the calibration sweep."""
    from dashboard.calibration.scores import labelled_scores
    from dashboard.calibration.sweep import recommend

    data = labelled_scores(list(scores), [bool(r) for r in relevant])
    return float(recommend(data, cost_ratio, resamples=0).floor)


# ------------------------------------------------------------------ configs


@dataclass(frozen=True)
class JudgeConfig:
    name: str
    kind: str
    model_path: str | None = None
    logit_cutoff: float = 0.0  # the file's `cutoff`: a cross-encoder's raw logit at or over it is relevant
    source_file: str = ""
    prompt: str = UMBRELA_PROMPT  # an llm judge's prompt (prompt_file = "..."; default UMBRELA)
    prompt_file: str | None = None


def load_judge_config(path: str | Path) -> JudgeConfig:
    """A judge config from a TOML or JSON file; errors name the file and the field."""
    where = str(path)
    try:
        text = inbound.read_small(path, "judge config").decode("utf-8")
        data = inbound.load_json(text, where) if where.endswith(".json") else inbound.load_toml(text, where)
    except inbound.InboundError as exc:
        raise JudgeError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise JudgeError(f"{where}: cannot read the judge config: {exc}") from None
    if not isinstance(data, dict):
        raise JudgeError(f"{where}: expected a table of settings")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or "@" in name:
        raise JudgeError(f"{where}: name must be a non-empty string without '@', got {name!r}")
    kind = data.get("kind", "llm")
    if kind not in JUDGE_KINDS:
        raise JudgeError(f"{where}: kind must be one of {', '.join(JUDGE_KINDS)}, got {kind!r}")
    unknown = set(data) - {"name", "kind", "model_path", "cutoff", "prompt_file"}
    if unknown:
        raise JudgeError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
    model_path = data.get("model_path")
    if kind == "cross-encoder" and (not isinstance(model_path, str) or not model_path.strip()):
        raise JudgeError(f"{where}: model_path is required for a cross-encoder judge (a local folder)")
    cutoff = data.get("cutoff", 0.0)
    if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float)) or not math.isfinite(cutoff):
        raise JudgeError(f"{where}: cutoff must be a number, got {cutoff!r}")
    if kind == "cross-encoder" and model_path and not Path(model_path).is_absolute():
        model_path = str((Path(path).parent / model_path).resolve())  # relative to the config file
    prompt_file = data.get("prompt_file")
    prompt = UMBRELA_PROMPT
    if prompt_file is not None:
        if kind != "llm" or not isinstance(prompt_file, str) or not prompt_file.strip():
            raise JudgeError(f"{where}: prompt_file must name a text file, for an llm judge only")
        if not Path(prompt_file).is_absolute():
            prompt_file = str((Path(path).parent / prompt_file).resolve())
        prompt = read_prompt(prompt_file)
    return JudgeConfig(name.strip(), kind, model_path, float(cutoff), where, prompt, prompt_file)


def read_prompt(path: str | Path) -> str:
    """A prompt variant from a text file, checked (check_prompt)."""
    try:
        text = inbound.read_small(path, "prompt").decode("utf-8")
    except inbound.InboundError as exc:
        raise JudgeError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise JudgeError(f"{path}: cannot read the prompt: {exc}") from None
    return check_prompt(text, str(path))


def build_judge(config: JudgeConfig, client: ChatClient | None) -> Judge:
    if config.kind == "cross-encoder":
        assert config.model_path is not None  # checked when the config was read
        return CrossEncoderJudge(config.model_path, config.name, config.logit_cutoff)
    if client is None:
        raise JudgeError(f"{config.source_file}: an llm judge needs a model (set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL)")
    return LlmJudge(client, config.name, config.prompt)



def open_judge(path: str | Path, environ: Mapping[str, str], *, send_text: bool) -> tuple[Judge, ChatClient | None]:
    """The judge a command runs, from its config file, and its model client (None for
    a cross-encoder; the caller closes it). An llm judge gets the model the environment
    names, and only with the caller's consent (--send-text) to send query and memory
    text to it: without it, JudgeError names the host that would have received them.
    A model setting memlens refuses is a ConnectorError."""
    config = load_judge_config(path)
    if config.kind != "llm":
        return build_judge(config, None), None
    model = config_from_environ(dict(environ))
    if model is None:
        raise JudgeError("an llm judge needs a model: set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL")
    if not send_text:
        raise JudgeError(f"the judge would send query and memory text to {model.host} ({model.model}); pass --send-text to allow it")
    client = ChatClient(model, send_text=True)
    try:
        return build_judge(config, client), client
    except BaseException:
        client.close()
        raise

inbound.register_reader(
    inbound.Reader("judge prompt", read_prompt, (JudgeError,), ".txt", {}, rows=False, qualname=f"{__name__}.read_prompt")
)
for _suffix in (".json", ".toml"):
    inbound.register_reader(
        inbound.Reader(
            f"judge config ({_suffix[1:]})", load_judge_config, (JudgeError,), _suffix, {"name": "umbrela", "kind": "llm"},
            rows=False, qualname=f"{__name__}.load_judge_config",
        )
    )
