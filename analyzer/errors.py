"""Errors of the analyzer layer. The CLI maps every one of them to a message and exit code 2."""

from __future__ import annotations

from parsers.errors import HvdAnalyzeError, InputError, SchemaError

__all__ = ["HvdAnalyzeError", "InputError", "NothingAnalysable", "SchemaError", "StoreError", "UsageError"]


class StoreError(HvdAnalyzeError):
    """A run store is missing, damaged, or written by an incompatible version."""


class UsageError(HvdAnalyzeError):
    """The arguments do not make sense together (named in the message)."""


class NothingAnalysable(HvdAnalyzeError):
    """Every input of a run was read, and none holds evidence to analyse (named in the message)."""
