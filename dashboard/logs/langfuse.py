"""Langfuse both ways: RETRIEVER observations in as a retrieval log, labels out as
scores on the observation. Pure (no streamlit); the Langfuse SDK's generated API
client (the ``memlens[langfuse]`` extra) is imported only here, only when used.

In: every observation of type RETRIEVER whose start lies in [start, end) is a turn
(``message_id`` = the observation id), read with the public API's observations
endpoint (v2: cursor pages, the ``io`` field group for the output). Its documents are
its output: a list of objects, or ``{"documents": [...]}``, each with an id (``id``,
``memory_id``, ``document_id`` or ``document.id``) and a ``score``; rank = position + 1.
An observation whose output holds no document is an empty turn. Ids and scores only.

Out: people's labels and judge labels of documents of those observations, as scores
named ``relevance`` on the observation (BOOLEAN, 1 relevant / 0 not; source ANNOTATION
for people, API for judges: Langfuse takes no other), with the memory id, its rank and who labelled in the
metadata. Each score has an id derived from (observation, memory, people or judges),
and Langfuse keeps one score per id: a re-run replaces, never adds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from connectors.base import ConnectorError
from connectors.common.errors import MemlensError
from connectors.common.inbound import InboundError, finite_number, load_json
from connectors.common.redaction import redact_text, remember_secrets, terminal_line

SCORE = "relevance"
INSTALL_HINT = "pip install 'memlens[langfuse]'"
PAGE = 500
ID_CHUNK = 100
READ_SECONDS = 60.0  # per read (the SDK's own default)
DEADLINE_SECONDS = 300.0  # per request in all: a server dripping bytes cannot hold a pull
# A pull in all: a server that never ends its pages cannot hold it either.
MAX_PAGES = 2_000  # a million observations at PAGE a page
PULL_SECONDS = 3_600.0
_ID_KEYS = ("id", "memory_id", "document_id", "document.id")


class LangfuseError(MemlensError):
    """Langfuse could not be reached or refused; the text never holds a key."""


@dataclass
class Pushed:
    human: int = 0
    llm: int = 0
    observations: int = 0
    not_found: list[tuple[str, str]] = field(default_factory=list)


def client(url: str, public_key: str, secret_key: str, *, deadline: float = DEADLINE_SECONDS) -> Any:
    """The SDK's API client, sending through the outbound boundary (connectors/http/
    outbound.py): ``deadline`` seconds in all per request, redirects only within the
    server, neither key in a message. A key holding a control character is refused."""
    from connectors.http.outbound import check_credential, library_client, public_url

    try:
        from langfuse.api.client import LangfuseAPI
    except ImportError:
        raise LangfuseError(f"Langfuse needs its client: {INSTALL_HINT}") from None
    try:
        check_credential("$LANGFUSE_PUBLIC_KEY", public_key)
        check_credential("$LANGFUSE_SECRET_KEY", secret_key)
    except ConnectorError as exc:
        raise LangfuseError(str(exc)) from None
    # the SDK sends both keys as a Basic header: its credentials are a secret of their
    # own, so their every form (reversed, encoded again) is redacted too
    pair = f"{public_key}:{secret_key}"
    secrets = [public_key, secret_key, pair, base64.b64encode(pair.encode()).decode()]
    remember_secrets(secrets)
    http = library_client(
        url, what=f"Langfuse at {public_url(url)}", timeout=READ_SECONDS, deadline=deadline, secrets=secrets,
        content_types=("application/json",),
    )
    return LangfuseAPI(
        base_url=url.rstrip("/"), username=public_key, password=secret_key, x_langfuse_public_key=public_key, httpx_client=http
    )


def _call(what: str, secrets: list[str | None], fn: Any, *args: Any, **kwargs: Any) -> Any:
    """One request to Langfuse, its failure as a LangfuseError, redacted and on one
    terminal-safe line (an error body is the server's text)."""
    try:
        return fn(*args, **kwargs)
    except ConnectorError as exc:  # the outbound boundary's own words: the host, never a key
        raise LangfuseError(terminal_line(f"Langfuse {what}: {redact_text(str(exc), secrets)}")) from None
    except Exception as exc:
        raise LangfuseError(terminal_line(f"Langfuse {what}: {type(exc).__name__}: {redact_text(str(exc), secrets)}")) from None


def documents(output: Any) -> list[tuple[str | None, float | None]]:
    """(memory id, score) of each document of a RETRIEVER observation's output."""
    if isinstance(output, str):
        try:
            output = load_json(output, "the observation's output")  # bounded nesting and numbers
        except InboundError:
            return []
    if isinstance(output, dict):
        output = output.get("documents")
    if not isinstance(output, list):
        return []
    found = []
    for item in output:
        if not isinstance(item, dict):
            continue
        memory_id = next((item[key] for key in _ID_KEYS if item.get(key) not in (None, "")), None)
        score = item.get("score", item.get("document.score"))
        # a score no float holds (401 digits) is no score, not an OverflowError
        found.append((None if memory_id is None else str(memory_id), finite_number(score)))
    return found


def _observations(
    api: Any, secrets: list[str | None], *, max_pages: int = MAX_PAGES, seconds: float = PULL_SECONDS, **filters: Any
) -> list[Any]:
    """Every RETRIEVER observation matching `filters`, following the cursor: at most
    `max_pages` pages within `seconds` in all, and a cursor the server sent before
    ends the pull (it would repeat the same pages for ever)."""
    found: list[Any] = []
    cursor = None
    seen: set[str] = set()
    started = time.monotonic()
    for pages in range(1, max_pages + 1):
        page = _call(
            "observations", secrets, api.observations.get_many, type="RETRIEVER", fields="core,basic,io", limit=PAGE, cursor=cursor, **filters
        )
        found.extend(page.data)
        cursor = page.meta.cursor
        if not cursor or not page.data:
            return found
        if cursor in seen:
            raise LangfuseError(
                f"Langfuse observations: the server sent the same page cursor again after {pages:,} page(s); "
                "memlens stopped instead of reading the same pages again (is a proxy replaying answers?)"
            )
        seen.add(cursor)
        if time.monotonic() - started > seconds:
            raise LangfuseError(
                f"Langfuse observations: {pages:,} page(s) took more than {seconds:g} s in all; narrow --from/--to"
            )
    raise LangfuseError(f"Langfuse observations: more than {max_pages:,} pages of {PAGE} observations; narrow --from/--to")


def read_observations(
    api: Any, *, start: datetime | None = None, end: datetime | None = None, secrets: list[str | None] | None = None
) -> list[dict[str, Any]]:
    """The log rows of the RETRIEVER observations started in [start, end), in start order."""
    observations = _observations(api, secrets or [], from_start_time=start, to_start_time=end)
    rows: list[dict[str, Any]] = []
    for observation in sorted(observations, key=lambda o: (o.start_time, o.id)):
        stamp = observation.start_time.isoformat().replace("+00:00", "Z")
        base = {"message_id": observation.id, "timestamp": stamp, "store": "langfuse"}
        if observation.user_id:
            base["user_id"] = observation.user_id
        found = documents(observation.output)
        if not found:
            rows.append(base)
            continue
        for position, (memory_id, score) in enumerate(found):
            rows.append({**base, "memory_id": memory_id, "rank": position + 1, "score": score})
    return rows


# ------------------------------------------------------------------ out


def lookup(api: Any, observation_ids: Iterable[str], secrets: list[str | None] | None = None) -> dict[str, tuple[str | None, dict[str, int]]]:
    """observation id -> (its trace id, {memory id: rank}) for RETRIEVER observations."""
    wanted = sorted(set(observation_ids))
    found: dict[str, tuple[str | None, dict[str, int]]] = {}
    for first in range(0, len(wanted), ID_CHUNK):
        chunk = wanted[first : first + ID_CHUNK]
        condition = json.dumps([{"type": "stringOptions", "column": "id", "operator": "any of", "value": chunk}])
        for observation in _observations(api, secrets or [], filter=condition):
            ranks: dict[str, int] = {}
            for position, (memory_id, _) in enumerate(documents(observation.output)):
                if memory_id is not None:
                    ranks.setdefault(memory_id, position + 1)
            found[observation.id] = (observation.trace_id, ranks)
    return found


def score_id(observation_id: str, memory_id: str, kind: str) -> str:
    """The same id on every run, so Langfuse replaces the score instead of adding one."""
    return "memlens-" + hashlib.sha256(f"{observation_id}\x1f{memory_id}\x1f{kind}".encode()).hexdigest()[:32]


def label_scores(
    people: Iterable[Any], judges: Iterable[Any], observations: dict[str, tuple[str | None, dict[str, int]]], *, relevant_grade: int
) -> tuple[list[dict[str, Any]], Pushed]:
    """One score per labelled document and kind (people: their majority, a tie
    relevant; judges: relevant at `relevant_grade`), for documents of the observations."""
    from dashboard.database.model import RELEVANT

    votes: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for label in people:
        votes.setdefault((label.message_id, label.memory_id), []).append((label.reviewer, label.label == RELEVANT))
    grades: dict[tuple[str, str], list[tuple[str, bool, int]]] = {}
    for judged in judges:
        grades.setdefault((judged.message_id, judged.memory_id), []).append((judged.source, judged.grade >= relevant_grade, judged.grade))
    verdicts: list[tuple[tuple[str, str], str, list[bool], dict[str, Any]]] = [
        (pair, "human", [vote for _, vote in given], {"reviewers": sorted(name for name, _ in given)}) for pair, given in sorted(votes.items())
    ]
    verdicts += [
        (pair, "llm", [vote for _, vote, _ in given], {"judges": sorted(s for s, _, _ in given), "grades": [g for _, _, g in sorted(given)]})
        for pair, given in sorted(grades.items())
    ]
    scores: list[dict[str, Any]] = []
    pushed = Pushed()
    seen: set[str] = set()
    for (observation_id, memory_id), kind, relevant, metadata in verdicts:
        trace_id, ranks = observations.get(observation_id, (None, {}))
        if memory_id not in ranks:
            pushed.not_found.append((observation_id, memory_id))
            continue
        verdict = 2 * sum(relevant) >= len(relevant)
        scores.append(
            {  # the SDK's CreateScoreRequest fields; sent as traceId, observationId, dataType
                "id": score_id(observation_id, memory_id, kind),
                "trace_id": trace_id,
                "observation_id": observation_id,
                "name": SCORE,
                "value": 1.0 if verdict else 0.0,
                "data_type": "BOOLEAN",
                "source": "ANNOTATION" if kind == "human" else "API",
                "metadata": {"memory_id": memory_id, "rank": ranks[memory_id], "from": "memlens", **metadata},
            }
        )
        seen.add(observation_id)
        if kind == "human":
            pushed.human += 1
        else:
            pushed.llm += 1
    pushed.observations = len(seen)
    return scores, pushed


def push_scores(api: Any, scores: list[dict[str, Any]], secrets: list[str | None] | None = None, chunk: int = 100) -> None:
    """Send the scores in batches; a batch Langfuse partly rejects is an error naming why."""
    from langfuse.api.scores.types.create_score_request import CreateScoreRequest

    for first in range(0, len(scores), chunk):
        batch = [CreateScoreRequest(**score) for score in scores[first : first + chunk]]
        answer = _call("scores", secrets or [], api.scores.create, request=batch)
        errors = getattr(answer, "errors", None)
        if errors:
            raise LangfuseError(terminal_line(f"Langfuse scores: {len(errors)} rejected: {redact_text(str(errors[:3]), secrets or [])}"))


def _probe(url: str, deadline: float) -> None:
    """One observations page through this module (the outbound registry's probe); a
    problem raises, as a connector error."""
    from connectors.base import BadResponse
    from connectors.http.outbound import PROBE_KEY

    try:
        read_observations(client(url, "pk-lf-probe", PROBE_KEY, deadline=deadline), secrets=["pk-lf-probe", PROBE_KEY])
    except LangfuseError as exc:
        raise BadResponse(str(exc)) from None


def _register() -> None:
    from connectors.http.outbound import register_client

    register_client("langfuse", _probe, __name__)


_register()
