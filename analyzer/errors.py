"""Errors of the analyzer layer. The CLI maps every one of them to a message and exit code 2."""

from __future__ import annotations

from parsers.errors import HvdAnalyzeError, InputError, SchemaError

__all__ = ["HvdAnalyzeError", "InputError", "SchemaError", "StoreError", "UsageError"]


class StoreError(HvdAnalyzeError):
    """A run store is missing, damaged, or written by an incompatible version."""


class UsageError(HvdAnalyzeError):
    """The arguments do not make sense together (named in the message)."""
