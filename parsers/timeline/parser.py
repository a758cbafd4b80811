"""Horovod timeline (``HOROVOD_TIMELINE``) -> ``spans``, ``ticks``, ``markers``, ``tensors``.

Streaming and tolerant, following ``docs/formats/horovod-timeline.md``:

* both layouts (<=0.20.0 one event per line, never closed; >=0.20.1 glued on one line and
  closed by ``]``), 0-byte and ``[``-only files, gzip, files cut anywhere;
* bytes tokenized into integer rows (``parsers.timeline._tokenize``, driven by
  :mod:`parsers.timeline.tokens`), then B/E paired per pid with a LIFO stack
  (``parsers.timeline._pair``), so memory is bounded by the chunk size, not the file size; the rows
  are named and turned into Arrow tables by :mod:`parsers.timeline.tables`;
* every record that cannot be used, and every tolerated oddity, is counted as a
  :class:`~parsers.issues.ParseIssue`; a file that is not a timeline at all raises
  :class:`~parsers.errors.InputError` naming the file, the byte, and what was expected.

Use :class:`TimelineParser` to stream Arrow batches (the store does), or
:func:`parse_timeline` to get whole tables (tests, small files).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from parsers.errors import describe_bytes
from parsers.inputs import GUNZIP_PIECE, open_binary
from parsers.issues import IssueSeverity, IssueSink, ParseIssue
from parsers.timeline import _pair as P
from parsers.timeline import layout as L
from parsers.timeline._state import KERNEL_ISSUES, MAX_PID_BASE, PairState, add_issues, new_issues
from parsers.timeline.buffers import release
from parsers.timeline.facts import TimelineInfo, TimelineStatus, cache_verdict, guess_version, uptime_origin
from parsers.timeline.metadata import parse_metadata
from parsers.timeline.tables import TimelineNames, row_arrays
from parsers.timeline.tokens import (
    DEFAULT_CHUNK,
    RANGE_BYTES,
    Ending,
    RangeTask,
    TokenBlock,
    TokenizedRange,
    Tokenizer,
    nonblank,
    recycle,
    timeline_ranges,
    tokenize_range,
    tokenize_task,
)


class TimelineParser:
    """Stream one timeline file into Arrow batches.

    Iterate :meth:`batches` to get ``(table_name, pyarrow.Table)`` pairs for ``spans``,
    ``ticks`` and ``markers``; once exhausted, :attr:`info`, :attr:`issues` and
    :meth:`tensors_table` describe the whole file. :meth:`batches_in_ranges` does the same with
    ranges of the file tokenized elsewhere (:func:`parsers.timeline.tokens.tokenize_range`).

    Raises:
        InputError: the file is not a Horovod timeline (checked before any batch).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        input_id: str = "",
        chunk_bytes: int = DEFAULT_CHUNK,
        display_name: str | None = None,
        columns: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.path = Path(path)
        self.name = display_name or str(path)
        self.input_id = input_id
        self.chunk_bytes = max(4096, chunk_bytes)
        self.sink = IssueSink(self.name)
        self.info = TimelineInfo(self.name)
        self.names = TimelineNames(input_id, columns)
        self._pair = PairState.new()
        self._tok_iss = new_issues()
        self._tok = {"records": 0, "nl": 0, "glued": 0}
        self._first_ts: int | None = None
        self._last_ts: int | None = None
        self._progress = 0
        self.rereads = 0  # ranges tokenized again here (see :meth:`batches_in_ranges`)
        self._outs = row_arrays(self.chunk_bytes)
        self._outn = np.zeros(3, np.int64)  # rows written by the last call of the pairing kernel
        self._acc = np.zeros(3, np.int64)  # rows in self._outs not yet handed out as tables

    # -- public -------------------------------------------------------------------
    @property
    def issues(self) -> list[ParseIssue]:
        return self.sink.issues

    @property
    def records(self) -> int:
        """Records tokenized so far."""
        return self._tok["records"]

    def batches(self, stream: BinaryIO | None = None) -> Iterator[tuple[str, pa.Table]]:
        """Yield ``(table, batch)`` pairs; read ``stream`` (already decompressed) if given."""
        tok = Tokenizer(self.name, self.sink, chunk_bytes=self.chunk_bytes)
        with nullcontext(stream) if stream is not None else open_binary(self.path) as f:
            for block in tok.blocks(f):
                yield from self._take(block)
                recycle(block)
            self._progress = tok.position
            self._tokens_done(tok.state.ctr, tok.state.iss, tok.skipped_bytes)
            self._note_gzip_cut(f)
        yield from self._close(tok.ending)

    def batches_in_ranges(
        self,
        tokenized: Callable[[list[RangeTask]], Iterable[TokenizedRange]] | None = None,
        range_bytes: int = RANGE_BYTES,
    ) -> Iterator[tuple[str, pa.Table]]:
        """The batches of :meth:`batches`, row for row, from an uncompressed file cut into
        ranges of about ``range_bytes`` (:func:`~parsers.timeline.tokens.timeline_ranges`) that
        ``tokenized`` turns into :class:`TokenizedRange` s, in their order (several at once
        on threads or Dask workers: :meth:`analyzer.store.parallel.Executor.ordered`); this parser
        pairs them as they come, in bounded memory."""
        size = self.path.stat().st_size
        with self.path.open("rb") as f:
            head = np.frombuffer(f.read(8192), np.uint8)
        begin = Tokenizer(self.name, self.sink).open_array(head, len(head))
        if begin < 0:
            yield from self.batches()
            return
        tasks = timeline_ranges(str(self.path), begin, size, range_bytes)
        yield from self._pair_ranges((tokenized or _tokenize_here)(tasks), size)

    def _pair_ranges(self, ranges: Iterable[TokenizedRange], size: int) -> Iterator[tuple[str, pa.Table]]:
        """Pair ``ranges`` (consecutive, to ``size``) in file order.

        A range that ends inside a record or at an unreadable one was not cut at a record
        boundary, or holds damage: it is tokenized again here from there to the end of the
        next range, skipping what cannot be read, as the single pass does.
        """
        again: int | None = None  # re-read from here: the previous range ended inside a record
        ending: Ending | None = None
        closed_at = size
        for r in ranges:
            if ending is not None:  # after the ']': trailing data, counted below
                continue
            if again is not None:
                r, again = self._reread(again, r.stop), None
            yield from self._take_range(r)
            e = r.ending
            if e.kind == "closed":
                ending, closed_at = e, r.stop
            elif e.kind == "stopped" or r.stop < size and e.tail.strip(b" \t\r\n,"):
                again = e.at
            elif r.stop >= size:
                ending = e
        if again is not None:
            r = self._reread(again, size)
            yield from self._take_range(r)
            ending = r.ending
        if ending is None:  # pragma: no cover - ranges must reach size
            raise AssertionError(f"{self.name}: the ranges end before byte {size}")
        if ending.kind == "closed" and closed_at < size:
            with self.path.open("rb") as f:
                f.seek(closed_at)
                ending.trailing += nonblank(f, size - closed_at)[0]
        self._progress = size
        yield from self._close(ending)

    def _reread(self, start: int, stop: int) -> TokenizedRange:
        """Tokenize ``[start, stop)`` here, in file order, skipping what cannot be read."""
        self.rereads += 1
        return tokenize_range(str(self.path), start, stop, resync=True, records_before=self.records)

    def _take_range(self, r: TokenizedRange) -> Iterator[tuple[str, pa.Table]]:
        self.names.new_tokenizer()
        for block in r.blocks:
            yield from self._take(block)
            recycle(block)
        self._tokens_done(r.ctr, r.iss, r.skipped_bytes)
        for i in r.issues:
            self.sink.add(i.severity, i.code, i.message, byte_offset=i.byte_offset, count=i.count)

    def _tokens_done(self, ctr: np.ndarray, iss: np.ndarray, skipped: int) -> None:
        """Add one tokenizer's counters (a range's, read after the ones before it)."""
        tok = self._tok
        tok["records"] += int(ctr[L.T_RECORDS])
        tok["nl"] += int(ctr[L.T_SEP_NL])
        tok["glued"] += int(ctr[L.T_SEP_GLUED])
        if skipped:
            self._skipped_bytes(skipped)
        if ctr[L.T_FIRST_OFF] >= 0:
            if self._last_ts is not None and ctr[L.T_FIRST_TS] < self._last_ts:  # across the cut
                back = new_issues()
                back[L.I_TS_BACK] = (1, ctr[L.T_FIRST_OFF])
                add_issues(self._tok_iss, back)
            self._first_ts = int(ctr[L.T_FIRST_TS]) if self._first_ts is None else self._first_ts
            self._last_ts = int(ctr[L.T_LAST_TS])
        add_issues(self._tok_iss, iss)

    def _close(self, ending: Ending) -> Iterator[tuple[str, pa.Table]]:
        """The end of the input: its status and issues, then the spans still open."""
        release()  # every block is paired: the kept event buffers go
        yield from self._flush()
        if ending.kind == "empty":
            self._finish(status="empty")
            return
        if ending.kind == "closed":
            self.info.status = "closed"
            if ending.trailing:
                self.sink.add(
                    IssueSeverity.DATA_LOSS,
                    "timeline.trailing_data",
                    f"{ending.trailing} non-blank bytes after the closing ']' were ignored",
                    byte_offset=ending.at,
                )
        else:
            self._at_eof(ending.tail, ending.at)
        st = self._pair
        spans = np.empty((int(st.ctr[L.C_SLOT_HW]) + 1, L.SP_N), np.int64, order="F")
        n_open = P.drain(st.top, st.pstat, st.slots, spans)
        if n_open:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "timeline.unclosed_spans",
                "spans whose E never came (the job stopped, or Horovod's writer did not drain its "
                "queue at exit); kept with closed=false and no end",
                byte_offset=int(spans[:n_open, L.SP_SOFF].min()),
                count=n_open,
            )
            yield "spans", self.names.spans(spans[:n_open])
        self.info.counts["spans"] = self.info.counts.get("spans", 0) + n_open
        self.info.counts["unclosed_spans"] = n_open
        self._finish(status=self.info.status)

    def _note_gzip_cut(self, f: object) -> None:
        cut = getattr(f, "cut", None)
        if cut:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "timeline.gzip_cut",
                f"the gzip stream is cut or damaged ({cut}); everything inflated before that point was read, "
                f"except up to {GUNZIP_PIECE // 1024} KiB just before the damage",
                byte_offset=self._progress,
            )

    def tensors_table(self) -> pa.Table:
        """One row per pid seen in metadata or events (call after :meth:`batches`)."""
        return self.names.tensors(self._pair.pstat, len(self._pair.top))

    # -- end of the input ---------------------------------------------------------------
    def _at_eof(self, tail: bytes, at: int) -> None:
        rest = tail.lstrip(b" \t\r\n,")
        self.info.status = "unterminated"
        if rest.strip():
            self.info.status = "truncated"
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "timeline.truncated_record",
                f"the file ends inside a record ({len(rest)} bytes: {describe_bytes(rest)}); that record is "
                "lost, every record before it was read",
                byte_offset=at + len(tail) - len(rest),
            )
        elif self.info.layout == "glued" or self.info.start_time_since_epoch_us is not None:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "timeline.unterminated",
                "the file ends without ']' although Horovod >=0.20.1 closes it after every event: the "
                "writer was killed; records still in its queue are lost",
                byte_offset=at + len(tail),
            )
        else:
            self.sink.add(
                IssueSeverity.INFO,
                "timeline.unterminated",
                "no closing ']' (normal for Horovod <=0.20.0, which never closes the array)",
                byte_offset=at + len(tail),
            )

    def _skipped_bytes(self, n: int) -> None:
        self.info.counts["skipped_bytes"] = self.info.counts.get("skipped_bytes", 0) + n

    # -- pairing the event rows -------------------------------------------------------------
    def _take(self, block: TokenBlock) -> Iterator[tuple[str, pa.Table]]:
        """One block of event rows: its strings and metadata, then its rows paired."""
        ev = block.events
        maps = self.names.intern(block.strings)
        for offset, raw in block.metas:
            self._meta(raw, offset)
        st, outs, outn, acc = self._pair, self._outs, self._outn, self._acc
        at, n = 0, len(ev)
        while True:
            # rows accumulate across blocks: a damaged file's many small blocks make few tables
            sp, tk, mk = (outs[key][int(k) :] for key, k in zip(("spans", "ticks", "markers"), acc, strict=True))
            status, at = P.pair(ev, at, n, st.ctr, st.iss, st.top, st.pstat, st.slots, sp, tk, mk, outn, *maps)
            acc += outn
            if status == L.ST_FULL:
                yield from self._flush()
                continue
            if status == L.ST_GROW:
                st.grow(self.name, int(ev[at, L.EV_OFF]))
                continue
            break
        if any(4 * int(k) > len(outs[key]) for k, key in zip(acc, ("spans", "ticks", "markers"), strict=True)):
            yield from self._flush()

    def _flush(self) -> Iterator[tuple[str, pa.Table]]:
        outs = self._outs
        ns, nt, nm = (int(v) for v in self._acc)
        self._acc[:] = 0
        for key, n in (("spans", ns), ("ticks", nt), ("markers", nm)):
            self.info.counts[key] = self.info.counts.get(key, 0) + n
        if ns:
            yield "spans", self.names.spans(outs["spans"][:ns])
        if nt:
            yield "ticks", self.names.ticks(outs["ticks"][:nt])
        if nm:
            yield "markers", self.names.markers(outs["markers"][:nm])

    def _meta(self, raw: bytes, offset: int) -> None:
        rec = parse_metadata(raw)
        if rec is None:
            self.sink.add(
                IssueSeverity.DATA_LOSS,
                "timeline.bad_metadata",
                f"unreadable metadata record {describe_bytes(raw)}; dropped",
                byte_offset=offset,
            )
            return
        raw_args = rec.get("args")
        # a metadata record's args as JSON gives them: each key is checked where it is read
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        pid = rec.get("pid")
        kind = rec.get("name")
        if kind == "process_name" and isinstance(pid, int):
            if not 0 <= pid <= MAX_PID_BASE + offset // 16:  # the names are an array indexed by pid
                self.sink.add(
                    IssueSeverity.DATA_LOSS,
                    "timeline.bad_metadata",
                    f"metadata record for pid {pid}, beyond the tensors the file could hold; dropped",
                    byte_offset=offset,
                )
                return
            if "start_time_since_epoch_in_micros" in args:
                self.info.start_time_since_epoch_us = int(args["start_time_since_epoch_in_micros"])
            elif isinstance(args.get("name"), str) and self.names.name_pid(pid, args["name"]):
                self.sink.add(
                    IssueSeverity.INFO,
                    "timeline.pid_renamed",
                    "a pid was given a second tensor name (a restarted timeline appended to the same file?)",
                    byte_offset=offset,
                )
            return
        if kind == "process_sort_index":
            return
        self.sink.add(
            IssueSeverity.INFO,
            "timeline.unknown_metadata",
            f"metadata record {kind!r} is not one Horovod writes; ignored",
            byte_offset=offset,
        )

    # -- summary ----------------------------------------------------------------------
    def _finish(self, status: TimelineStatus) -> None:
        st = self._pair
        iss = self._tok_iss.copy()
        add_issues(iss, st.iss)  # the pairer counts other issues than the tokenizer
        info = self.info
        info.status = status
        info.bytes_read = self._progress
        info.records = self._tok["records"]
        nl, glued = self._tok["nl"], self._tok["glued"]
        if glued > 0:
            info.layout = "glued"
        elif nl > 0:
            info.layout = "line_per_event"
        elif info.start_time_since_epoch_us is not None:
            info.layout = "glued"
        info.first_ts_us = self._first_ts
        info.last_ts_us = self._last_ts
        info.max_depth = int(st.ctr[L.C_MAX_DEPTH])
        info.uptime_origin = uptime_origin(info.first_ts_us, info.start_time_since_epoch_us is not None)
        neg = st.pstat[:, L.P_NEG]
        ticked = st.pstat[:, L.P_TICKED]
        info.cache = cache_verdict(neg, ticked)
        # A legacy file written by the event-per-line writer has a newline after every
        # record; metadata lines alone also end in newlines in the glued layout.
        info.version = guess_version(
            names=self.names.strings[L.CAT_NAME],
            has_start_time_header=info.start_time_since_epoch_us is not None,
            glued=info.layout == "glued",
            line_per_event=info.layout == "line_per_event",
            e_named=bool(iss[L.I_E_NAMED, 0]),
            uptime_origin=info.uptime_origin,
            has_markers="CYCLE_START" in self.names.strings[L.CAT_NAME],
            ticks_every_negotiation=info.cache.steady_state_ticks,
        )
        for k, sev, code, msg in KERNEL_ISSUES:
            count, first = int(iss[k, 0]), int(iss[k, 1])
            self.sink.add(sev, code, msg, byte_offset=first, count=count)
        if status == "empty":
            self.sink.add(
                IssueSeverity.INFO,
                "timeline.empty",
                "empty timeline: no collective ran while it was recorded (Horovod leaves a 0-byte "
                "file (>=0.20.1) or just '[' (<=0.20.0) then)",
                byte_offset=0,
            )


def _tokenize_here(tasks: list[RangeTask]) -> Iterator[TokenizedRange]:
    return map(tokenize_task, tasks)
