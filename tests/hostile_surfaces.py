"""Every surface memlens has, and the hostile inputs each meets (issue 52).

The surfaces are derived from the code (``surfaces()``): every subcommand in the CLI's
command table (plus ``run`` and the ``judge align`` action), every public name of the
agent side, every store factory in the registry. Each needs an entry in ``ENTRIES``:
the file readers it goes through (keys of ``connectors.common.inbound.READERS``), the
outbound clients it uses (keys of ``connectors.http.outbound.CLIENTS``), whether it
opens a store of the registry (then it meets what that store's entry meets), other
outside input and where it stands, or, when it reads no outside input, why.

An entry whose ``other`` begins with ``GAP:`` names outside input read *outside* the
boundary: reported, not yet fixed. ``render()`` is the table in docs/hostile-input.md.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

STORES_OF_THE_REGISTRY = "the store's own (see Stores)"


@dataclass(frozen=True)
class Entry:
    readers: tuple[str, ...] = ()  # keys of inbound.READERS
    clients: tuple[str, ...] = ()  # keys of outbound.CLIENTS
    stores: bool = False  # opens a store of the registry: meets what that store meets
    other: str = ""  # other outside input; "GAP: ..." when it is not under the boundary
    none: str = ""  # "reads no outside input": why (only when nothing above applies)


_DATABASE = "reads only the app's database (memlens's own file or the --labels URL memlens wrote)"
_JUDGE = ("judge config (json)", "judge config (toml)", "judge prompt")
_LOGS = ("retrieval log (jsonl)", "retrieval log (parquet)")
# The store's --config of eval, judge, judge align, rank and monitor --judge.
_STORE_CONFIG = "store config"

COMMANDS: dict[str, Entry] = {
    "run": Entry(none="starts `streamlit run`; the pages read files and stores through the readers and stores listed here"),
    "calibrate": Entry(readers=("label file",)),
    "agreement": Entry(readers=("people labels",)),
    "import": Entry(readers=("memories file",)),
    "eval": Entry(readers=("judged set", _STORE_CONFIG), stores=True),
    "compare": Entry(none="two saved runs; " + _DATABASE),
    "runs": Entry(stores=True, other="list and export read only the app's database; resume asks the run's store"),
    "misses": Entry(readers=("floor config",), stores=True,
                    other="a saved run from the app's database; the store for the missed memories' text"),
    "write-audit": Entry(readers=("conversations file", "judged questions", "Mem0 config"), clients=("mem0-openai",)),
    "whatif": Entry(none="a saved run's results; " + _DATABASE),
    "logs": Entry(readers=_LOGS),
    "judge": Entry(readers=(*_LOGS, *_JUDGE, _STORE_CONFIG), clients=("model",), stores=True),
    "judge align": Entry(readers=("people labels", *_LOGS, *_JUDGE, _STORE_CONFIG), clients=("model",), stores=True),
    "rank": Entry(readers=(*_LOGS, _STORE_CONFIG), clients=("model",), stores=True),
    "monitor": Entry(readers=("monitor logs (jsonl)", "monitor logs (parquet)", "floor config", *_JUDGE, _STORE_CONFIG),
                     clients=("webhook", "model"), stores=True,
                     other="--connect: a database's rows, checked in the engine's query (dashboard.monitoring.warehouse): "
                           "a row with a NaN or infinite score or a time outside 1970-2200 (infinity, year 9999) is "
                           "counted and left out there, as the file run does"),
    "phoenix": Entry(clients=("phoenix",)),
    "langfuse": Entry(clients=("langfuse",)),
    "labels": Entry(readers=("people labels",), other="export, adjudicate and history read only the app's database"),
    "sessions": Entry(none=_DATABASE),
}  # fmt: skip

# The agent side: what `import memlens` offers. A class is a surface (its constructor),
# and so is each of its public class methods; an error class reads nothing.
AGENT_SIDE: dict[str, Entry] = {
    "FloorConfig": Entry(none="built from the agent's own values (FloorConfig(floor=0.35)); the file is FloorConfig.load"),
    "FloorConfig.load": Entry(readers=("floor config",)),
    "FloorConfig.from_bytes": Entry(other="a floor file's bytes a page was handed (an upload): the size bound, then the "
                                    "same parse and field checks as FloorConfig.load (the hostile floor files)"),
    "RetrievalLog": Entry(none="writes the log; a bad path is refused when the log is made, later failures counted"),
    "RetrievalSpans": Entry(none="writes spans through the agent's own tracer"),
    "Turn": Entry(none="the result memory_for_prompt returns, built by memlens"),
    "create_store": Entry(stores=True),
    "memory_for_prompt": Entry(stores=True, other="the hits are read as memory_from_hits reads them"),
    "memory_from_hits": Entry(other="hits the agent hands in: scores through as_score (finite numbers or none), "
                                    "ids and text through as_text"),
    "send_feedback": Entry(stores=True),
}  # fmt: skip

STORES: dict[str, Entry] = {
    "embedded": Entry(other="a local SQLite file (db_path), opened by sqlite3; memories come in through `memlens import`"),
    "memorysync": Entry(clients=("memorysync",)),
    "http_json": Entry(readers=("HTTP JSON store config",), clients=("http_json",)),
    "mem0": Entry(readers=("Mem0 config",), clients=("mem0-openai",)),
    "mem0_platform": Entry(clients=("mem0_platform",)),
    "qdrant": Entry(clients=("qdrant",), other="a local folder, through the library"),
    "chroma": Entry(other="GAP: chromadb.HttpClient builds its own httpx.Client(timeout=None) and takes no client, "
                          "transport or httpx argument (it asks the server in the constructor); a local folder by the library"),
    "pgvector": Entry(other="a PostgreSQL connection (psycopg); not HTTP, so outside the outbound boundary"),
    "langgraph": Entry(other="a LangGraph store object or its database, through the library"),
    "lancedb": Entry(other="a local LanceDB folder, through the library"),
}  # fmt: skip

ENTRIES: dict[str, dict[str, Entry]] = {"command": COMMANDS, "agent side": AGENT_SIDE, "store": STORES}


def surfaces() -> dict[str, list[str]]:
    """Every surface, read from the code: the command table, the agent side's public
    names, the store registry."""
    import memlens
    from connectors import catalog
    from dashboard import runtime
    from dashboard.cli import main

    agent = []
    for name in sorted(set(memlens.__all__) | set(runtime.__all__)):
        value = getattr(memlens, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            continue  # an error: raised, reads nothing
        agent.append(name)
        if inspect.isclass(value):
            agent += [f"{name}.{method}" for method, member in vars(value).items()
                      if isinstance(member, (classmethod, staticmethod)) and not method.startswith("_")]  # fmt: skip
    return {
        "command": ["run", *(name for name, _ in main.COMMANDS), "judge align"],
        "agent side": agent,
        "store": [spec.name for spec in catalog.STORES],
    }


def missing(derived: dict[str, list[str]]) -> list[str]:
    """The surfaces in ``derived`` that have no entry, as "kind name"."""
    return [f"{kind} {name!r}" for kind, names in derived.items() for name in names if name not in ENTRIES[kind]]


def render() -> str:
    """The table of surfaces x hostile inputs, as docs/hostile-input.md holds it."""
    lines = [
        "| surface | files read (hostile-file corpus) | remotes asked (hostile-server corpus) | other outside input |",
        "| --- | --- | --- | --- |",
    ]
    for kind, entries in ENTRIES.items():
        for name, entry in entries.items():
            remotes = list(entry.clients) + ([STORES_OF_THE_REGISTRY] if entry.stores else [])
            other = entry.other or (f"none: {entry.none}" if entry.none else "")
            label = f"`memlens {name}`" if kind == "command" else f"{kind}: `{name}`"
            lines.append(f"| {label} | {', '.join(entry.readers) or '-'} | {', '.join(remotes) or '-'} | {other or '-'} |")
    return "\n".join(lines) + "\n"
