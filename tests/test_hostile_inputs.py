"""The hostile-input suite, by construction: every file reader registered in
``connectors.common.inbound.READERS`` and every outbound client registered in
``connectors.http.outbound.CLIENTS`` meets the same corpus.

Files: a compression bomb (5,000,000 Parquet rows in under 100 KB), a bad row at
row 5,000,000, year 9999, NaN, a 5,000-digit number, 100,000 brackets, /dev/zero and a
FIFO (each under the reader's own file ending). A reader must refuse with its own
error naming the file, or read and name the bad row (the bomb's rows are all good:
read them); never another exception, never a hang. Servers: a slow drip, a 3xx to another host, a body of terminal escapes, a
password in the URL. A client must fail with a ConnectorError whose message holds no
control character, no key and no password, within its deadline.

The completeness tests fail when a module defines a reader (a ``read_*`` or ``load_*``
function taking a path) or sends HTTP without registering it, when anything but the
boundary builds an HTTP client or imports another HTTP library, and when a client
library (Phoenix's, Langfuse's ...) is built without the boundary's httpx client.
Every surface (a CLI command, an agent-side name, a store factory; derived from the
code in ``hostile_surfaces.py``) needs an entry naming the readers and clients it goes
through, or why it reads none: a new one without fails ``test_every_surface_has_an_entry``
by name, and docs/hostile-input.md holds the entries' table.
Run with ``-s`` for the table of outcomes.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

import hostile_surfaces
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hostile_server import HostileServer

from connectors.base import ConnectorError
from connectors.common import inbound
from connectors.http import outbound

ROOT = Path(__file__).resolve().parents[1]
# Modules that register a reader or a client when imported (the completeness tests
# below find any module that should and is not listed).
REGISTERING = (
    "dashboard.logs.retrieval_log", "dashboard.monitoring.relation", "dashboard.floor_config",
    "dashboard.calibration.label_files", "dashboard.evaluation.judged_sets", "dashboard.evaluation.write_audit", "dashboard.judged",
    "dashboard.judging.judges", "dashboard.labels.people_files", "dashboard.logs.read_log", "connectors.http.json_service",
    "connectors.mem0.library", "dashboard.judging.client", "dashboard.monitoring.webhook", "connectors.http.memorysync", "connectors.mem0.platform",
    "dashboard.logs.phoenix", "dashboard.logs.langfuse", "connectors.mem0.model_clients", "dashboard.cli.store_options",
    "connectors.embedded.importing", "connectors.vector.qdrant",
)  # fmt: skip
for _module in REGISTERING:
    importlib.import_module(_module)

NOT_READERS = {
    "dashboard.logs.read_log.read_log_path": "builds the read log's path; reads nothing",
    "dashboard.demo.load_demo_labels": "the bundled demo labels, through read_label_file's parser",
    "connectors.common.inbound.read_small": "the boundary itself",
    "dashboard.logs.read_log.read_records": "the Quality page's table of the app's own read log (regular files only); "
    "the same file read as a log goes through the retrieval log reader",
    "dashboard.logs.fast_path.read_fast": "read_log's DuckDB path, after read_log's regular-file check",
    "dashboard.logs.streamed.read_streamed": "read_log's path in parts for a file DuckDB will not parse, after the same check",
}
BOUNDARY_MODULES = {"connectors.http.base", "connectors.http.outbound"}
FILE_CASES = (
    "compression bomb", "bad row at 5,000,000", "year 9999", "NaN", "5,000-digit number", "100,000 brackets",
    "/dev/zero", "FIFO",
)  # fmt: skip
SERVER_CASES = ("slow drip", "3xx to another host", "control characters", "password in the URL", "gzip bomb", "body over the cap")
BIG = "1" * 5000
BOMB_ROWS = 5_000_000
TABLE: dict[tuple[str, str], str] = {}
NOT_APPLICABLE = "n/a"


# ------------------------------------------------------------------ completeness


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for package in ("connectors", "dashboard"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _takes_a_path(function: ast.FunctionDef) -> bool:
    arguments = function.args.args
    return bool(arguments) and arguments[0].annotation is not None and "Path" in ast.unparse(arguments[0].annotation)


def test_every_file_reader_is_registered():
    registered = {reader.qualname for reader in inbound.READERS.values()}
    missing = [
        f"{module}.{node.name}"
        for module, tree in _modules()
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and re.match(r"(read|load)_", node.name) and _takes_a_path(node)
        and f"{module}.{node.name}" not in registered | set(NOT_READERS)
    ]  # fmt: skip
    assert not missing, f"register these readers with connectors.common.inbound.register_reader: {missing}"


_SENDS = re.compile(r"^(HttpBoundary|outbound\.request|outbound\.outbound_client|outbound_client|(outbound\.)?library_client|httpx\.(Client|get|post|request|stream)|urlopen|HTTPS?Connection)$")


def test_every_outbound_client_is_registered():
    registered = {client.module for client in outbound.CLIENTS.values()}
    sending = {
        module
        for module, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _SENDS.match(ast.unparse(node.func).split("(")[0].removeprefix("urllib.request."))
    }
    missing = sorted(sending - registered - BOUNDARY_MODULES)
    assert not missing, f"register these clients with connectors.http.outbound.register_client: {missing}"


# Outside the boundary modules nothing builds an HTTP client of its own or sends
# through another HTTP library: a new client goes through connectors/http/outbound.py.
_RAW_HTTPX = {"Client", "AsyncClient", "HTTPTransport", "AsyncHTTPTransport", "get", "post", "put", "patch", "delete", "head", "options", "request", "stream"}
_RAW_LIBRARIES = ("requests", "aiohttp", "urllib3", "urllib.request", "http.client", "pycurl")
# The client classes of HTTP client libraries: each must be handed the boundary's client
# (library_client) as http_client= / httpx_client=. "Client" and "AsyncClient" count
# only where imported from phoenix.client.
_LIBRARY_CLIENTS = {
    "LangfuseAPI", "AsyncLangfuseAPI", "Langfuse", "OpenAI", "AsyncOpenAI", "Anthropic", "MemoryClient", "AsyncMemoryClient",
    "QdrantClient", "AsyncQdrantClient", "HttpClient", "AsyncHttpClient", "CloudClient",
}  # fmt: skip
NOT_UNDER_THE_BOUNDARY = {
    "connectors.vector.qdrant.QdrantClient": "a local folder (QdrantClient(path=...)); the server's client is handed "
    "library_transport",
    "connectors.vector.chroma.HttpClient": "Chroma's client takes no HTTP client of ours; the store the user runs",
}


def _imported_from(tree: ast.Module) -> dict[str, str]:
    """name -> the module it was imported from, for every ``from X import name``."""
    return {
        alias.asname or alias.name: node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }  # fmt: skip


def test_only_the_boundary_builds_an_http_client():
    found = []
    for module, tree in _modules():
        if module in BOUNDARY_MODULES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                if node.func.value.id == "httpx" and node.func.attr in _RAW_HTTPX:
                    found.append(f"{module}: httpx.{node.func.attr}(...)")
            elif isinstance(node, ast.ImportFrom) and node.module == "httpx":
                found += [f"{module}: from httpx import {a.name}" for a in node.names if a.name in _RAW_HTTPX]
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{module}: imports {name}" for name in imported if name.startswith(_RAW_LIBRARIES)]
    assert not found, f"send through connectors.http.outbound (outbound_client / library_client), not: {found}"


def test_every_client_library_sends_through_the_boundary():
    registered = {client.module for client in outbound.CLIENTS.values()}
    found = []
    for module, tree in _modules():
        sources = _imported_from(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
            is_library = name in _LIBRARY_CLIENTS or (name in ("Client", "AsyncClient") and sources.get(name, "").startswith("phoenix."))
            given = {keyword.arg for keyword in node.keywords} & {"http_client", "httpx_client", "transport"}
            # a listed exception covers the calls that are handed nothing (Qdrant's local folder)
            if not is_library or (not given and f"{module}.{name}" in NOT_UNDER_THE_BOUNDARY):
                continue
            if not given or not {"library_client", "library_transport"} & set(re.findall(r"\w+", ast.unparse(tree))):
                found.append(f"{module}: {name}(...) without http_client/httpx_client/transport from outbound.library_client")
            elif module not in registered:
                found.append(f"{module}: {name}(...) is not in the outbound registry (register_client)")
    assert not found, found


# ------------------------------------------------------------------ the file corpus


def _rows(sample: dict[str, Any], count: int) -> list[dict[str, Any]]:
    rows = []
    for index in range(count):
        row = dict(sample)
        for key in ("message_id", "memory_id"):
            if isinstance(row.get(key), str):
                row[key] = f"{row[key]}-{index}"
        rows.append(row)
    return rows


def _date_fields(document: dict[str, Any]) -> list[tuple[dict, str]]:
    found = []
    for key, value in document.items():
        if isinstance(value, str) and re.match(r"^\d{4}-\d\d-\d\d", value):
            found.append((document, key))
        elif isinstance(value, dict):
            found += _date_fields(value)
    return found


def _number_field(document: dict[str, Any]) -> tuple[dict, str] | None:
    for key, value in document.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return document, key
        if isinstance(value, dict) and (inner := _number_field(value)):
            return inner
    return None


def _toml(document: dict[str, Any]) -> str:
    plain = [f"{key} = {_toml_value(value)}" for key, value in document.items() if not isinstance(value, dict)]
    tables = [
        f"[{key}]\n" + "\n".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
        for key, value in document.items() if isinstance(value, dict)
    ]  # fmt: skip
    return "\n".join(plain) + "\n" + "\n".join(tables) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if value == "__BIG__":
        return BIG
    return json.dumps(value)


def _text(reader: inbound.Reader, documents: list[dict[str, Any]]) -> str:
    if reader.suffix == ".toml":
        text = _toml(documents[0])
    elif reader.rows:
        text = "\n".join(json.dumps(document) for document in documents) + "\n"
    else:
        text = json.dumps(documents[0])
    return text.replace('"__BIG__"', BIG)


def _hostile_file(reader: inbound.Reader, case: str, folder: Path) -> Path | None:
    """The case as a file this reader would open, or None where it does not apply."""
    path = folder / f"hostile{reader.suffix}"
    parquet = reader.suffix == ".parquet"
    if case == "/dev/zero":
        path.symlink_to("/dev/zero")
        return path
    if case == "FIFO":
        os.mkfifo(path)
        return path
    if case in ("compression bomb", "bad row at 5,000,000"):
        if not parquet:
            return None  # a text file of five million rows is a benchmark, not a test
        score = np.full(BOMB_ROWS, 0.5)
        if case == "bad row at 5,000,000":
            score[-1] = np.nan
        row = reader.sample
        table = pa.table(
            {
                **{key: pa.array([value] * BOMB_ROWS, pa.string()) for key, value in row.items() if isinstance(value, str)},
                "rank": np.ones(BOMB_ROWS, dtype=np.int64),
                "score": score,
            }
        )
        pq.write_table(table, path)
        return path
    documents = _rows(reader.sample, 3) if reader.rows else [json.loads(json.dumps(reader.sample))]
    target = documents[1] if reader.rows else documents[0]
    if case == "year 9999":
        fields = _date_fields(target)
        if not fields:
            return None
        for holder, key in fields:
            holder[key] = "9999-12-31T23:59:59Z"
    elif case in ("NaN", "5,000-digit number"):
        field = _number_field(target)
        if field is None:
            return None
        holder, key = field
        holder[key] = math.nan if case == "NaN" else "__BIG__"
        if parquet and case == "5,000-digit number":
            # Parquet has no such integer: the column holds text, one value the 5,000 digits
            for document in documents:
                document[key] = str(document[key])
            holder[key] = BIG
    elif case == "100,000 brackets":
        if parquet:
            return None
        deep = "[" * 100_000 + "]" * 100_000
        text = _text(reader, documents)
        if reader.suffix == ".toml":
            text = f"deep = {deep}\n" + text
        elif reader.rows:
            lines = text.splitlines()
            lines[1] = deep
            text = "\n".join(lines) + "\n"
        else:
            text = deep
        path.write_text(text)
        return path
    if parquet:
        pq.write_table(pa.Table.from_pylist(documents), path)
    else:
        path.write_text(_text(reader, documents))
    return path


def _run_with_limit(work, seconds: float, release=None) -> tuple[Any, BaseException | None, bool]:
    """(result, error, finished): `work()` in a thread; past `seconds`, `release()`
    unblocks it (a FIFO gets a writer) and the run counts as a hang."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # everything, RecursionError and MemoryError included
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if release is not None:
            release()
        thread.join(10)
        return None, None, False
    return box.get("result"), box.get("error"), True


def _issues(result: Any) -> list:
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], list):
        return result[1]  # (questions, issues)
    return list(getattr(result, "issues", []) or [])


def _release(path: Path):
    def release() -> None:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass

    return release


@pytest.mark.parametrize("case", FILE_CASES)
@pytest.mark.parametrize("name", sorted(inbound.READERS))
def test_every_reader_refuses_or_names_each_hostile_file(name, case, tmp_path):
    reader = inbound.READERS[name]
    path = _hostile_file(reader, case, tmp_path)
    if path is None:
        TABLE[(name, case)] = NOT_APPLICABLE
        return
    result, error, finished = _run_with_limit(lambda: reader.read(str(path)), 120, _release(path))
    assert finished, f"{name} hung on {case}"
    if error is not None:
        TABLE[(name, case)] = f"refused ({type(error).__name__})"
        assert isinstance(error, reader.errors), f"{name} on {case}: {type(error).__name__}: {str(error)[:300]}"
        assert path.name in str(error), f"{name} on {case}: the message does not name the file: {str(error)[:300]}"
        return
    issues = _issues(result)
    TABLE[(name, case)] = f"read, {len(issues)} bad row(s) named" if issues else "read"
    # the bomb's five million rows are all good: reading them (in bounded memory) is right
    assert issues or case == "compression bomb", f"{name} took {case} without a word"
    assert all(path.name in str(issue) for issue in issues)


# The agent side reads the floor file in the agent's own process, on start-up: each
# hostile floor file is refused by FloorConfig.load with its error, naming the file,
# within a second (no hang on a FIFO, no endless read of /dev/zero, no traceback).
FLOOR_FILES = {
    "400-digit floor": '{"floor": ' + "1" * 400 + "}",
    "5,000-digit floor": '{"floor": ' + BIG + "}",
    "100,000 brackets": "[" * 100_000 + "]" * 100_000,
    "deep segments": '{"floor": 0.3, "segments": ' + '{"user": ' * 200 + "0.3" + "}" * 201,
    "floor as text": '{"floor": "0.35"}',
    "segments as a list": '{"floor": 0.35, "segments": [["user", "sam", 0.28]]}',
    "segment floor as text": '{"floor": 0.35, "segments": {"user": {"sam": "low"}}}',
    "score space as text": '{"floor": 0.35, "score_space": "chroma"}',
    "dates as a number": '{"floor": 0.35, "date_range": {"from": 1, "to": 2}}',
    "store as a number": '{"floor": 0.35, "store": 42}',
    # the rule that reads the whole turn (issue 54): each bad field refused by name
    "rule as text": '{"floor": 0.35, "rule": "learned"}',
    "rule of an unknown kind": '{"floor": 0.35, "rule": {"kind": "oracle"}}',
    "rule feature unknown": '{"floor": 0.35, "rule": {"kind": "learned", "features": ["score", "__import__"], '
    '"coefficients": [1, 1], "intercept": 0, "cut": 0.5}}',
    "rule coefficient as text": '{"floor": 0.35, "rule": {"kind": "learned", "features": ["score"], '
    '"coefficients": ["1"], "intercept": 0, "cut": 0.5}}',
    "rule coefficient of 400 digits": '{"floor": 0.35, "rule": {"kind": "learned", "features": ["score"], '
    '"coefficients": [' + "9" * 400 + '], "intercept": 0, "cut": 0.5}}',
    "rule with 100,000 features": '{"floor": 0.35, "rule": {"kind": "learned", "features": ['
    + ", ".join(['"score"'] * 100_000) + '], "coefficients": [], "intercept": 0, "cut": 0.5}}',
    "rule cut of 1": '{"floor": 0.35, "rule": {"kind": "learned", "features": ["score"], "coefficients": [1], '
    '"intercept": 0, "cut": 1}}',
    "top-ratio cut as null": '{"floor": 0.35, "rule": {"kind": "top-ratio", "cut": null}}',
    "/dev/zero": None,
    "FIFO": None,
}


@pytest.mark.parametrize("case", list(FLOOR_FILES))
def test_floor_config_load_refuses_each_hostile_floor_file_within_a_second(case, tmp_path):
    from dashboard.floor_config import FloorConfig, FloorConfigError

    path = tmp_path / "memlens-floor.json"
    if case == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif case == "FIFO":
        os.mkfifo(path)
    else:
        path.write_text(FLOOR_FILES[case])
    result, error, finished = _run_with_limit(lambda: FloorConfig.load(path), 1.0, _release(path))
    assert finished, f"FloorConfig.load hung on {case}"
    assert isinstance(error, FloorConfigError), f"{case}: {type(error).__name__}: {str(error)[:300]} (read: {result!r})"
    assert str(path) in str(error) and len(str(error)) < 400, str(error)


@pytest.mark.parametrize("case", [case for case, text in FLOOR_FILES.items() if text is not None] + ["over the size bound"])
def test_an_uploaded_floor_file_is_refused_as_the_file_is_naming_the_upload(case):
    """Inspect, Quality and Monitor take a floor file as an upload's bytes: the same
    refusals, named as the visitor knows the file."""
    from dashboard.floor_config import FloorConfig, FloorConfigError

    text = FLOOR_FILES.get(case) or '{"floor": 0.35, "pad": "' + "x" * (1 << 20) + '"}'
    result, error, finished = _run_with_limit(lambda: FloorConfig.from_bytes(text.encode(), "my-floor.json"), 1.0)
    assert finished, f"FloorConfig.from_bytes hung on {case}"
    assert isinstance(error, FloorConfigError), f"{case}: {type(error).__name__}: {str(error)[:300]} (read: {result!r})"
    assert "my-floor.json" in str(error) and len(str(error)) < 400, str(error)


# ------------------------------------------------------------------ the server corpus


def _probe_failure(client: outbound.Client, url: str, deadline: float = 1.0) -> BaseException:
    result, error, finished = _run_with_limit(lambda: client.probe(url, deadline), 20)
    assert finished, f"{client.name} was not cut off by its deadline"
    assert error is not None, f"{client.name} reported success: {result!r}"
    return error


def _clean(client: outbound.Client, error: BaseException) -> str:
    assert isinstance(error, ConnectorError), f"{client.name}: {type(error).__name__}: {error}"
    message = f"{error} {error!r}"
    assert outbound.PROBE_KEY not in message, f"{client.name} quoted its key"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", message), f"{client.name}: control characters in {message!r}"
    return str(error)


@pytest.mark.parametrize("case", SERVER_CASES)
@pytest.mark.parametrize("name", sorted(outbound.CLIENTS))
def test_every_client_meets_each_hostile_server_with_a_clean_failure(name, case):
    client = outbound.CLIENTS[name]
    if case == "slow drip":
        with HostileServer(mode="drip", interval=0.25) as server:
            message = _clean(client, _probe_failure(client, server.url() + "/v1"))
        TABLE[(name, case)] = "cut off at the deadline"
        assert "within 1 s" in message
    elif case == "3xx to another host":
        with HostileServer(mode="ok") as elsewhere, HostileServer(
            mode="redirect", location=elsewhere.url("localhost") + "/moved"
        ) as server:
            message = _clean(client, _probe_failure(client, server.url() + "/v1"))
            assert elsewhere.received == [], f"{name} followed a redirect to another host"
        TABLE[(name, case)] = "not followed, host named"
        assert "localhost" in message
    elif case == "control characters":
        with HostileServer(mode="control") as server:
            _clean(client, _probe_failure(client, server.url() + "/v1"))
        TABLE[(name, case)] = "failed, escapes shown escaped"
    elif case in ("gzip bomb", "body over the cap"):
        # 2 GB inside 2 MB of gzip, and 80 MB as sent: both stop at the one cap
        with HostileServer(mode="bomb" if case == "gzip bomb" else "oversized") as server:
            port = server.port
            message = _clean(client, _probe_failure(client, server.url() + "/v1", deadline=30.0))
        TABLE[(name, case)] = "stopped at the cap, host named"
        assert f"more than {outbound.MAX_BODY_BYTES:,} bytes" in message or f"larger than {outbound.MAX_BODY_BYTES:,} bytes" in message, message
        assert f"127.0.0.1:{port}" in message, f"{name} does not name the host: {message}"
    else:
        with HostileServer(mode="control") as server:
            port = server.port
        message = _clean(client, _probe_failure(client, f"http://memlens:pw-Sekret-9@127.0.0.1:{port}/v1"))
        TABLE[(name, case)] = "failed, password not shown"
        assert "pw-Sekret-9" not in message


# What a client library (Phoenix's, Langfuse's, the OpenAI client inside Mem0) gets
# back goes through the boundary's transport: capped before and after decompression,
# of the content type the library reads, no deeper than the inbound boundary allows,
# and an answer quoting the key in any form memlens derives never prints it.
LIBRARY_CASES = {
    "gzip bomb": ("bomb", "decompresses to more than"),
    "HTML with 200": ("html", "200 text/html"),
    "401 echoing the key": ("echo401", "401"),
    "JSON 5,000 deep": ("deep", "nested deeper than 100 levels"),
}
LIBRARY_CLIENTS = ("langfuse", "mem0-openai", "phoenix", "qdrant")


@pytest.mark.parametrize("case", list(LIBRARY_CASES))
@pytest.mark.parametrize("name", LIBRARY_CLIENTS)
def test_every_client_library_bounds_and_checks_what_comes_back(name, case):
    from connectors.common.redaction import secret_forms

    client = outbound.CLIENTS[name]
    mode, said = LIBRARY_CASES[case]
    with HostileServer(mode=mode) as server:
        message = _clean(client, _probe_failure(client, server.url() + "/v1", deadline=20.0))
        if mode == "echo401":
            sent = server.received[0].headers if server.received else {}
            basic = sent.get("authorization", " ").split(" ", 1)[1]
            assert outbound.PROBE_KEY in str(sent) + str(__import__("base64").b64decode(basic + "==")), (
                "the probe sent no key: nothing was tested"
            )
    leaked = [form for form in secret_forms(outbound.PROBE_KEY) if form in message]
    assert not leaked, f"{name} printed its key as {leaked}: {message}"
    assert said in message, message
    TABLE[(name, case)] = "refused, one line" if mode != "echo401" else "failed, key in no form"


# ------------------------------------------------------------------ every surface
# The surfaces (commands, the agent side's public names, store factories) are derived
# from the code in tests/hostile_surfaces.py; each needs an entry there saying which
# readers and clients above it goes through, or why it reads no outside input.


def _assert_every_surface_has_an_entry(derived: dict[str, list[str]]) -> None:
    without = hostile_surfaces.missing(derived)
    assert not without, (
        f"no hostile-input entry for {', '.join(without)}: add one to tests/hostile_surfaces.py "
        "(the readers and clients it goes through, or why it reads no outside input)"
    )


def test_every_surface_has_an_entry():
    _assert_every_surface_has_an_entry(hostile_surfaces.surfaces())


def _add_fake_surface(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the real table with one surface more (restored after the test)."""
    import dataclasses

    import memlens
    from connectors import catalog
    from dashboard.cli import main

    if kind == "command":
        monkeypatch.setattr(main, "COMMANDS", (*main.COMMANDS, ("fake-surface", "dashboard.cli.fake")))
    elif kind == "agent side":
        monkeypatch.setattr(memlens, "__all__", [*memlens.__all__, "fake-surface"])
        monkeypatch.setattr(memlens, "fake-surface", lambda: None, raising=False)
    else:
        monkeypatch.setattr(catalog, "STORES", [*catalog.STORES, dataclasses.replace(catalog.STORES[0], name="fake-surface")])


@pytest.mark.parametrize("kind", list(hostile_surfaces.ENTRIES))
def test_a_new_surface_without_an_entry_fails_by_name(kind, monkeypatch):
    _add_fake_surface(kind, monkeypatch)
    with pytest.raises(AssertionError, match=f"no hostile-input entry for {kind} 'fake-surface'"):
        _assert_every_surface_has_an_entry(hostile_surfaces.surfaces())


def test_every_entry_is_a_surface_and_names_registered_readers_and_clients():
    derived = hostile_surfaces.surfaces()
    for kind, entries in hostile_surfaces.ENTRIES.items():
        stale = sorted(set(entries) - set(derived[kind]))
        assert not stale, f"entries for {kind} surfaces the code no longer has: {stale}"
        for name, entry in entries.items():
            unknown = (set(entry.readers) - set(inbound.READERS)) | (set(entry.clients) - set(outbound.CLIENTS))
            assert not unknown, f"{name}: {sorted(unknown)} is no reader in READERS nor client in CLIENTS"
            meets = entry.readers or entry.clients or entry.stores or entry.other
            assert bool(meets) != bool(entry.none), f"{name}: say what it meets, or why it reads no outside input (not both)"


DOC = ROOT / "docs" / "hostile-input.md"
DOC_START = "<!-- surfaces: generated from tests/hostile_surfaces.py (render); edit the entries, not this table -->"
DOC_END = "<!-- end of surfaces -->"


def test_the_surface_table_in_the_doc_is_the_suites():
    """docs/hostile-input.md holds render()'s table between its markers; on a
    difference, the expected table is in the message (paste it between the markers)."""
    text = DOC.read_text(encoding="utf-8")
    assert DOC_START in text and DOC_END in text, f"{DOC}: the markers of the surface table are missing"
    committed = text.split(DOC_START, 1)[1].split(DOC_END, 1)[0].strip("\n") + "\n"
    expected = hostile_surfaces.render()
    assert committed == expected, f"{DOC} differs from the suite's entries; the table should read:\n\n{expected}"


def test_zz_the_table_covers_every_reader_and_client():
    """Printed with -s: the outcome of every case (run last, after the others)."""
    rows = [(name, FILE_CASES) for name in sorted(inbound.READERS)] + [(name, SERVER_CASES) for name in sorted(outbound.CLIENTS)]
    lines = []
    for name, cases in rows:
        lines.append(f"| {name} | " + " | ".join(TABLE.get((name, case), "not run") for case in cases) + " |")
    print("\n| reader | " + " | ".join(FILE_CASES) + " |")
    print("\n".join(lines[: len(inbound.READERS)]))
    print("\n| client | " + " | ".join(SERVER_CASES) + " |")
    print("\n".join(lines[len(inbound.READERS) :]))
    assert len(inbound.READERS) >= 10 and len(outbound.CLIENTS) >= 5
