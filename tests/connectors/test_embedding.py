"""The torch-free query path: the ONNX export of the packaged MiniLM must give the
vectors sentence-transformers gives, and the fallback must take over for a model
the export cannot reproduce."""

import json
import random
import subprocess
import sys
from pathlib import Path

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


def test_an_export_folder_given_as_the_model_is_the_model_it_came_from(export_folder, tmp_path, monkeypatch):
    from datetime import UTC, datetime

    from connectors.embedded.store import EmbeddedStore

    now = datetime(2026, 6, 1, tzinfo=UTC)
    memories = ROOT / "demo_data" / "memories.jsonl"
    packaged = EmbeddedStore(tmp_path / "memories.sqlite", now=lambda: now)
    packaged.import_jsonl(memories)
    expected = [[(h.memory_id, h.score) for h in packaged.query(q, user_id="sam", k=5).hits] for q in varied_texts(20)]
    packaged.close()
    # The folder alone: no model cache to find or fill.
    cache = tmp_path / "empty-model-cache"
    monkeypatch.setenv(onnx_export.MODEL_CACHE_ENV, str(cache))
    through_export = EmbeddedStore(tmp_path / "memories.sqlite", model=str(export_folder), now=lambda: now)
    assert embedding.encoder(str(export_folder)).backend == "onnx"
    # Memories the packaged model embedded count as this model's: none is encoded again.
    assert through_export.model_name == embedding.DEFAULT_MODEL
    assert through_export.import_jsonl(memories).reencoded == 0
    found = [[(h.memory_id, h.score) for h in through_export.query(q, user_id="sam", k=5).hits] for q in varied_texts(20)]
    through_export.close()
    for mine, theirs in zip(found, expected, strict=True):
        assert [i for i, _ in mine] == [i for i, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-6)
    assert not cache.exists()


def test_an_export_that_does_not_name_its_model_is_refused_with_how_to_remake_it(export_folder, tmp_path):
    import shutil

    from connectors.base import StoreUnavailable
    from connectors.embedded.store import EmbeddedStore

    # What an export made before EXPORT_FORMAT 2 holds: no "model" in encoder.json.
    old = Path(shutil.copytree(export_folder, tmp_path / "old-export"))
    settings = json.loads((old / "encoder.json").read_text())
    del settings["model"], settings["format"]
    (old / "encoder.json").write_text(json.dumps(settings))
    with pytest.raises(StoreUnavailable, match=r"does not say which model.*onnx_export --out DIR"):
        EmbeddedStore(tmp_path / "memories.sqlite", model=str(old))
