"""The optional capabilities each store declares, as the pages read them: the sidebar
lists users only for a store that can name them (and preselects its default user),
the rank lookup asks with a store's own largest k, and the page warns when a query
itself bumps usage counts."""

from __future__ import annotations

import json

import httpx

from connectors.base import HasDefaultUser, HasMaxK, QueriesBumpUsage, SupportsFeedback, SupportsUsers
from connectors.embedded.store import EmbeddedStore
from connectors.http.json_service import HttpJsonStore, parse_config
from connectors.http.memorysync import MemorySyncStore
from dashboard.logs.read_log import LoggedStore
from dashboard.ranking.rank_lookup import DEFAULT_LOOKUP_K, find_rank, lookup_k

SERVICE = {
    "base_url": "http://svc.test",
    "path": "/search",
    "request": {"body": {"q": "{query}", "limit": "{k}"}},
    "response": {"results": "hits", "id": "id", "text": "text", "score": "score"},
}


def test_the_embedded_store_names_its_users_and_suggests_one(demo_store: EmbeddedStore):
    assert isinstance(demo_store, SupportsUsers) and isinstance(demo_store, HasDefaultUser)
    assert "sam" in demo_store.users() and demo_store.default_user == "sam"
    assert isinstance(demo_store, SupportsFeedback)
    # No limit of its own and no usage bump from a query.
    assert not isinstance(demo_store, HasMaxK) and not isinstance(demo_store, QueriesBumpUsage)
    assert lookup_k(demo_store) == (DEFAULT_LOOKUP_K, False)


def test_memorysync_states_its_limit_and_that_queries_bump_usage(memorysync_server):
    store = MemorySyncStore(memorysync_server.url, memorysync_server.api_key, end_user_id="sam")
    try:
        assert isinstance(store, QueriesBumpUsage) and store.queries_bump_usage
        assert isinstance(store, HasDefaultUser) and store.default_user == "sam"
        assert not isinstance(store, SupportsUsers)  # its API cannot list users
        assert isinstance(store, HasMaxK) and store.max_k
        assert lookup_k(store) == (store.max_k, True)
        # The rank lookup queries through the read-log wrapper, which passes capabilities on.
        logged = LoggedStore(store, store_fingerprint="memorysync:test", source="rank_lookup")
        assert isinstance(logged, HasMaxK) and lookup_k(logged) == (store.max_k, True)
    finally:
        store.close()


def test_an_http_json_store_asks_with_the_limit_its_config_names():
    asked: list[int] = []

    def service(request: httpx.Request) -> httpx.Response:
        asked.append(json.loads(request.content)["limit"])
        return httpx.Response(200, json={"hits": [{"id": "a", "text": "t", "score": 0.5}]})

    limited = HttpJsonStore(parse_config({**SERVICE, "max_k": 7}), client=httpx.Client(transport=httpx.MockTransport(service)))
    assert lookup_k(limited) == (7, True)
    lookup = find_rank(limited, "q", "a", user_id=None, table_hits=[])
    assert asked == [7] and lookup.k == 7 and lookup.k_is_store_limit and lookup.found

    # A config that names no limit: the attribute is there but None, so the lookup's own k applies.
    unlimited = HttpJsonStore(parse_config(SERVICE), client=httpx.Client(transport=httpx.MockTransport(service)))
    assert unlimited.max_k is None and lookup_k(unlimited) == (DEFAULT_LOOKUP_K, False)
    assert not isinstance(unlimited, SupportsUsers) and not isinstance(unlimited, QueriesBumpUsage)
