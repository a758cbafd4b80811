"""What a terminal, a web page, an editor or a log collector added to the lines NCCL and the job printed, taken off
before they are read (``docs/formats/nccl-log.md`` §1): ANSI sequences, HTML character references, automatic links,
Ray's note of a deduplicated line, and a collector's JSON wrapping of each line (Docker's ``json-file`` driver,
``{"log":"…\\n","stream":"stdout","time":"…"}``; the JSON exports of Loki, Cloud Logging or journald). Each line
stays one line, so a finding's line number is the file's.
"""

from __future__ import annotations

import html
import json
import re
from array import array
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import AnyStr

from parsers import _paste_lines

#: ANSI colour and cursor sequences (Ray's worker tags, coloured terminals and CI consoles).
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: HTML character references of a log pasted from a web page (``10.0.0.2&lt;45763&gt;``, ``-&gt; 6``).
ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d{1,5}|#x[0-9a-fA-F]{1,4});")


#: A link an editor or a chat made of a bare address or file name, written back as its text: Markdown's
#: ``[net_ib.cc:101](http://net_ib.cc:101/)`` (GitHub's editor pasting rich text), Slack's
#: ``<http://10.1.3.201|10.1.3.201>``. Only a link whose address is its text: a link of other words is the
#: writer's own.
AUTOLINK = re.compile(r"\[([^\[\]()\s]{1,256})\]\(https?://\1/?\)|<https?://([^<>|\s]{1,256}?)/?\|\2>")
AUTOLINK_BYTES = re.compile(AUTOLINK.pattern.encode("ascii"))
#: what Ray's log deduplication (2.3+) appends to a line that several workers printed alike: `` [repeated 6x across
#: cluster]``, on the first such line with its note ``(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 …)``
RAY_REPEAT = re.compile(
    r" \[repeated \d{1,9}x across cluster\](?: \(Ray deduplicates logs by default\.[^\n]{0,300}\))?(?=\r?$)",
    re.MULTILINE,
)
RAY_REPEAT_BYTES = re.compile(RAY_REPEAT.pattern.encode("ascii"), re.MULTILINE)


#: a line that is one JSON object, as a collector writes a line it read (the object's text field: :data:`TEXT_FIELDS`)
JSON_LINE = re.compile(r'^\{"[^\n]*\}(?=\r?$)', re.MULTILINE)
JSON_LINE_BYTES = re.compile(JSON_LINE.pattern.encode("ascii"), re.MULTILINE)
#: the field that holds the line a collector read: Docker's json-file driver (``log``), journald's export (``MESSAGE``),
#: Cloud Logging's (``textPayload``), Loki's and most shippers' (``message``, ``msg``, ``line``), Splunk's (``_raw``)
TEXT_FIELDS = ("log", "MESSAGE", "textPayload", "message", "msg", "line", "_raw")


def json_text(line: str) -> str | None:
    """The line a collector's JSON object ``line`` wraps (its newlines as spaces, its ANSI sequences taken off: JSON
    escapes them), or None when ``line`` is not such an object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    text = next((v for k in TEXT_FIELDS if isinstance(v := obj.get(k), str)), None)
    if text is None:
        return None
    text = text.rstrip("\n").rstrip("\r").replace("\r\n", " ").replace("\n", " ")
    return ANSI.sub("", text) if "\x1b" in text else text


def _unwrapped(m: re.Match[str]) -> str:
    text = json_text(m[0])
    return m[0] if text is None else text


def _unwrapped_bytes(m: re.Match[bytes]) -> bytes:
    """:func:`_unwrapped` of UTF-8 bytes (invalid ones replaced, as the text path reads them)."""
    text = json_text(m[0].decode("utf-8", "replace"))
    return m[0] if text is None else text.encode("utf-8", "surrogatepass")


def clean_paste(text: str) -> str:
    """``text`` with a collector's JSON wrapping of a line taken off, without ANSI sequences, with HTML character
    references decoded, automatic links written back as their text and Ray's note of a deduplicated line taken off:
    what a collector, a terminal, a web page or an editor added to the lines NCCL printed."""
    if "{" in text:
        text = _unwrap_lines(text, _wrapped_lines(text, "{", '{"', "\n"), lambda line: JSON_LINE.sub(_unwrapped, line))
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "&" in text and ENTITY.search(text):
        text = ENTITY.sub(lambda m: html.unescape(m[0]), text)
    if "](http" in text or "<http" in text:
        text = AUTOLINK.sub(_link_text, text)
    if "x across cluster]" in text:
        text = RAY_REPEAT.sub("", text)
    return text


def _link_text(m: re.Match[AnyStr]) -> AnyStr:
    """The text of an automatic link (Markdown's or Slack's form), as str or bytes."""
    return m[1] or m[2]


ENTITY_BYTES = re.compile(ENTITY.pattern.encode("ascii"))


def clean_bytes(data: bytes) -> bytes:
    """:func:`clean_paste` of UTF-8 ``data``, as bytes: decoding the result (invalid bytes replaced) gives
    what cleaning the decoded text gives. An ANSI sequence's removal could join the bytes around it into
    one character, so a block holding one is cleaned as text; a character reference is replaced in place
    (what it stands for, in UTF-8: it cannot continue a cut sequence before it)."""
    if _paste_lines.COMPILED:  # the searches in one pass of C code, without the GIL (parsers._paste_lines)
        found = array("q", bytes(8 * (data.count(b"\n") + 1)))
        count, flags = _paste_lines.scan(data, found)
        if not flags & (_paste_lines.ESCAPE | _paste_lines.JSON_LINE):
            return sub_lines(data, _paste_lines.NEEDLES, _PASTE_STEPS, found[:count])
    if b"\x1b" in data:
        return clean_paste(data.decode("utf-8", "replace")).encode("utf-8", "surrogatepass")
    spans = _wrapped_lines(data, b"{", b'{"', b"\n")  # each search of the block is ~0.5 s a GB here: once
    data = _unwrap_lines(data, spans, lambda line: JSON_LINE_BYTES.sub(_unwrapped_bytes, line))
    return sub_lines(data, _paste_lines.NEEDLES, _PASTE_STEPS)


def _wrapped_lines(data: AnyStr, brace: AnyStr, opener: AnyStr, newline: AnyStr) -> list[tuple[int, int]]:
    """The spans of ``data``'s lines that start with ``{"`` (found by their ``{`` at memchr's speed: a regex anchored at
    every line's start, or a longer needle, took 4-100 ms a 4 MB block)."""
    spans = []
    i = data.find(brace)
    while i >= 0:
        if (i == 0 or data[i - 1 : i] == newline) and data.startswith(opener, i):
            end = data.find(newline, i)
            end = len(data) if end < 0 else end
            spans.append((i, end))
            i = end
        i = data.find(brace, i + 1)
    return spans


def _unwrap_lines(data: AnyStr, spans: list[tuple[int, int]], line: Callable[[AnyStr], AnyStr]) -> AnyStr:
    """``data`` with each line of ``spans`` replaced by ``line`` of it."""
    if not spans:
        return data
    out: list[AnyStr] = []
    done = 0
    for start, end in spans:
        out += (data[done:start], line(data[start:end]))
        done = end
    out.append(data[done:])
    return data[:0].join(out)


def _entity_bytes(m: re.Match[bytes]) -> bytes:
    return _unescaped(m[0])


@lru_cache(maxsize=1024)  # a paste's references are a few, again and again
def _unescaped(entity: bytes) -> bytes:
    return html.unescape(entity.decode("ascii")).encode("utf-8", "surrogatepass")


Step = tuple[re.Pattern[bytes], bytes | Callable[[re.Match[bytes]], bytes]]
#: what a paste added, read off in this order (:func:`clean_paste`'s, after a collector's JSON wrapping): character
#: references (in place: what one stands for cannot continue a cut sequence before it), automatic links (their text, a
#: run of their own bytes: valid UTF-8 stays valid), Ray's note (ASCII at a line's end)
_PASTE_STEPS: tuple[Step, ...] = ((ENTITY_BYTES, _entity_bytes), (AUTOLINK_BYTES, _link_text), (RAY_REPEAT_BYTES, b""))


def sub_lines(
    data: bytes, needles: Sequence[bytes], steps: Sequence[Step], starts: Sequence[int] | None = None
) -> bytes:
    """Each step's ``rx.sub(repl, ...)`` over ``data`` in turn, for patterns whose every match holds one of ``needles``
    and no newline: only the lines that hold a needle are searched (a block of 4 MB with one pasted link was searched
    whole by a pattern that starts with a class of characters, at a few hundred MB/s), each run of such lines one after
    the other once by every step (a reference may spell a link's or a note's needle; an escaped paste's every line
    holds one: one search per line was 5 us a line), and the block is joined once. ``starts``: those lines' starts, in
    order, when :func:`parsers._paste_lines.scan` found them."""
    if starts is None:
        held: set[int] = set()
        for needle in needles:  # one search of the block a needle, from each line it is in to the next line
            i = data.find(needle)
            while i >= 0:
                held.add(data.rfind(b"\n", 0, i) + 1)
                end = data.find(b"\n", i)
                i = -1 if end < 0 else data.find(needle, end)
        starts = sorted(held)
    if not starts:
        return data
    runs: list[list[int]] = []  # runs of such lines one after the other: searched together (no match spans lines)
    for start in starts:
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if runs and runs[-1][1] + 1 == start:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    out: list[bytes] = []
    done = 0
    for start, end in runs:
        text = data[start:end]
        for rx, repl in steps:
            text = rx.sub(repl, text)
        out += (data[done:start], text)
        done = end
    out.append(data[done:])
    return b"".join(out)
