"""The opening of a timeline and what the tokenizer does when bytes are not a record (a part of
:class:`parsers.timeline.tokens.Tokenizer`, which inherits it).

The opening ``[`` is checked; a headless fragment (cut out of a larger file) and a file whose first
bytes are damaged while the records after them are intact are read from their first record, the damage
counted; anything else is not a timeline, said with the byte and what was found. After the first record,
an unreadable record is skipped to the next one and counted; an oversized one likewise.
"""

from __future__ import annotations

import re

import numpy as np

from parsers.errors import InputError, describe_bytes
from parsers.inputs import damaged_start
from parsers.issues import IssueSeverity, IssueSink

MAX_RECORD = 8 * 1024 * 1024  # no Horovod record comes close; larger means "not a timeline"
#: where a record may start: where reading goes on after an unreadable one
_RESYNC_RE = re.compile(rb'\{"(?:ph|name)"')
#: how far into a file a damaged first record may be skipped: past it, nothing read yet is no timeline
FIRST_RECORD_SLACK = 64 << 10
_FRAGMENT_RE = re.compile(rb'\{\s*"(ph"|name"\s*:\s*"process_(name|sort_index)")')


class Openings:
    """The tokenizer's start of the array and its errors; the tokenizer provides these attributes."""

    name: str
    sink: IssueSink
    records_before: int
    skipped_bytes: int

    @property
    def records(self) -> int:
        raise NotImplementedError

    def open_array(self, buf: np.ndarray, end: int) -> int:
        """Position after '[', or -1 for an empty timeline. Raises InputError otherwise."""
        head = bytes(buf[: min(end, 4096)])
        skip = 3 if head.startswith(b"\xef\xbb\xbf") else 0
        body = head[skip:].lstrip(b" \t\r\n")
        at = len(head) - len(body)
        if not body:
            if end > len(head):  # 4 KiB of whitespace and more: keep looking in the scan
                raise InputError(
                    self.name, "expected '[' (a Horovod timeline), found only whitespace in the first 4 KiB", offset=at
                )
            return -1
        if body[:1] == b"[":
            rest = body[1:].lstrip(b" \t\r\n")
            if not rest and end <= len(head):
                return -1
            if rest[:1] != b"{" and damaged_start(rest) and (hit := _RESYNC_RE.search(rest)) is not None:
                first = at + 1 + (len(body) - 1 - len(rest)) + hit.start()  # the first intact record
                self._damaged_start(at, describe_bytes(rest[:24]), first)
                return first
            return at + 1
        if _FRAGMENT_RE.match(body):
            self.sink.add(
                IssueSeverity.INFO,
                "timeline.headless_fragment",
                "the file starts with a trace event instead of '[': a piece cut out of a larger timeline; "
                "spans whose B lies before the cut show up as orphan E events",
                byte_offset=at,
            )
            return at
        if damaged_start(body) and (hit := _RESYNC_RE.search(body, 1)) is not None:
            self._damaged_start(at, describe_bytes(body[:24]), at + hit.start())
            return at + hit.start()
        if body[:1] == b"{":
            raise InputError(
                self.name,
                "found a JSON object, expected a JSON array of trace events ('[')",
                offset=at,
                hint='Horovod writes a bare array. A {"traceEvents": ...} file comes from another profiler '
                "(e.g. the PyTorch profiler), which hvd-analyze does not read.",
            )
        raise InputError(
            self.name,
            f"expected '[' (a Horovod timeline), found {describe_bytes(body)}",
            offset=at,
            hint="pass the file named by HOROVOD_TIMELINE (written on rank 0 only)",
        )

    def _damaged_start(self, at: int, found: str, first: int) -> None:
        """The file's opening is damaged and intact records follow: read from the first (a counted loss)."""
        self.skipped_bytes += first - at
        self.sink.add(
            IssueSeverity.DATA_LOSS,
            "timeline.corrupt_record",
            f"the file's first bytes are damaged ({found} at byte {at}); read from the first intact record, "
            f"at byte {first}",
            byte_offset=at,
        )

    def _resync(self, buf: np.ndarray, err: int, pos: int, end: int, base: int, eof: bool) -> int:
        """After a syntax error: skip to the next record start, or raise if nothing was read yet and no
        intact record follows soon (a damaged first record of a timeline is skipped like any other)."""
        found = describe_bytes(bytes(buf[err : min(end, err + 24)]))
        ahead = bytes(buf[pos + 1 : min(end, pos + 1 + 4096)])
        if self.records_before + self.records == 0 and (base + pos > FIRST_RECORD_SLACK or not damaged_start(ahead)):
            raise InputError(
                self.name,
                f"expected a trace event object, found {found}",
                offset=base + err,
                hint='this is not a Horovod timeline (a JSON array of {"ph": ...} events)',
            )
        # searched in place: copying the rest of the buffer for each damaged record was quadratic
        hit = _RESYNC_RE.search(buf.data, pos + 1, end)
        nxt = hit.start() if hit else -1
        self.skipped_bytes += (nxt if nxt >= 0 else end) - pos
        self.sink.add(
            IssueSeverity.DATA_LOSS,
            "timeline.corrupt_record",
            f"unreadable record ({found} at byte {base + err}); skipped to the next record",
            byte_offset=base + pos,
        )
        if nxt < 0 and eof:
            return end
        return nxt

    def _oversized(self, offset: int) -> None:
        if self.records_before + self.records == 0:
            raise InputError(
                self.name,
                f"the first record is larger than {MAX_RECORD >> 20} MiB without closing",
                offset=offset,
                hint="this is not a Horovod timeline",
            )
        self.sink.add(
            IssueSeverity.DATA_LOSS,
            "timeline.corrupt_record",
            f"a record longer than {MAX_RECORD >> 20} MiB was skipped",
            byte_offset=offset,
        )
