"""The NCCL model: every NCCL / job log of a run as DataFrames, per process and communicator."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzer.nccl.model import LOG_TABLES, NcclModel, nccl_model_of

_FACE = {
    "NcclModel": "analyzer.nccl.model",
    "nccl_model_of": "analyzer.nccl.model",
    "LOG_TABLES": "analyzer.nccl.model",
}

__all__ = [
    "NcclModel",
    "nccl_model_of",
    "LOG_TABLES",
]


def __getattr__(name: str) -> Any:
    """The face's names, imported on first use (keeps ``import`` of the package cheap)."""
    if name in _FACE:
        return getattr(import_module(_FACE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
