"""Generated NCCL records have the shape of real ones: same keys in the same order, same separators,
same field sets, and only transports and collectives that real logs print.

The reference is every record of the 71 corpus logs. A wording the corpus holds no log of (2.17's
``busId … commId`` Init line, 2.26's ``Bootstrap:``) is compared with the format string that
the reference spec ``../shared/docs/nccl-log-format.md`` quotes for that release instead; the test names which reference each record
matched, and a record that matches neither fails with both nearest candidates.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parsers.nccl.records import split_records
from sample_traces.generator.nccl import WORDINGS, NcclLogSpec, write_nccl_log

_VALUE = re.compile(
    r"(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}%\w+|0x[0-9a-fA-F]+|\d+\.\d+\.\d+\.\d+|[\w.+-]*\d[\w.+-]*"
)
_OP = re.compile(r"^(AllReduce|Broadcast|AllGather|ReduceScatter|Reduce|Send|Recv): ")
_LINK = re.compile(r"(?<=:#/)(?:IB|RoCE)\b")
_VIA = re.compile(r"\bvia (\S+)$")
_REQ = re.compile(r"\((?:Send|Recv)\)$")
_LIST = re.compile(r"(\[#\]\S+)(?: \[#\]\S+)+")
_FMT = re.compile(r"%0?\d*(?:ll|l|z)?[dxispu]")


def shape(msg: str) -> str:
    """The message with values abstracted: numbers, hex, IPv4 and scoped IPv6 addresses and names with digits become ``#``,
    the collective name ``OP``, an HCA port's link type ``LINK``, a connection's transport ``T``, and a
    list of ``[n]item`` entries one entry."""
    s = _VALUE.sub("#", msg.strip())
    s = _OP.sub("OP: ", s)
    s = _LINK.sub("LINK", s)
    s = _VIA.sub("via T", s)
    s = _REQ.sub("(REQ)", s)
    return _LIST.sub(r"\1", s)


def transport(msg: str) -> str | None:
    m = _VIA.search(msg.strip())
    return _VALUE.sub("#", m.group(1)) if m else None


def _records(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        recs, _, _ = split_records(line)
        out += [(r.level, r.msg) for r in recs if r.level in ("INFO", "WARN")]
    return out


def _spec_formats(doc: str) -> list[re.Pattern[str]]:
    """The format strings the spec quotes, as patterns: ``%d``-style conversions and ``<msg>``
    placeholders match a value; a table cell that starts with ``…`` continues the cell above it from
    its first field on."""
    out, prev = [], ""
    for code in re.findall(r"`([^`\n]+)`", doc):
        if code.startswith("… ") and prev:
            first = code[2:].split(" ", 1)[0]
            cut = prev.find(" " + first + " ")
            if cut < 0:
                continue
            code = prev[: cut + 1] + code[2:]
        prev = code
        parts = re.split(r"(%0?\d*(?:ll|l|z)?[dxispu]|<[a-z]+>)", code)
        out.append(
            re.compile(
                "".join((r"\S+" if p.startswith("%") else ".+") if i % 2 else re.escape(p) for i, p in enumerate(parts))
            )
        )
    return out


@pytest.fixture(scope="module")
def reference(corpus: Path) -> tuple[set[tuple[str, str]], set[str], list[re.Pattern[str]]]:
    real, vias = set(), set()
    for f in sorted((corpus / "nccl").glob("*.log")):
        for level, msg in _records(f.read_text(errors="replace")):
            real.add((level, shape(msg)))
            if (t := transport(msg)) is not None:
                vias.add(t)
    spec = _spec_formats((corpus.parent / "docs" / "nccl-log-format.md").read_text())
    return real, vias, spec


SPECS = {f"wording-{w}": NcclLogSpec(hosts=2, gpus_per_host=2, wording=w, collectives=2) for w in WORDINGS}
SPECS |= {
    "socket-fallback": NcclLogSpec(hosts=2, gpus_per_host=2, network="Socket"),
    "ib-disabled": NcclLogSpec(hosts=2, gpus_per_host=2, network="Socket", ib_disable_env=True),
    "roce-mismatch-faults": NcclLogSpec(
        hosts=2, gpus_per_host=2, link="RoCE", gdr=False, mismatch_host=1, stuck_ranks=(3,), completion_error_rank=1
    ),
}
# Record kinds the corpus holds for no release the generator writes; the spec's format string is the reference.
SPEC_ONLY = {
    "comm # rank # nranks # cudaDev # busId # commId # - Init COMPLETE",  # 2.16 - 2.18.1
    "comm # rank # nranks # cudaDev # nvmlDev # busId # commId # - Init COMPLETE",  # 2.18.3 - 2.20
    (
        "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory "
        "No plugin found (libnccl-net.so), using internal implementation"
    ),  # 2.19 - 2.21
    "Bootstrap: Using #:#<#>",  # 2.24+ drops the space before the colon
    "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
}  # 2.26


@pytest.mark.parametrize("name", sorted(SPECS))
def test_generated_records_have_real_shape(tmp_path: Path, name: str, reference) -> None:
    real, vias, spec = reference
    path = write_nccl_log(tmp_path / "job.log", SPECS[name])[0]
    records = _records(path.read_text())
    assert records, "the generator wrote no NCCL record"
    for level, msg in records:
        s = shape(msg)
        if s in SPEC_ONLY:
            assert any(p.fullmatch(msg) for p in spec), f"{msg!r}: the spec quotes no such format"
        else:
            assert (level, s) in real, f"{level} {msg!r} -> {s!r} is in no corpus log"
        if (t := transport(msg)) is not None:
            assert t in vias, f"{msg!r}: transport {t!r} is in no corpus log"


def test_shape_tells_wordings_apart() -> None:
    """The abstraction keeps what differs between releases: keys, their order and separators."""
    assert shape("comm 0x55 rank 0 nranks 4 cudaDev 0 busId 1b000 - Init COMPLETE") != shape(
        "comm 0x55 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 - Init COMPLETE"
    )
    assert shape("Bootstrap : Using eth0:10.0.0.1<0>") != shape("Bootstrap: Using eth0:10.0.0.1<0>")
    assert shape("Ring 00 : 1 -> 2 [send] via NET/IB/0") != shape("Channel 00/0 : 1[0] -> 2[0] [send] via NET/IB/0")
    assert shape("NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>") == shape(
        "NET/IB : Using [0]mlx5_4:1/RoCE [RO]; OOB enp24s0np0:10.10.10.1<0>"
    )
