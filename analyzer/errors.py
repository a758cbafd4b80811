"""Errors of the analyzer layer. The CLI maps every one of them to a message and exit code 2."""

from __future__ import annotations

from parsers.errors import HvdAnalyzeError, InputError, SchemaError

__all__ = [
    "HvdAnalyzeError",
    "InputError",
    "NothingAnalysable",
    "OverBudget",
    "SchemaError",
    "StoreError",
    "UsageError",
]


class StoreError(HvdAnalyzeError):
    """A run store is missing, damaged, or written by an incompatible version."""


class UsageError(HvdAnalyzeError):
    """The arguments do not make sense together (named in the message)."""


class NothingAnalysable(HvdAnalyzeError):
    """Every input of a run was read, and none holds evidence to analyse (named in the message)."""


class OverBudget(HvdAnalyzeError):
    """An input whose smallest analysable piece needs more memory than ``--memory-budget`` allows
    (the message names the input, the piece and the budget that would do)."""
