"""The write audit with Mem0 ``infer=True`` extracting through a real local model
server (llama.cpp running the packaged 270M Gemma 3). What a model this small
extracts is not the point; the audit must report exactly what Mem0 did: every
memory left in the fresh store is one the audit saw added, by the message its
metadata names, and the messages it lists as producing nothing left no memory."""

from __future__ import annotations

import os

from llama_server import MODEL_ALIAS, llama_server

from connectors.embedding import model_loader as embedding
from connectors.registry import write_audit
from dashboard.evaluation.write_audit import ConfigAudit

# One message: each costs Mem0's whole extraction prompt (about 9,000 tokens) on the CPU.
MESSAGES = [("m1", "sam", "user", "My name is Sam and I live in Lisbon.")]


def test_mem0_extracting_with_a_real_local_model_is_audited_exactly(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    os.environ.setdefault("MEM0_DIR", str(tmp_path / "mem0-dir"))  # read when mem0 is first imported
    with llama_server(tmp_path, n_ctx=12288) as url:
        config = {
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "team", "path": str(tmp_path / "team")}},
            "embedder": {"provider": "huggingface", "config": {"model": embedding.packaged_model_path()}},
            "llm": {"provider": "openai", "config": {"model": MODEL_ALIAS, "openai_base_url": url, "api_key": "local",
                                                     "temperature": 0.0, "max_tokens": 200}},
        }
        replayed, store = write_audit("mem0", "replay")(config, True, MESSAGES, tmp_path / "audit")
        try:
            stored = store.memory.get_all(filters={"user_id": "sam"}, top_k=100)["results"]
        finally:
            store.close()
    audit = ConfigAudit("gemma", True, replayed)
    # Mem0 asked the real server once for the one message, and it answered.
    requests = [line for line in (tmp_path / "server.log").read_text(errors="replace").splitlines()
                if "POST /v1/chat/completions" in line]
    assert len(requests) == 1 and " 200" in requests[0]
    assert [r.message_id for r in replayed] == ["m1"]
    assert {e.event for r in replayed for e in r.events} <= {"ADD", "UPDATE", "DELETE", "NONE"}
    # The store holds exactly the memories the audit counts, each from the message it names.
    assert {m["id"]: m["metadata"]["source_message_id"] for m in stored} == audit.alive()
    assert audit.counts()["memories"] == len(stored)
    assert set(audit.produced_nothing()) == {"m1"} - {m["metadata"]["source_message_id"] for m in stored}
    assert not (tmp_path / "team").exists()  # the config's own store was never opened
