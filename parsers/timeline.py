"""Horovod timeline (``HOROVOD_TIMELINE``) -> ``spans``, ``ticks``, ``markers``, ``tensors``.

Streaming and tolerant, following ``../shared/docs/horovod-timeline-format.md``:

* both layouts (<=0.20.0 one event per line, never closed; >=0.20.1 glued on one line and
  closed by ``]``), 0-byte and ``[``-only files, gzip, files cut anywhere;
* B/E paired per pid with a LIFO stack while scanning (``parsers._scan``), so memory is
  bounded by the chunk size, not the file size;
* every record that cannot be used, and every tolerated oddity, is counted as a
  :class:`~parsers.issues.ParseIssue`; a file that is not a timeline at all raises
  :class:`~parsers.errors.InputError` naming the file, the byte, and what was expected.

Use :class:`TimelineParser` to stream Arrow batches (the store does), or
:func:`parse_timeline` to get whole tables (tests, small files).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import orjson
import pyarrow as pa

from parsers import _scan as S
from parsers._timeline_state import (
    KERNEL_ISSUES,
    ScanState,
    decode_str,
    dict_column,
)
from parsers.errors import InputError, describe_bytes
from parsers.inputs import GUNZIP_PIECE, open_binary, readinto_full
from parsers.issues import IssueSeverity, IssueSink, ParseIssue
from parsers.schema import arrow_schema
from parsers.timeline_facts import (
    TimelineInfo,
    cache_verdict,
    guess_version,
    uptime_origin,
)

DEFAULT_CHUNK = 16 * 1024 * 1024
MAX_RECORD = 8 * 1024 * 1024  # no Horovod record comes close; larger means "not a timeline"
KINDS = ("negotiate", "op", "activity")
DTYPE_BYTES = {
    "bool": 1, "uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "float16": 2, "bfloat16": 2,
    "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8,
}
_RESYNC = (b'{"ph"', b'{"name"')
_FRAGMENT_RE = re.compile(rb'\{\s*"(ph"|name"\s*:\s*"process_(name|sort_index)")')
_META_RE = re.compile(
    rb'^\{"name": "(?P<kind>process_name|process_sort_index)", "ph": "M", "pid": (?P<pid>\d+), '
    rb'"args": \{"name": "(?P<name>.*)"\}\}$',
    re.DOTALL,
)

class TimelineParser:
    """Stream one timeline file into Arrow batches.

    Iterate :meth:`batches` to get ``(table_name, pyarrow.Table)`` pairs for ``spans``,
    ``ticks`` and ``markers``; once exhausted, :attr:`info`, :attr:`issues` and
    :meth:`tensors_table` describe the whole file.

    Raises:
        InputError: the file is not a Horovod timeline (checked before any batch).
    """

    def __init__(self, path: str | Path, *, input_id: str = "", chunk_bytes: int = DEFAULT_CHUNK,
                 display_name: str | None = None) -> None:
        self.path = Path(path)
        self.name = display_name or str(path)
        self.input_id = input_id
        self.chunk_bytes = max(4096, chunk_bytes)
        self.sink = IssueSink(self.name)
        self.info = TimelineInfo(self.name)
        self._strings: tuple[list[str], list[str], list[str]] = ([], [], [])
        self._tensor_names: list[str] = []
        self._pid_tensor = np.full(1024, -1, np.int32)
        self._state = ScanState.new()
        self._progress = 0

    # -- public -------------------------------------------------------------------
    @property
    def issues(self) -> list[ParseIssue]:
        return self.sink.issues

    def batches(self, stream: BinaryIO | None = None) -> Iterator[tuple[str, pa.Table]]:
        """Yield ``(table, batch)`` pairs; read ``stream`` (already decompressed) if given."""
        st = self._state
        chunk = self.chunk_bytes
        buf = np.empty(chunk + 64, np.uint8)
        cap_spans = max(1024, chunk // 48)
        outs = {
            "spans": np.empty((cap_spans, S.SP_N), np.int64),
            "ticks": np.empty((max(1024, chunk // 64), S.TK_N), np.int64),
            "markers": np.empty((max(1024, chunk // 64), S.MK_N), np.int64),
            "metas": np.empty((4096, S.MT_N), np.int64),
            "newstr": np.empty((4096, 4), np.int64),
        }
        outn = np.zeros(6, np.int64)
        with nullcontext(stream) if stream is not None else open_binary(self.path) as f:
            end = readinto_full(f, memoryview(buf)[:chunk])
            eof = end < chunk
            pos = self._open_array(buf, end)
            if pos < 0:  # empty timeline
                self._progress = end
                self._note_gzip_cut(f)
                self._finish(status="empty")
                return
            base = 0
            while True:
                status, pos = S.scan(buf, pos, end, base, st.ctr, st.iss, st.top, st.pstat, st.slots,
                                     st.ikeys, st.ivals, outs["spans"], outs["ticks"], outs["markers"],
                                     outs["metas"], outs["newstr"], outn)
                yield from self._flush(buf, base, outs, outn)
                self._progress = base + pos
                if status == S.ST_FULL:
                    continue
                if status == S.ST_GROW:
                    st.grow()
                    continue
                if status == S.ST_CLOSED:
                    self._check_trailing(f, buf, pos, end, base)
                    self._progress = base + end
                    break
                if status == S.ST_SYNTAX:
                    pos = self._resync(buf, int(outn[5]), pos, end, base, eof)
                    if pos >= 0:
                        continue
                    pos = end  # nothing to resync to in this buffer: read on
                # ST_NEED_MORE (or resync needs more): keep the partial record, read on
                carry = end - pos
                if eof:
                    self._at_eof(buf, pos, end, base)
                    break
                if carry > MAX_RECORD:
                    self._oversized(buf, pos, base)
                    self._skipped_bytes(carry)
                    carry = 0
                    pos = end
                if carry + chunk > len(buf):
                    bigger = np.empty(carry + chunk + 64, np.uint8)
                    bigger[:carry] = buf[pos:end]
                    buf = bigger
                else:
                    buf[:carry] = buf[pos:end]
                base += pos
                n = readinto_full(f, memoryview(buf)[carry : carry + chunk])
                eof = n < chunk
                pos, end = 0, carry + n
            self._note_gzip_cut(f)
        spans = np.empty((int(st.ctr[S.C_SLOT_HW]) + 1, S.SP_N), np.int64)
        n_open = S.drain(st.top, st.pstat, st.slots, spans)
        if n_open:
            self.sink.add(
                IssueSeverity.DATA_LOSS, "timeline.unclosed_spans",
                "spans whose E never came (the job stopped, or Horovod's writer did not drain its "
                "queue at exit); kept with closed=false and no end",
                byte_offset=int(spans[:n_open, S.SP_SOFF].min()), count=n_open,
            )
            yield "spans", self._spans_table(spans[:n_open])
        self.info.counts["spans"] = self.info.counts.get("spans", 0) + n_open
        self.info.counts["unclosed_spans"] = n_open
        self._finish(status=self.info.status)

    def _note_gzip_cut(self, f: object) -> None:
        cut = getattr(f, "cut", None)
        if cut:
            self.sink.add(
                IssueSeverity.DATA_LOSS, "timeline.gzip_cut",
                f"the gzip stream is cut or damaged ({cut}); everything inflated before that point was read, "
                f"except up to {GUNZIP_PIECE // 1024} KiB just before the damage",
                byte_offset=self._progress,
            )

    def tensors_table(self) -> pa.Table:
        """One row per pid seen in metadata or events (call after :meth:`batches`)."""
        st = self._state
        n_pid = max(len(self._pid_tensor), len(st.top))
        pids = np.arange(n_pid)
        stat = np.zeros((n_pid, S.P_N), np.int64)
        stat[:, S.P_FIRST_TS] = S.MISSING
        stat[:, S.P_OPNAME] = -1
        stat[: len(st.pstat)] = st.pstat
        tix = np.full(n_pid, -1, np.int32)
        tix[: len(self._pid_tensor)] = self._pid_tensor
        seen = (tix >= 0) | (stat[:, S.P_NEG] + stat[:, S.P_OPS] > 0) | (stat[:, S.P_FIRST_TS] != S.MISSING)
        keep = np.flatnonzero(seen)
        names = np.array(self._tensor_names + [None], dtype=object)
        opname = stat[keep, S.P_OPNAME]
        first = stat[keep, S.P_FIRST_TS]
        return pa.Table.from_arrays(
            [
                self._input_col(len(keep)),
                pa.array(pids[keep].astype(np.int32)),
                pa.array(names[tix[keep]], type=pa.string()),
                dict_column(opname, self._strings[S.CAT_NAME]),
                pa.array(stat[keep, S.P_NEG]),
                pa.array(stat[keep, S.P_TICKED]),
                pa.array(stat[keep, S.P_OPS]),
                pa.array(first, mask=first == S.MISSING, type=pa.int64()),
            ],
            schema=arrow_schema("tensors"),
        )

    # -- start and end of the array ---------------------------------------------------
    def _open_array(self, buf: np.ndarray, end: int) -> int:
        """Position after '[', or -1 for an empty timeline. Raises InputError otherwise."""
        head = bytes(buf[: min(end, 4096)])
        skip = 3 if head.startswith(b"\xef\xbb\xbf") else 0
        body = head[skip:].lstrip(b" \t\r\n")
        at = len(head) - len(body)
        if not body:
            if end > len(head):  # 4 KiB of whitespace and more: keep looking in the scan
                raise InputError(self.name, "expected '[' (a Horovod timeline), found only whitespace in the first 4 KiB",
                                 offset=at)
            return -1
        if body[:1] == b"[":
            rest = body[1:].lstrip(b" \t\r\n")
            if not rest and end <= len(head):
                return -1
            return at + 1
        if _FRAGMENT_RE.match(body):
            self.sink.add(
                IssueSeverity.INFO, "timeline.headless_fragment",
                "the file starts with a trace event instead of '[': a piece cut out of a larger timeline; "
                "spans whose B lies before the cut show up as orphan E events",
                byte_offset=at,
            )
            return at
        if body[:1] == b"{":
            raise InputError(
                self.name, "found a JSON object, expected a JSON array of trace events ('[')", offset=at,
                hint="Horovod writes a bare array. A {\"traceEvents\": ...} file comes from another profiler "
                     "(e.g. the PyTorch profiler), which hvd-analyze does not read.",
            )
        raise InputError(
            self.name, f"expected '[' (a Horovod timeline), found {describe_bytes(body)}", offset=at,
            hint="pass the file named by HOROVOD_TIMELINE (written on rank 0 only)",
        )

    def _check_trailing(self, f: BinaryIO, buf: np.ndarray, pos: int, end: int, base: int) -> None:
        self.info.status = "closed"
        extra = len(bytes(buf[pos:end]).strip())
        while more := f.read(1 << 20):
            extra += len(more.strip())
        if extra:
            self.sink.add(IssueSeverity.DATA_LOSS, "timeline.trailing_data",
                          f"{extra} non-blank bytes after the closing ']' were ignored", byte_offset=base + pos)

    def _at_eof(self, buf: np.ndarray, pos: int, end: int, base: int) -> None:
        tail = bytes(buf[pos:end])
        rest = tail.lstrip(b" \t\r\n,")
        self.info.status = "unterminated"
        if rest.strip():
            self.info.status = "truncated"
            self.sink.add(
                IssueSeverity.DATA_LOSS, "timeline.truncated_record",
                f"the file ends inside a record ({len(rest)} bytes: {describe_bytes(rest)}); that record is "
                "lost, every record before it was read",
                byte_offset=base + pos + len(tail) - len(rest),
            )
        elif self.info.layout == "glued" or self.info.start_time_since_epoch_us is not None:
            self.sink.add(
                IssueSeverity.DATA_LOSS, "timeline.unterminated",
                "the file ends without ']' although Horovod >=0.20.1 closes it after every event: the "
                "writer was killed; records still in its queue are lost",
                byte_offset=base + end,
            )
        else:
            self.sink.add(IssueSeverity.INFO, "timeline.unterminated",
                          "no closing ']' (normal for Horovod <=0.20.0, which never closes the array)",
                          byte_offset=base + end)

    def _resync(self, buf: np.ndarray, err: int, pos: int, end: int, base: int, eof: bool) -> int:
        """After a syntax error: skip to the next record start, or raise if nothing was read yet."""
        found = describe_bytes(bytes(buf[err : min(end, err + 24)]))
        if self._state.ctr[S.C_RECORDS] == 0:
            raise InputError(self.name, f"expected a trace event object, found {found}", offset=base + err,
                             hint="this is not a Horovod timeline (a JSON array of {\"ph\": ...} events)")
        data = bytes(buf[pos + 1 : end])
        hits = [k for k in (data.find(p) for p in _RESYNC) if k >= 0]
        nxt = pos + 1 + min(hits) if hits else -1
        skipped = (nxt if nxt >= 0 else end) - pos
        self.sink.add(IssueSeverity.DATA_LOSS, "timeline.corrupt_record",
                      f"unreadable record ({found} at byte {base + err}); skipped to the next record",
                      byte_offset=base + pos)
        self._skipped_bytes(skipped)
        if nxt < 0 and eof:
            return end
        return nxt

    def _oversized(self, buf: np.ndarray, pos: int, base: int) -> None:
        if self._state.ctr[S.C_RECORDS] == 0:
            raise InputError(self.name, f"the first record is larger than {MAX_RECORD >> 20} MiB without closing",
                             offset=base + pos, hint="this is not a Horovod timeline")
        self.sink.add(IssueSeverity.DATA_LOSS, "timeline.corrupt_record",
                      f"a record longer than {MAX_RECORD >> 20} MiB was skipped", byte_offset=base + pos)

    def _skipped_bytes(self, n: int) -> None:
        self.info.counts["skipped_bytes"] = self.info.counts.get("skipped_bytes", 0) + n

    # -- flushing kernel output ----------------------------------------------------------
    def _flush(self, buf: np.ndarray, base: int, outs: dict[str, np.ndarray],
               outn: np.ndarray) -> Iterator[tuple[str, pa.Table]]:
        ns, nt, nm, nx, nn = (int(v) for v in outn[:5])
        for cat, sid, s, e in outs["newstr"][:nn]:
            raw = bytes(buf[s:e])
            text = decode_str(raw)
            strings = self._strings[cat]
            assert sid == len(strings), "kernel interning out of order"
            strings.append(text)
        for s, e, _ph, _fl in outs["metas"][:nx]:
            self._meta(bytes(buf[s:e]), base + int(s))  # s is a buffer index, not a file offset
        for key, n in (("spans", ns), ("ticks", nt), ("markers", nm)):
            self.info.counts[key] = self.info.counts.get(key, 0) + n
        if ns:
            yield "spans", self._spans_table(outs["spans"][:ns])
        if nt:
            yield "ticks", self._ticks_table(outs["ticks"][:nt])
        if nm:
            t = outs["markers"][:nm]
            yield "markers", pa.Table.from_arrays(
                [self._input_col(nm), dict_column(t[:, S.MK_NAME], self._strings[S.CAT_NAME]),
                 pa.array(t[:, S.MK_TS].copy()), pa.array(t[:, S.MK_OFF].copy())],
                schema=arrow_schema("markers"),
            )
        outn[:] = 0

    def _meta(self, raw: bytes, offset: int) -> None:
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            m = _META_RE.match(raw)  # an unescaped quote in a tensor name
            if m is None:
                self.sink.add(IssueSeverity.DATA_LOSS, "timeline.bad_metadata",
                              f"unreadable metadata record {describe_bytes(raw)}; dropped", byte_offset=offset)
                return
            rec = {"name": m["kind"].decode(), "ph": "M", "pid": int(m["pid"]),
                   "args": {"name": m["name"].decode("utf-8", "replace")}}
        args = rec.get("args") if isinstance(rec.get("args"), dict) else {}
        pid = rec.get("pid")
        kind = rec.get("name")
        if kind == "process_name" and isinstance(pid, int):
            if "start_time_since_epoch_in_micros" in args:
                self.info.start_time_since_epoch_us = int(args["start_time_since_epoch_in_micros"])
            elif isinstance(args.get("name"), str):
                self._name_pid(pid, args["name"], offset)
            return
        if kind == "process_sort_index":
            return
        self.sink.add(IssueSeverity.INFO, "timeline.unknown_metadata",
                      f"metadata record {kind!r} is not one Horovod writes; ignored", byte_offset=offset)

    def _name_pid(self, pid: int, name: str, offset: int) -> None:
        if pid >= len(self._pid_tensor):
            grown = np.full(max(pid + 1, 2 * len(self._pid_tensor)), -1, np.int32)
            grown[: len(self._pid_tensor)] = self._pid_tensor
            self._pid_tensor = grown
        old = self._pid_tensor[pid]
        if old >= 0 and self._tensor_names[old] != name:
            self.sink.add(IssueSeverity.INFO, "timeline.pid_renamed",
                          "a pid was given a second tensor name (a restarted timeline appended to the same file?)",
                          byte_offset=offset)
        self._pid_tensor[pid] = len(self._tensor_names)
        self._tensor_names.append(name)

    def _input_col(self, n: int) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([self.input_id]))

    def _tensor_col(self, pids: np.ndarray) -> pa.Array:
        pt = self._pid_tensor
        idx = np.full(len(pids), -1, np.int32)
        ok = pids < len(pt)
        idx[ok] = pt[pids[ok]]
        return dict_column(idx, self._tensor_names)

    def _spans_table(self, a: np.ndarray) -> pa.Table:
        c = {k: np.ascontiguousarray(a[:, k]) for k in range(S.SP_N)}
        closed = c[S.SP_END] != -1
        dtypes = self._strings[S.CAT_DTYPE]
        sizes = np.array([DTYPE_BYTES.get(d, -1) for d in dtypes] + [-1], np.int64)
        numel = c[S.SP_NUMEL]
        nbytes = numel * sizes[c[S.SP_DTYPE]]
        nbytes_null = (numel < 0) | (c[S.SP_DTYPE] < 0) | (sizes[c[S.SP_DTYPE]] < 0)
        return pa.Table.from_arrays(
            [
                self._input_col(len(a)),
                pa.array(c[S.SP_ID]),
                pa.array(c[S.SP_PID].astype(np.int32)),
                self._tensor_col(c[S.SP_PID]),
                dict_column(c[S.SP_NAME], self._strings[S.CAT_NAME]),
                dict_column(c[S.SP_KIND], list(KINDS)),
                pa.array(c[S.SP_DEPTH].astype(np.int16)),
                pa.array(c[S.SP_START]),
                pa.array(c[S.SP_END], mask=~closed),
                pa.array(c[S.SP_END] - c[S.SP_START], mask=~closed),
                pa.array(closed),
                pa.array(c[S.SP_PARENT], mask=c[S.SP_PARENT] < 0),
                pa.array(c[S.SP_OP], mask=c[S.SP_OP] < 0),
                dict_column(c[S.SP_DTYPE], dtypes),
                dict_column(c[S.SP_SHAPE], self._strings[S.CAT_SHAPE]),
                pa.array(numel, mask=numel < 0),
                pa.array(nbytes, mask=nbytes_null),
                pa.array(c[S.SP_SOFF]),
                pa.array(c[S.SP_EOFF], mask=~closed),
            ],
            schema=arrow_schema("spans"),
        )

    def _ticks_table(self, t: np.ndarray) -> pa.Table:
        c = {k: np.ascontiguousarray(t[:, k]) for k in range(S.TK_N)}
        return pa.Table.from_arrays(
            [
                self._input_col(len(t)),
                pa.array(c[S.TK_PID].astype(np.int32)),
                self._tensor_col(c[S.TK_PID]),
                pa.array(c[S.TK_NEG], mask=c[S.TK_NEG] < 0),
                pa.array(c[S.TK_RANK].astype(np.int32)),
                pa.array(c[S.TK_TS]),
                pa.array(c[S.TK_ORDER].astype(np.int32)),
                pa.array(c[S.TK_OFF]),
            ],
            schema=arrow_schema("ticks"),
        )

    # -- summary ----------------------------------------------------------------------
    def _finish(self, status: str) -> None:
        st = self._state
        info = self.info
        info.status = status
        info.bytes_read = self._progress
        info.records = int(st.ctr[S.C_RECORDS])
        nl, glued = int(st.ctr[S.C_SEP_NL]), int(st.ctr[S.C_SEP_GLUED])
        if glued > 0:
            info.layout = "glued"
        elif nl > 0:
            info.layout = "line_per_event"
        elif info.start_time_since_epoch_us is not None:
            info.layout = "glued"
        info.first_ts_us = int(st.ctr[S.C_FIRST_TS]) if st.ctr[S.C_FIRST_TS] != -1 else None
        info.last_ts_us = int(st.ctr[S.C_LAST_TS]) if info.first_ts_us is not None else None
        info.max_depth = int(st.ctr[S.C_MAX_DEPTH])
        info.uptime_origin = uptime_origin(info.first_ts_us, info.start_time_since_epoch_us is not None)
        neg = st.pstat[:, S.P_NEG]
        ticked = st.pstat[:, S.P_TICKED]
        info.cache = cache_verdict(neg, ticked)
        # A legacy file written by the event-per-line writer has a newline after every
        # record; metadata lines alone also end in newlines in the glued layout.
        info.version = guess_version(
            names=self._strings[S.CAT_NAME],
            has_start_time_header=info.start_time_since_epoch_us is not None,
            glued=info.layout == "glued",
            line_per_event=info.layout == "line_per_event",
            e_named=bool(st.iss[S.I_E_NAMED, 0]),
            uptime_origin=info.uptime_origin,
            has_markers="CYCLE_START" in self._strings[S.CAT_NAME],
            ticks_every_negotiation=info.cache.steady_state_ticks,
        )
        for k, sev, code, msg in KERNEL_ISSUES:
            count, first = int(st.iss[k, 0]), int(st.iss[k, 1])
            self.sink.add(sev, code, msg, byte_offset=first, count=count)
        if status == "empty":
            self.sink.add(IssueSeverity.INFO, "timeline.empty",
                          "empty timeline: no collective ran while it was recorded (Horovod leaves a 0-byte "
                          "file (>=0.20.1) or just '[' (<=0.20.0) then)", byte_offset=0)


@dataclass(frozen=True, slots=True)
class ParsedTimeline:
    tables: dict[str, pa.Table]
    info: TimelineInfo
    issues: list[ParseIssue]


def parse_timeline(path: str | Path, *, input_id: str = "", chunk_bytes: int = DEFAULT_CHUNK) -> ParsedTimeline:
    """Parse a whole timeline into in-memory tables (for small files and tests)."""
    parser = TimelineParser(path, input_id=input_id, chunk_bytes=chunk_bytes)
    parts: dict[str, list[pa.Table]] = {"spans": [], "ticks": [], "markers": []}
    for name, table in parser.batches():
        parts[name].append(table)
    tables = {
        name: (pa.concat_tables(ts).unify_dictionaries().combine_chunks() if ts
               else arrow_schema(name).empty_table())
        for name, ts in parts.items()
    }
    tables["tensors"] = parser.tensors_table()
    return ParsedTimeline(tables, parser.info, parser.issues)
