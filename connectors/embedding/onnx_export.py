"""Export a local sentence-transformers model to ONNX, once per model.

The query path (connectors/embedding/onnx_encoder.py) runs the exported transformer with
onnxruntime and the model's own fast tokenizer, then pools and normalises in numpy
exactly as sentence-transformers does. Only this module imports torch, and only
when a model has no export yet.

An export is a directory ``<cache>/<key>/`` holding ``model.onnx`` (the transformer:
token ids in, last hidden state out), ``tokenizer.json`` and ``encoder.json`` (how
to pool, the longest input, which inputs the model takes, and the model it was made
from). ``key`` is a hash of the model directory's files (names, sizes and contents of
everything but the weights, whose size and modification time stand for them: hashing
90 MB on every start would cost more than the export saves). The cache sits apart from the data
directory because an export belongs to a model, not to a workspace: a fresh data
directory (a new demo, a test) should not pay for a new export.

Run ``python -m connectors.embedding.onnx_export`` at install time to export the packaged
model ahead of the first query.

An export is self-contained: given as the model itself (an embedded store's ``model``
setting), its folder is read as it is, with no model package, no key and no torch
(model_loader). ``python -m connectors.embedding.onnx_export --out DIR`` writes one
into a folder of your choice, to copy where an agent runs without torch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from connectors.common.errors import MemlensError
from connectors.embedding.model_path import packaged_model_path, recorded_name

MODEL_CACHE_ENV = "MEMLENS_MODEL_CACHE"
ENCODER_FILES = ("model.onnx", "tokenizer.json", "encoder.json")
# Files at or above this size are keyed by size and mtime rather than content.
CONTENT_HASH_LIMIT = 4 * 2**20
# Bump when what an export contains changes, so old exports are not reused.
# 2: encoder.json names the model the export was made from ("model").
EXPORT_FORMAT = 2

# The sentence-transformers modules the ONNX path reproduces (by class name: the
# package has moved them between releases); any other module (Dense, a custom
# layer) means the model stays on torch.
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
SUPPORTED_POOLING = ("mean", "cls", "max")


class NotExportable(MemlensError):
    """The model has a part the ONNX path does not reproduce; torch encodes it."""


def model_cache_dir() -> Path:
    """$MEMLENS_MODEL_CACHE, else $XDG_CACHE_HOME/memlens/models, else ~/.cache/memlens/models."""
    if os.environ.get(MODEL_CACHE_ENV):
        return Path(os.environ[MODEL_CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "memlens" / "models"


def model_key(model_dir: str | Path) -> str:
    """A hash of the model directory's files (see the module docstring)."""
    root = Path(model_dir)
    digest = hashlib.sha256(f"format {EXPORT_FORMAT}\n".encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(root).as_posix()}\0{stat.st_size}\0".encode())
        if stat.st_size < CONTENT_HASH_LIMIT:
            digest.update(path.read_bytes())
        else:
            digest.update(str(stat.st_mtime_ns).encode())
    return digest.hexdigest()[:32]


def export_dir(model_dir: str | Path) -> Path:
    return model_cache_dir() / model_key(model_dir)


def is_exported(directory: Path) -> bool:
    return all((directory / name).is_file() for name in ENCODER_FILES)


def source_model(directory: str | Path) -> str | None:
    """The model an export was made from, as a store records it (encoder.json's
    "model"); None for an export older than EXPORT_FORMAT 2, which does not say."""
    name = _settings(directory).get("model")
    return name if isinstance(name, str) and name else None


def dimensions(directory: str | Path) -> int:
    """The length of the vectors an export makes (encoder.json's "dimensions")."""
    return int(_settings(directory)["dimensions"])


def _settings(directory: str | Path) -> dict[str, Any]:
    return json.loads((Path(directory) / "encoder.json").read_text(encoding="utf-8"))


def check_modules(model_dir: str | Path) -> None:
    """Raise NotExportable when modules.json names a module the ONNX path lacks."""
    modules_file = Path(model_dir) / "modules.json"
    if not modules_file.is_file():
        raise NotExportable(f"{model_dir} has no modules.json (not a sentence-transformers model directory)")
    for module in json.loads(modules_file.read_text(encoding="utf-8")):
        kind = str(module.get("type", ""))
        if not kind.startswith("sentence_transformers.") or kind.rsplit(".", 1)[-1] not in SUPPORTED_MODULES:
            raise NotExportable(f"module {module.get('type')!r} has no ONNX equivalent here")


def _pooling_mode(pooling) -> str:
    mode = getattr(pooling, "pooling_mode", None)
    if mode is None and hasattr(pooling, "get_pooling_mode_str"):
        # sentence-transformers before 5 names the mode only through this method
        # ("mean", or modes joined by "+", as the list form below is).
        mode = pooling.get_pooling_mode_str()
    if isinstance(mode, list | tuple):
        mode = mode[0] if len(mode) == 1 else "+".join(map(str, mode))
    if mode not in SUPPORTED_POOLING:
        raise NotExportable(f"pooling {mode!r} has no ONNX equivalent here")
    return str(mode)


def export(model_dir: str | Path, target: Path | None = None) -> Path:
    """Export `model_dir` into `target` (default: its cache directory) and return it.

    Files are written under temporary names and renamed into place, so two
    processes exporting the same model at once both leave a complete export."""
    check_modules(model_dir)
    target = target or export_dir(model_dir)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    model: Any = SentenceTransformer(str(model_dir), device="cpu")
    transformer, pooling = model[0], model[1]
    tokenizer = getattr(transformer, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise NotExportable("the model has no fast (Rust) tokenizer to run without transformers")
    mode = _pooling_mode(pooling)
    sample = model.tokenize(["an example"])
    inputs = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample]
    hf_model = transformer.auto_model.eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *tensors):
            return self.inner(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as scratch:
        onnx_path = Path(scratch) / "model.onnx"
        example = tuple(sample[name] for name in inputs)
        axes = {name: {0: "batch", 1: "tokens"} for name in [*inputs, "last_hidden_state"]}
        # The tracer warns about shape checks it turns into constants; none of them
        # depends on the batch or the length (a test compares 1,000 varied texts).
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                LastHiddenState(hf_model),
                example,
                str(onnx_path),
                input_names=inputs,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        _optimise(onnx_path)
        (Path(scratch) / "tokenizer.json").write_text(tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
        settings = {
            "inputs": inputs,
            "pooling": mode,
            "max_seq_length": int(model.max_seq_length),
            "do_lower_case": bool(getattr(transformer, "do_lower_case", False)),
            "dimensions": int(hf_model.config.hidden_size),
            "source": str(model_dir),
            # The name a store records with this model's vectors: a store queried
            # through the export then knows its memories were embedded by this model.
            "model": recorded_name(str(model_dir)),
            "format": EXPORT_FORMAT,
        }
        (Path(scratch) / "encoder.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
        # encoder.json last: is_exported() only sees a directory once all of it is there.
        for name in ("model.onnx", "tokenizer.json", "encoder.json"):
            os.replace(Path(scratch) / name, target / name)
    return target


def _optimise(onnx_path: Path) -> None:
    """Replace the export with onnxruntime's optimised graph (fused attention and
    layer norms), so loading it later skips those passes: about a third of the
    session's load time. EXTENDED, not ALL: ALL writes layouts for this CPU only."""
    import onnxruntime

    optimised = onnx_path.with_suffix(".optimised.onnx")
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(optimised)
    options.log_severity_level = 3
    onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    os.replace(optimised, onnx_path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m connectors.embedding.onnx_export",
        description="Export the packaged all-MiniLM-L6-v2 to ONNX (needs torch, which memlens[app] brings).",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write the export into this folder and print it: a folder to copy where the agent runs and give "
        "as the embedded store's model (default: the cache the dashboard reads, MEMLENS_MODEL_CACHE)",
    )
    args = parser.parse_args(argv)
    model = packaged_model_path()
    if args.out is not None:
        # Printed alone, so a build step can take it: DIR=$(python -m ... --out DIR)
        print(export(model, args.out).resolve())
        return
    directory = export_dir(model)
    if is_exported(directory):
        print(f"already exported: {directory}")
    else:
        print(f"exported to {export(model, directory)}")


if __name__ == "__main__":
    main()
