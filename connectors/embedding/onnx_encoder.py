"""Sentence embeddings with onnxruntime and tokenizers: no torch, no transformers.

Reproduces what sentence-transformers does for a Transformer + Pooling (+ Normalize)
model: tokenize with the model's own fast tokenizer (truncated to its
max_seq_length), run the transformer, pool the last hidden state over the real
tokens (mean, CLS or max), and scale to unit length. Importing this and loading a
session takes well under a second, where importing torch takes several.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


class OnnxEncoder:
    backend = "onnx"

    def __init__(self, directory: str | Path):
        import onnxruntime
        from tokenizers import Tokenizer

        directory = Path(directory)
        self.settings = json.loads((directory / "encoder.json").read_text(encoding="utf-8"))
        self.inputs: list[str] = self.settings["inputs"]
        self.dimensions = int(self.settings["dimensions"])
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        # The saved tokenizer may carry a fixed padding and a different truncation
        # from training: sentence-transformers pads each batch to its longest text
        # and truncates at max_seq_length.
        self.tokenizer.enable_truncation(max_length=int(self.settings["max_seq_length"]))
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # no warnings about unused initializers on stderr
        # The export is saved already optimised (onnx_export._optimise): running the
        # passes again would only add to every cold start.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        # Idle worker threads sleep instead of spinning: on a shared machine a
        # spinning pool takes the cores that Streamlit and the other sessions need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )

    def _prepare(self, texts: Sequence[str]) -> list[str]:
        texts = [str(t) for t in texts]
        return [t.lower() for t in texts] if self.settings.get("do_lower_case") else texts

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Unit-length float32 rows in the order of `texts`.

        Texts are batched by token count (longest first, like sentence-transformers),
        so a batch pads to a length close to each of its texts instead of to the
        longest text of a slice in file order."""
        total = len(texts)
        out = np.empty((total, self.dimensions), dtype=np.float32)
        if not total:
            return out
        encodings = self.tokenizer.encode_batch(self._prepare(texts))
        order = sorted(range(total), key=lambda i: -len(encodings[i].ids))
        for start in range(0, total, batch_size):
            chosen = order[start : start + batch_size]
            out[chosen] = self._run([encodings[i] for i in chosen])
            if progress:
                progress(min(start + batch_size, total), total)
        return out

    def _run(self, encodings: list) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {name: feeds[name] for name in self.inputs})[0]
        pooled = pool(hidden, mask, self.settings["pooling"])
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers' pooling of the last hidden state over real tokens."""
    if mode == "cls":
        return hidden[:, 0]
    weights = mask[..., None].astype(hidden.dtype)
    if mode == "max":
        return np.where(weights > 0, hidden, -1e9).max(axis=1)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
