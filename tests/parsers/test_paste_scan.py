"""The compiled search of a block for what a paste added (:mod:`parsers._paste_lines`) finds what Python's searches find.

The lines holding a needle (a character reference's ``&``, a link's ``http``, Ray's note), an ANSI escape, a line that
is a JSON object: the compiled module, its source run uncompiled, and ``bytes.find`` agree on random blocks built of
those texts (cut, run together, at a block's ends) and on the corpus's logs; and :func:`parsers.paste.clean_bytes`
gives the same bytes by the compiled search and by Python's.
"""

from __future__ import annotations

import random
from array import array

import pytest

import parsers._paste_lines as compiled_paste
import parsers.paste as paste
from tests.conftest import CORPUS, ROOT
from tests.kernels.reference import load_source

REFERENCE = load_source("parsers/_paste_lines.py", "reference_paste_lines")
PIECES = [
    *compiled_paste.NEEDLES,
    *(n[:-1] for n in compiled_paste.NEEDLES if len(n) > 1),
    b"\n",
    b'{"',
    b"{",
    b'"',
    b"\x1b[31m",
    b"h",
    b"x",
    b"text ",
    b"\xc3\xa9",
    b"&lt;",
    b"[a](http://a)",
    b" [repeated 3x across cluster]",
]


def _python(data: bytes) -> tuple[list[int], int]:
    held = set()
    for needle in compiled_paste.NEEDLES:
        i = data.find(needle)
        while i >= 0:
            held.add(data.rfind(b"\n", 0, i) + 1)
            i = data.find(needle, i + 1)
    json = any(line.startswith(b'{"') for line in data.split(b"\n"))
    flags = (compiled_paste.ESCAPE if b"\x1b" in data else 0) | (compiled_paste.JSON_LINE if json else 0)
    return sorted(held), flags


def _scanned(module: object, data: bytes) -> tuple[list[int], int]:
    starts = array("q", bytes(8 * (data.count(b"\n") + 1)))
    count, flags = module.scan(data, starts)  # type: ignore[attr-defined]
    return list(starts[:count]), flags


def test_the_search_is_compiled() -> None:
    assert compiled_paste.COMPILED is True, "parsers._paste_lines is not compiled: reinstall with a C compiler"


def test_random_blocks_are_searched_as_python_searches_them() -> None:
    rng = random.Random(61)
    for _ in range(3000):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randrange(12)))
        want = _python(data)
        assert _scanned(compiled_paste, data) == want, data
        assert _scanned(REFERENCE, data) == want, data


@pytest.mark.parametrize("group", ["nccl", "nccl-more", "nccl-more2"])
def test_the_corpus_logs_are_searched_as_python_searches_them(group: str) -> None:
    logs = sorted((CORPUS / group).glob("*.log")) or pytest.skip(f"../shared/corpus/{group} is not here")
    for path in logs:
        data = path.read_bytes()
        assert _scanned(compiled_paste, data) == _python(data), path.name


def test_cleaning_a_block_gives_the_same_bytes_by_either_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks with references, links, Ray's notes, JSON lines and escapes (those two take the Python path)."""
    rng = random.Random(62)
    samples = [p.read_bytes() for p in sorted(ROOT.glob("sample_traces/**/*.log"))[:4]]
    blocks = [b"".join(rng.choice(PIECES) for _ in range(rng.randrange(12))) + b"\n" for _ in range(800)] + samples
    compiled = [paste.clean_bytes(b) for b in blocks]
    monkeypatch.setattr(paste._paste_lines, "COMPILED", False)
    assert [paste.clean_bytes(b) for b in blocks] == compiled
