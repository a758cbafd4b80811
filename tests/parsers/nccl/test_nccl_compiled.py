"""The compiled line reader (:mod:`parsers.nccl._lines`) gives the tables of the Python path it speeds up.

Three readings of each log are compared: the parser's Python path (``compiled`` off), the compiled
reader, and the reader's source run uncompiled (what compiling may change: C integers, pointers).
Every log of the corpus and the project, the same logs read in small blocks (lines and repeats across
block ends), and lines built to sit at the edges of the plain form: characters other than ASCII where
Python's ``\\s`` and ``\\w`` take them, invalid UTF-8, ANSI sequences and HTML character references,
numbers past 18 digits, CRLF.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import parsers.nccl._lines as compiled_lines
import parsers.nccl.parser as parser_module
from parsers.nccl.parser import JobLogParser
from parsers.nccl.records import Record, _plain, split_records
from parsers.paste import clean_bytes, clean_paste
from tests.conftest import CORPUS, ROOT
from tests.kernels.reference import load_source
from tests.parsers.nccl.test_nccl_fast_records import EDGES

REFERENCE = load_source("parsers/nccl/_lines.py", "reference_nccl_lines")


def _logs() -> list[Path]:
    return sorted(ROOT.glob("sample_traces/**/*.log")) + sorted(CORPUS.glob("nccl*/*.log"))


class _Trickle:
    """A stream handing out ``step`` bytes a read: many blocks, lines across their ends."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def read(self, n: int = -1) -> bytes:
        out = self.data[self.pos : self.pos + self.step]
        self.pos += len(out)
        return out


@contextmanager
def _reader(module: Any) -> Iterator[None]:
    saved = parser_module.reader
    parser_module.reader = module
    try:
        yield
    finally:
        parser_module.reader = saved


def _read(data: bytes, mode: str, step: int = 1 << 30) -> dict[str, object]:
    """Every table, fact and issue of ``data`` read by ``mode``: ``python``, ``compiled`` or ``source``."""
    with _reader(REFERENCE if mode == "source" else compiled_lines):
        p = JobLogParser("log.txt")
        p.compiled = mode != "python"
        tables = p.parse(_Trickle(data, step))
    out: dict[str, object] = {name: t.to_pylist() for name, t in tables.items()}
    out["info"] = p.info
    out["issues"] = sorted((i.code, i.count, i.message) for i in p.sink.issues)
    return out


def test_the_reader_is_compiled() -> None:
    """``pip install`` compiled it: the parser uses the extension, not the .py file."""
    assert compiled_lines.COMPILED is True, "parsers.nccl._lines is not compiled: reinstall with a C compiler"
    assert not compiled_lines.__file__.endswith(".py")
    assert JobLogParser("x").compiled


def _fields(module: Any, line: str) -> Record | None | str:
    f = np.zeros(module.N_FIELDS, np.int64)
    found = module.plain_fields(line, f)
    if found == -1:
        return "careful"
    if found == 0:
        return None
    src = line.encode()[f[5] : f[6]].decode() if f[5] >= 0 else None
    func = line.encode()[f[7] : f[8]].decode() if f[7] >= 0 else None
    raw = line.encode()
    stripped = f[2] < 0  # a header stripped to its device: no host, pid or thread
    return Record(
        raw[: f[0]].decode(),
        None if stripped else raw[f[0] : f[1]].decode(),
        None if stripped else int(f[2]),
        None if stripped else int(f[3]),
        int(f[4]),
        src,
        func,
        module.LEVELS[f[9]],
        raw[f[10] :].decode().rstrip(),
    )


def _mutated(lines: list[str], rng: random.Random) -> list[str]:
    """Each NCCL line three times with a character replaced, inserted or deleted: ones of the header's
    syntax, digits, letters, and characters other than ASCII that Python's ``\\s`` or ``\\w`` take."""
    alphabet = " :[]()0123456789aZ.-_|`'\"\t\x1cNCLIOWARTE\u00a0\u3000\u00e9\u0661\ufffd"
    out = []
    for line in lines:
        if "NCCL" not in line:
            continue
        for _ in range(3):
            i = rng.randrange(len(line))
            c = rng.choice(alphabet)
            k = rng.random()
            out.append(
                line[:i] + c + line[i + 1 :]
                if k < 0.4
                else line[:i] + c + line[i:]
                if k < 0.7
                else line[:i] + line[i + 1 :]
            )
    return out


UNICODE_EDGES = [
    "\u00a0node-1:11:12 [0] NCCL INFO a no-break space before the host",
    "\u3000node-1:11:12 [0] NCCL INFO an ideographic space before the host",
    "n\u00e9ud-1:11:12 [0] NCCL INFO a letter other than ASCII in the host",
    "node-1:\u0661\u0662:12 [0] NCCL INFO Arabic-Indic digits in the pid",
    "node-1:11:12 [0] NCCL INFO a message with \u00e9 and \U0001f4e4",
    "node-1:11:12 [0] NCCL INFO trailing spaces other than ASCII\u00a0\u3000",
    "node-1:11:12 [0] NCCL INFO \u00e9 NCCL INFO merged after a character other than ASCII",
    "node-1:11:12 [0] misc/s\u00e9cket.cc:47 NCCL WARN a source other than ASCII",
    "node-1:1234567890123456789:12 [0] NCCL INFO a pid past 18 digits",
    "node-1:11:12 [1234567890123456789] NCCL INFO a device past 18 digits",
    "10-90-43-152:120890:121560 [0] NCCL INFO a host that starts with a digit",
    "[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO a container's id after a launcher tag",
    "<cluster_name>:919:1150 [0] NCCL INFO a redacted host",
    "x <cluster_name>:919:1150 [0] misc/socket.cc:47 (f) NCCL WARN a redacted host after a word",
    "2025-05-16T16:39:51.208-07:0010-36-29-253:79:79 [0] NCCL INFO a timestamp glued to a host of digits",
    "2025-05-16T16:39:51.208-07:00 10-36-29-253:79:79 [0] NCCL INFO a timestamp, a space, a host of digits",
    "1:2:3 [0] a:5 NCCL INFO a source that reads as a host",
    "52: 10.0.0.1:2:3 [0] NCCL INFO an address for a host after a rank tag",
    "host-2:38610:38610 [0] NCCL INFO NCCL version 2.18.3+cuda12.2",
    "x host-2:38610:38610 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1",
    "a\thost-2:38610:38610 [0] NCCL INFO NCCL version 2.18.3: a tab before the host",
    "[1,0]<stdout>:host-2:38610:38610 [0] NCCL INFO NCCL version 2.18.3: a tag glued to the host",
    "host-2:38610:38610 [0] NCCL INFO x NCCL CALL y: a second record's marker",
    "host-2:38610:38610 [0] NCCL INFO x NCCL ABORT",
    "host-2:38610:38610 [0] NCCL INFO x NCCL INFOx NCCL TRACEs: no second marker",
]


def test_the_plain_fields_are_the_record_split_records_finds_on_real_mutated_and_edge_lines() -> None:
    """What the regex finds (``_plain``) and, where it finds nothing, the one record of a host that starts with
    a digit or ``<`` after a space, as the careful path reads it from the right."""
    lines = [line.rstrip("\r") for p in _logs() for line in p.read_text(errors="replace").splitlines()]
    assert len(lines) > 2000
    every = lines + _mutated(lines, random.Random(45)) + EDGES + UNICODE_EDGES
    for line in every:
        for module in (compiled_lines, REFERENCE):
            got = _fields(module, line)
            if got is None:  # the careful path alone reads it: what split_records does when the regex finds none
                assert _plain(line) is None, (module.__name__, line)
            elif got != "careful":  # the whole path reads it
                assert split_records(line) == ([got], False, False), (module.__name__, line)
    careful = sum(_fields(compiled_lines, line) == "careful" for line in lines)
    assert careful < len(lines) // 50  # on real lines the careful path stays the exception
    assert _fields(compiled_lines, "node-1:11:12 [0] NCCL INFO x") is not None
    for docker in ("[1,0]<stdout>:5873af64cf59:10158:10560 [0] NCCL INFO x", "[1,3]<stderr>:0a1b:7:8 [1] NCCL WARN y"):
        got = _fields(compiled_lines, docker)  # mpirun's tag and a container's id: read here, not the careful path
        assert isinstance(got, Record) and got.host[0].isdigit() and got.outer.endswith(">:"), docker


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name[:48])
def test_a_real_log_reads_the_same_by_every_path(path: Path) -> None:
    data = path.read_bytes()
    python = _read(data, "python")
    assert _read(data, "compiled") == python
    assert _read(data, "compiled", step=701) == _read(data, "python", step=701)


def test_the_source_run_uncompiled_reads_as_the_compiled_module() -> None:
    data = b"".join(p.read_bytes() for p in _logs()[::7])
    assert _read(data, "source", step=4093) == _read(data, "compiled", step=4093)


def _edge_log() -> bytes:
    lines: list[str | bytes] = [
        "node-1:11:12 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "node-1:11:12 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "node-1:11:12 [0] NCCL INFO Using network Socket",
        "node-1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "node-1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",  # a repeat
        "node-1:11:12 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\r",  # CRLF: no repeat
        "\x1b[32mnode-1:11:13 [1] NCCL INFO coloured by a terminal\x1b[0m",
        "node-1:11:12 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1&lt;0&gt;",
        "node-1:11:12 [0] misc/socket.cc:47 NCCL WARN Net : Connect to 10.0.0.2&lt;45763&gt; failed",
        "node-1:11:12 [0] NCCL INFO misc/socket.cc:47 -> 6",
        b"node-\xff:11:12 [0] NCCL INFO an invalid byte in the host",
        b"node-1:11:12 [0] NCCL INFO an invalid byte \xfe in the message",
        b"node-1:11:12 [0] NCCL INFO an invalid byte \xfe in the message",  # a repeat of invalid bytes
        b"node-1:11:12 [0] NCCL INFO an invalid byte \xff in the message",  # other bytes, the same text
        "",
        "\r",
        "[1,0]<stdout>:node-2:21:22 [3] NCCL INFO comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1000 - Init COMPLETE",
        "node-2:21:22 [3] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
        "node-2:21:22 [3] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 "
        "comm 0x1 [nranks=8] stream 0x3",
        "Traceback (most recent call last):",
        *UNICODE_EDGES,
        "node-1:11:12 [0] NCCL INFO comm 0x1 rank 99999999999999999999999 nranks 2 cudaDev 0 - Init START",
    ]
    return b"".join((x if isinstance(x, bytes) else x.encode("utf-8")) + b"\n" for x in lines)


def test_lines_at_the_edges_read_the_same_by_every_path() -> None:
    data = _edge_log()
    assert b"\xfe" in data and b"\x1b" in data and b"&lt;" in data
    python = _read(data, "python")
    info = python["info"]
    assert isinstance(info, dict) and info["records"] > 20
    for step in (1 << 30, 97, 13):
        assert _read(data, "compiled", step) == _read(data, "python", step), step
    assert _read(data, "source", 97) == python


def test_cleaning_bytes_decodes_as_cleaning_the_text() -> None:
    """A character reference replaced in the bytes, an ANSI sequence removed: the decoded result is
    what the text path gives, next to invalid and cut UTF-8 sequences too."""
    rng = random.Random(46)
    parts = [
        b"&lt;",
        b"&gt;",
        b"&amp;",
        b"&#233;",
        b"&#x20ac;",
        b"&#55296;",
        b"\x1b[0m",
        b"\xc3",
        b"\xe2\x82",
        b"\x80",
        b"a",
        b" ",
        b'{"log":"h:1:2 [0] NCCL INFO x\\u001b[0m\\n"}',  # a collector's JSON line, an escaped ANSI sequence in it
        b'{"log":"\xc3 &lt;"}',
    ]
    for _ in range(2000):
        data = b"".join(rng.choice(parts) for _ in range(rng.randrange(1, 9)))
        assert clean_bytes(data).decode("utf-8", "replace") == clean_paste(data.decode("utf-8", "replace")), data


def test_cleaning_the_lines_that_hold_a_needle_is_cleaning_the_block() -> None:
    """:func:`~parsers.paste.sub_lines` searches only the lines holding a pattern's needle: the result is
    the pattern's substitution over the whole block, for references, links of both forms, Ray's notes, needles
    without a match, carriage returns and a block without its last newline."""
    import html
    import re

    from parsers import paste as R

    def whole(data: bytes) -> bytes:
        data = R.JSON_LINE_BYTES.sub(R._unwrapped_bytes, data)  # a collector's wrapping, first
        data = R.ENTITY_BYTES.sub(lambda m: html.unescape(m[0].decode("ascii")).encode("utf-8", "surrogatepass"), data)
        data = R.AUTOLINK_BYTES.sub(R._link_text, data)
        return R.RAY_REPEAT_BYTES.sub(b"", data)

    pieces = [
        b"a &lt;b&gt; &amp;&#233;",
        b"[net_ib.cc:101](http://net_ib.cc:101/)",
        b"<http://10.1.3.201|10.1.3.201>",
        b"[a](http://b/)",
        b" [repeated 6x across cluster]",
        b" [repeated 2x across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to see all.)",
        b"h:1:2 [0] NCCL INFO x",
        b"&",
        b"](http",
        b"<http",
        b"x across cluster]",
        b"\r",
        b"[a](&#104;ttp://a/)",  # a reference that spells a link's needle: read as the link once decoded
        b" [repeated 3x across cluster&#93;",
        b'{"log":"h:1:2 [0] NCCL INFO &lt;y&gt;\\n","stream":"stdout"}',  # a collector's JSON line: unwrapped first
        b'{"loss": 1.5}',  # JSON without a line in it: left as it is
        b'{"',
    ]
    rng = random.Random(53)
    for _ in range(3000):
        lines = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(4))) for _ in range(rng.randrange(7))]
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.7 else b"")
        assert clean_bytes(data) == whole(data), data
    assert R.sub_lines(b"a\nb &lt;\nc\n", (b"&",), [(re.compile(rb"&lt;"), b"<")]) == b"a\nb <\nc\n"


def test_job_log_signals_read_the_same_by_every_path() -> None:
    """Framework reports with their Last error on the next line, a hard-wrapped watchdog timeout, a stall
    warning with its rank list, an autotune CSV, worker exits, work lines: the lines the compiled reader
    passes by as neither record nor signal are only those the Python path reads as neither."""
    from tests.parsers.nccl.test_nccl_chunks import KITCHEN_SINK

    data = (KITCHEN_SINK + "\nProcess 3 exit with status code 137.\nplain application output, 1 | 2\n").encode()
    data += b"| hierarchical_allreduce | hierarchical_allgather | cycle_time_ms | tensor_fusion_threshold | score |\n"
    data += b"| 0 | 0 | 5 | 64 | 120.5 |\n"
    python = _read(data, "python")
    assert python["info"]["autotune_rows"] and python["info"]["stall_ranks"]  # type: ignore[index]
    for step in (1 << 30, 61):
        assert _read(data, "compiled", step) == _read(data, "python", step), step
    assert _read(data, "source", 61) == python


def test_a_line_is_searched_for_its_signals_by_first_byte_buckets() -> None:
    """The readers' gates are kept in a table by first byte (:func:`parsers.nccl._foreign.text_table`): the reader's
    search of a line (the source's, run as Python) finds the bits of exactly the gates in it
    (:mod:`parsers.nccl.signal_groups`), also texts at the line's end, cut one byte short, run together, and bytes
    no gate starts with; and SIGNAL exactly where a job-log signal's hint or an autotune line's separators are."""
    from parsers.nccl import joblog, signal_groups

    texts, spans, first = REFERENCE.SIGNAL_TEXTS, REFERENCE.SIGNAL_SPANS, REFERENCE.SIGNAL_FIRST
    assert list(first[:1]) == [0] and int(first[256]) == len(signal_groups.TEXTS) == len(spans) // 2
    gates = [(t.encode(), bit) for t, bit in zip(signal_groups.TEXTS, signal_groups.BITS, strict=True)]
    hints = [h.encode() for h in joblog.SIGNAL_HINTS]
    pieces = [*(g for g, _ in gates), *(g[:-1] for g, _ in gates), *(g[1:] for g, _ in gates), b"x", b" ", b"\xc3\xa9"]
    rng = random.Random(59)
    for _ in range(4000):
        line = b"".join(rng.choice([*pieces, b"Watchdog", b",", b"|"]) for _ in range(rng.randrange(7)))
        want = 0
        for gate, bit in gates:
            if gate in line:
                want |= bit
        signalled = any(h in line for h in hints) or line.count(b",") + line.count(b"|") >= joblog.HEADER_SEPARATORS
        want = want | signal_groups.SIGNAL if signalled else want
        got = REFERENCE._hints(line, 0, len(line), texts, spans, first, REFERENCE.SIGNAL_BITS)
        assert got == want, line
        assert bool(got & signal_groups.SIGNAL) == signalled, line
