"""The compiled reader counts application output itself only where the Python path would count it foreign.

:func:`parsers.nccl._foreign.certainly_foreign` must never claim a line the Python path reads as blank
(a launcher's tag alone) or as an NCCL message cut from its header: its test rests on every message
:func:`~parsers.nccl.messages.classify` reads starting with one of ``FACT_STARTS`` or holding one of
``FACT_TEXTS``, checked here on every message and line of the corpus, and on lines built at its edges.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers.nccl._foreign as compiled_foreign
from parsers.nccl._foreign import certainly_foreign
from parsers.nccl.messages import FACT_STARTS, FACT_TEXTS, classify
from parsers.nccl.records import PREFIX_ONLY, split_records
from tests.kernels.reference import load_source

REFERENCE = load_source("parsers/nccl/_foreign.py", "reference_nccl_foreign")


def _read_by_python_as_not_foreign(line: str) -> bool:
    """What ``JobLogParser._other_line`` reads as blank or as an orphan message (the rest is foreign)."""
    return not line.strip() or PREFIX_ONLY.match(line) is not None or classify.__wrapped__(line.strip()) is not None


def _announced(msg: str) -> bool:
    return msg.startswith(FACT_STARTS) or any(t in msg for t in FACT_TEXTS)


def _corpus_lines(corpus: Path) -> list[str]:
    logs = sorted(p for d in sorted(corpus.glob("nccl*")) for p in d.glob("*.log"))
    return [x for p in logs for x in p.read_text("utf-8", "replace").splitlines()]


def test_every_message_classify_reads_starts_or_holds_a_fact_text(corpus: Path) -> None:
    read = 0
    for line in _corpus_lines(corpus):
        for text in (line.strip(), *(r.msg for r in split_records(line)[0])):
            if classify.__wrapped__(text) is not None:
                read += 1
                assert _announced(text), text
    assert read > 1_000


def test_no_corpus_line_the_python_path_reads_is_claimed(corpus: Path) -> None:
    claimed = 0
    for line in _corpus_lines(corpus):
        if "NCCL" in line:
            continue
        raw = line.encode("utf-8", "surrogatepass")
        if certainly_foreign(raw, 0, len(raw)):
            claimed += 1
            assert not _read_by_python_as_not_foreign(line), line
    assert claimed > 300  # the fast path does take most application output


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "[1,0]<stdout>:",
        "> [1,3]<stderr>:",
        "node01:",
        "3:",
        "|",
        "\u00a0Channel 00 : 0[0] -> 1[1] via P2P/IPC",  # a message behind a no-break space
        "\u3000Using network IB",
        "Connected all rings",
        "comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        "Ring 00 : 0 1",
        "misc/socket.cc:47 -> 3",
        "host:\u00a0",
        "\u00e9t\u00e9:",  # one word of letters other than ASCII: Python's \w decides
    ],
)
def test_lines_at_the_edges_go_to_the_python_path(line: str) -> None:
    raw = line.encode()
    assert not certainly_foreign(raw, 0, len(raw))


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 1/10: loss 0.532, accuracy 0.81",
        "\u26a0 /scratch not found, using /tmp for caching",
        "...",
        "============================================================",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
    ],
)
def test_application_output_is_counted_by_the_reader(line: str) -> None:
    raw = line.encode()
    assert certainly_foreign(raw, 0, len(raw))
    assert not _read_by_python_as_not_foreign(line)


def test_the_test_is_compiled_and_its_source_agrees(corpus: Path) -> None:
    """``pip install`` compiled it; the source, run as Python, says the same of every line of the corpus."""
    assert compiled_foreign.COMPILED is True, "parsers.nccl._foreign is not compiled: reinstall with a C compiler"
    for line in _corpus_lines(corpus):
        raw = line.encode("utf-8", "surrogatepass")
        assert REFERENCE.certainly_foreign(raw, 0, len(raw)) == certainly_foreign(raw, 0, len(raw)), line
