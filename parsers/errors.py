"""Root exception of hvd-analyze and the input error raised by every parser.

The root lives in the lowest layer (``parsers``) because dependencies point one way
(dashboards -> analyzer -> parsers). ``analyzer.errors`` re-exports it and adds the
store and usage errors. Only the CLI turns these into messages and exit codes.
"""

from __future__ import annotations


class HvdAnalyzeError(Exception):
    """Root of every error hvd-analyze raises on purpose."""


class InputError(HvdAnalyzeError):
    """An input file cannot be read as what it claims to be.

    The message always names the file, the byte position, what was expected, what was
    found, and what the user can do about it.
    """

    def __init__(
        self,
        path: str,
        message: str,
        *,
        offset: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.offset = offset
        self.hint = hint
        where = f"{path}" if offset is None else f"{path} (byte {offset})"
        text = f"{where}: {message}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


def describe_bytes(data: bytes) -> str:
    """Show a short, printable excerpt of raw bytes for an error message."""
    if not data:
        return "end of file"
    head = data[:24]
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in head)
    if printable < len(head) * 0.8:
        return "binary data " + head[:8].hex(" ")
    return repr(head.decode("utf-8", "replace"))


class SchemaError(HvdAnalyzeError):
    """A table does not match its declared schema (names table, column, expected, found)."""
