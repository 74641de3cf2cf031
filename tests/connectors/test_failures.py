"""A store that refuses the connection is StoreUnavailable and one that never answers
is StoreTimeout in every connector that calls a client library, told by the type of
the library's exception (connectors/common/failures.py), never by its message. Every
failure here is a real one: a loopback port nothing listens on, or a loopback server
that accepts and never replies."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import chromadb
import httpx
import lancedb
import langgraph_factory
import psycopg
import pytest
import requests
from ports import closed_port, silent_url
from qdrant_client import QdrantClient

from connectors.base import BadResponse, InvalidRequest, StoreTimeout, StoreUnavailable, check_query
from connectors.common.failures import call_library, failure_kind
from connectors.vector.lancedb_store import open_store as open_lancedb
from connectors.vector.langgraph_store import open_store as open_langgraph

REMOTE_EMBEDDER_FACTORY = "langgraph_factory:remote_embedder_store"


@pytest.fixture
def refused_url() -> str:
    return f"http://127.0.0.1:{closed_port()}"


@pytest.fixture(name="silent_url")
def silent_url_fixture() -> Iterator[str]:
    with silent_url() as url:
        yield url


def raised_by(fn, *args, **kwargs) -> Exception:
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        return exc
    raise AssertionError("expected the call to fail")


def test_each_librarys_refused_connection_is_unavailable(refused_url):
    port = int(refused_url.rsplit(":", 1)[1])
    refused = {
        "socket": raised_by(socket.create_connection, ("127.0.0.1", port), timeout=2),
        "httpx": raised_by(httpx.get, refused_url, timeout=2),
        "requests": raised_by(requests.get, refused_url, timeout=2),
        # qdrant_client wraps the httpx error in its ResponseHandlingException
        "qdrant_client": raised_by(QdrantClient(url=refused_url, timeout=2, check_compatibility=False).collection_exists, "memories"),
        # chromadb raises a ValueError from the httpx error
        "chromadb": raised_by(chromadb.HttpClient, host="127.0.0.1", port=port),
        "psycopg": raised_by(psycopg.connect, f"postgresql://u@127.0.0.1:{port}/db", connect_timeout=2),
    }
    assert {name: failure_kind(exc) for name, exc in refused.items()} == dict.fromkeys(refused, StoreUnavailable)


def test_each_librarys_timeout_is_a_timeout(silent_url):
    host, port = silent_url.removeprefix("http://").split(":")
    quiet = socket.create_connection((host, int(port)), timeout=0.5)
    try:
        timed_out = {
            "socket": raised_by(quiet.recv, 1),
            "httpx": raised_by(httpx.get, silent_url, timeout=0.5),
            "requests": raised_by(requests.get, silent_url, timeout=0.5),
            "qdrant_client": raised_by(QdrantClient(url=silent_url, timeout=1, check_compatibility=False).collection_exists, "memories"),
        }
    finally:
        quiet.close()
    assert {name: failure_kind(exc) for name, exc in timed_out.items()} == dict.fromkeys(timed_out, StoreTimeout)


def test_the_message_of_an_exception_does_not_decide():
    # A store's own error that merely says "timed out" or "connect" is not a timeout
    # or an unreachable store: the store answered.
    assert failure_kind(ValueError("upstream timed out")) is None
    assert failure_kind(RuntimeError("could not connect the dots")) is None
    error = raised_by(call_library, "LanceDB", "search on 'memories'", "/data", _raise, ValueError("timed out"))
    assert type(error) is BadResponse and str(error) == "LanceDB search on 'memories' failed: ValueError: timed out"


def _raise(exc: Exception) -> None:
    raise exc


@pytest.fixture
def lancedb_store(tmp_path):
    db = lancedb.connect(str(tmp_path))
    db.create_table("memories", data=[{"id": "m1", "text": "three dims", "user_id": "sam", "vector": [1.0, 0.0, 0.0]}])
    return open_lancedb(str(tmp_path), table="memories", created_at_column="")


def test_lancedb_turns_a_refused_connection_into_unavailable(lancedb_store, refused_url, tmp_path):
    # Before: every failure of a LanceDB call was BadResponse, a refused connection too.
    with pytest.raises(StoreUnavailable, match=f"LanceDB at {tmp_path} is unreachable \\(ConnectError\\)"):
        lancedb_store._call("search", httpx.get, refused_url, timeout=2)
    with pytest.raises(StoreTimeout, match="LanceDB search on 'memories': timed out"):
        with silent_url() as url:
            lancedb_store._call("search", httpx.get, url, timeout=0.5)


def test_langgraph_store_whose_embedding_service_refuses_is_unavailable(monkeypatch, refused_url):
    # Before: BadResponse("LangGraph embed a probe failed: ConnectError: ...").
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORY", REMOTE_EMBEDDER_FACTORY)  # as the operator allows it
    monkeypatch.setattr(langgraph_factory, "EMBEDDER_URL", refused_url + "/embed")
    with pytest.raises(StoreUnavailable, match=r"LangGraph embed a probe: unreachable \(ConnectError\)"):
        open_langgraph(REMOTE_EMBEDDER_FACTORY, namespace="memories,{user_id}")


def test_langgraph_store_whose_embedding_service_never_answers_is_a_timeout(monkeypatch, silent_url):
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORY", REMOTE_EMBEDDER_FACTORY)  # as the operator allows it
    monkeypatch.setattr(langgraph_factory, "EMBEDDER_URL", silent_url + "/embed")
    with pytest.raises(StoreTimeout, match="LangGraph embed a probe: timed out"):
        open_langgraph(REMOTE_EMBEDDER_FACTORY, namespace="memories,{user_id}")


@pytest.mark.parametrize(
    ("text", "k", "message"),
    [
        ("", 5, "The query is empty: type the message the agent would query with."),
        ("   \n", 5, "The query is empty: type the message the agent would query with."),
        ("Where does the user live?", 0, "k must be at least 1, got 0"),
    ],
)
def test_the_query_arguments_are_refused_alike_by_every_connector(lancedb_store, text, k, message):
    with pytest.raises(InvalidRequest) as checked:
        check_query(text, k)
    assert str(checked.value) == message
    with pytest.raises(InvalidRequest) as queried:
        lancedb_store.query(text, user_id="sam", k=k)
    assert str(queried.value) == message
