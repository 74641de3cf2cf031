"""The part the vector-database connectors share (connectors/vector/fields.py): a
server that refuses or never answers becomes the error a page shows, naming the
store and where it is, and sidebar settings left empty mean the defaults."""

from __future__ import annotations

import pytest
from ports import closed_port, silent_url

from connectors.base import StoreTimeout, StoreUnavailable
from connectors.registry import create_store
from connectors.vector.chroma import ChromaStore
from connectors.vector.fields import PayloadFields
from connectors.vector.qdrant import QdrantStore


def test_a_server_that_refuses_is_store_unavailable_naming_where():
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(StoreUnavailable, match=f"Qdrant at {url} refused the connection or could not be reached: "):
        QdrantStore("memories", url=url, timeout=2)
    with pytest.raises(StoreUnavailable, match=f"Chroma at {url}"):
        ChromaStore("memories", url=url)


def test_a_server_that_never_answers_is_a_timeout():
    with silent_url() as url:
        with pytest.raises(StoreTimeout, match="Qdrant at http://127.0.0.1:[0-9]+ did not answer GET /collections/memories/exists within 1 s"):
            QdrantStore("memories", url=url, timeout=1)


def test_empty_settings_mean_the_defaults_and_a_named_key_is_read():
    fields = PayloadFields.from_options(id_field="", text_field="", created_at_field="", user_field="")
    assert fields == PayloadFields(id_field=None, text_field="text", created_at_field=None, user_field="user_id")
    payload = {"uid": "n-7", "text": 12, "user_id": "ana", "created_at": "2024-05-01T10:00:00Z"}
    assert (fields.memory_id(7, payload), fields.text(payload), fields.user(payload)) == ("7", "12", "ana")
    assert fields.created_at(payload) is None  # no created_at key configured
    named = PayloadFields.from_options(id_field="uid")
    assert named.memory_id(7, payload) == "n-7" and named.memory_id(8, {}) == "8"
    assert named.created_at(payload).isoformat() == "2024-05-01T10:00:00+00:00"
    assert named.text({}) == ""


def test_the_registry_checks_the_folder_before_the_url(tmp_path):
    # A folder that does not exist is reported even when a URL is given too: the folder wins.
    with pytest.raises(StoreUnavailable, match="No Qdrant folder"):
        create_store("qdrant", {"path": str(tmp_path / "missing"), "url": "http://127.0.0.1:1", "collection": "c"})
