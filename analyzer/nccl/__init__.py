"""The NCCL model: every NCCL / job log of a run as DataFrames, per process and communicator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parsers.lazy import lazy_names

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

__getattr__ = lazy_names(__name__, _FACE)  # the names above, imported on first use
