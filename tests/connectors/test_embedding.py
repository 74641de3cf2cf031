"""The torch-free query path: the ONNX export of the packaged MiniLM must give the
vectors sentence-transformers gives, and the fallback must take over for a model
the export cannot reproduce."""

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from connectors.embedding import model_loader as embedding
from connectors.embedding import onnx_export
from connectors.embedding.onnx_encoder import OnnxEncoder
from tests.conftest import ROOT


def varied_texts(count: int = 1000) -> list[str]:
    """Real demo memories and queries, and the shapes that break tokenizers and
    pooling: one character, punctuation only, other scripts, emoji, capitals,
    numbers, and texts past the 256-token truncation."""
    demo = [json.loads(line)["text"] for line in (ROOT / "demo_data" / "memories.jsonl").read_text().splitlines() if line]
    demo += [json.loads(line)["query"] for line in (ROOT / "demo_data" / "queries.jsonl").read_text().splitlines() if line]
    odd = [
        "a", "?", "...", "   spaced   out   ", "ÜBER GRÖSSE straße", "日本語のテキストを検索する", "Привет, как дела?",
        "مرحبا بالعالم", "🍕 pizza 🍍 or not", "Order #4521 shipped on 2026-03-14 at 09:30", "x" * 600,
        "CamelCaseIdentifiersAndSnake_case_names", "tab\tseparated\tvalues", "line one\nline two",
    ]
    chooser = random.Random(14)
    texts = list(demo) + odd
    while len(texts) < count:
        parts = [chooser.choice(demo) for _ in range(chooser.choice([1, 1, 2, 3, 8, 40]))]
        text = " ".join(parts)
        texts.append(text.upper() if chooser.random() < 0.1 else text)
    return texts[:count]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def reference():
    return embedding.load_model()


def test_a_fresh_export_encodes_like_sentence_transformers(tmp_path, reference):
    # A clean machine has nothing exported: export into an empty directory.
    directory = onnx_export.export(embedding.packaged_model_path(), tmp_path / "export")
    texts = varied_texts()
    mine = OnnxEncoder(directory).encode(texts, batch_size=32)
    theirs = reference.encode(texts, normalize_embeddings=True, batch_size=64, convert_to_numpy=True)
    assert mine.shape == (1000, embedding.DIMENSIONS) and mine.dtype == np.float32
    assert cosines(mine, theirs).min() >= 0.99999
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)


def test_encode_keeps_the_callers_order_and_reports_progress():
    texts = varied_texts(150)
    steps = []
    together = embedding.encode(texts, batch_size=32, progress=lambda done, total: steps.append((done, total)))
    one_by_one = np.stack([embedding.encode([t])[0] for t in texts[:20]])
    assert cosines(together[:20], one_by_one).min() >= 0.99999
    assert steps[-1] == (150, 150) and [d for d, _ in steps] == sorted(d for d, _ in steps) and len(steps) == 5
    assert embedding.encode([]).shape == (0, embedding.DIMENSIONS)


def test_the_packaged_model_runs_on_onnx_and_the_page_can_say_so():
    embedding.encode(["warm"])
    assert embedding.encoder().backend == "onnx"
    assert "ONNX Runtime" in embedding.backend_description()
    assert embedding.backend_description("/no/such/model/loaded") is None


def test_a_model_the_export_cannot_reproduce_falls_back_to_torch(tmp_path, reference):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    # A Dense layer after pooling has no counterpart on the ONNX path.
    dense = Dense(embedding.DIMENSIONS, 64)
    model = SentenceTransformer(modules=[reference[0], reference[1], dense], device="cpu")
    model.save(str(tmp_path / "with-dense"))
    path = str(tmp_path / "with-dense")
    texts = ["Lives in Lisbon", "Prefers light UI theme", "Allergic to peanuts"]
    vectors = embedding.encode(texts, model=path)
    assert embedding.encoder(path).backend == "torch"
    assert "torch" in embedding.backend_description(path) and "Dense" in embedding.backend_description(path)
    expected = SentenceTransformer(path, device="cpu").encode(texts, normalize_embeddings=True)
    assert vectors.shape == (3, 64) and cosines(vectors, expected).min() >= 0.99999


def test_a_query_from_a_cold_process_never_imports_torch():
    embedding.encode(["make sure the shared export exists"])
    code = (
        "import sys\n"
        "from connectors.embedded.store import EmbeddedStore\n"
        "from connectors.embedding import model_loader as embedding\n"
        "vector = embedding.encode(['Which UI theme does the user prefer?'])[0]\n"
        "print(len(vector), 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["384", "False", "False"]
