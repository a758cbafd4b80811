"""Per-process state of an NCCL log and the Arrow tables built from the parser's state."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from parsers.nccl.messages import (
    Bootstrap,
    Conn,
    Fact,
    Gdr,
    IbNone,
    IbUsing,
    Network,
    NoVerbs,
    Plugin,
    SocketUsing,
    VersionLine,
    classify,
)
from parsers.nccl.records import launcher_tag
from parsers.nccl.rows import BareVersion, VersionRow
from parsers.nccl.wording import Version

WORDING_RECORDS = 40  # records of a process whose wording is checked (and more until one matches)


def version_text(v: Version) -> str:
    return f"{v[0]}.{v[1]}.{v[2]}" if v[1] < 99 else f"{v[0]}.x"


@dataclass(slots=True)  # attributes read and set on every record: no instance dict
class ProcessState:
    """What one NCCL process (host, pid) said about itself."""

    host: str | None
    pid: int | None
    first_line: int
    prefix: str | None
    last_line: int = 0
    devs: set[int] = field(default_factory=set)
    version: str | None = None
    version_source: str | None = None
    cuda: str | None = None
    wording: tuple[Version, Version] | None = None
    wording_checked: int = 0
    # what check_wording was given, as far as a continuation could need it (ProcessState.absorb)
    wording_log: list[tuple[Version, Version] | None] = field(default_factory=list)
    network: str | None = None
    bootstrap: str | None = None
    socket_ifs: list[str] = field(default_factory=list)
    ib_hcas: list[str] = field(default_factory=list)
    ib_none: bool = False
    verbs_missing: bool = False
    plugin: str | None = None
    gdr_disabled: bool = False
    records: int = 0
    warns: int = 0
    progress_line: int = 0  # last line showing init progress (network chosen, connection, Init COMPLETE)
    teardown_line: int = 0  # first line tearing a communicator down (Abort, Destroy, Revoke)
    network_line: int = 0  # first line choosing a network or connecting: before it, NCCL probes its networks
    conns: dict[tuple[str, str, str | None, bool], list[int]] = field(default_factory=dict)

    def wording_open(self) -> bool:
        """Whether the next record's wording is still worth checking: the first
        :data:`WORDING_RECORDS` records, then until one narrows the release range."""
        return self.wording is None or self.wording_checked < WORDING_RECORDS

    def check_wording(self, rng: tuple[Version, Version] | None) -> None:
        self.wording_checked += 1
        if rng is not None:
            self.narrow(rng)
        if rng is not None or self.wording_checked <= WORDING_RECORDS:  # later Nones change nothing
            self.wording_log.append(rng)

    def narrow(self, rng: tuple[Version, Version]) -> None:
        """Intersect the release range allowed by this process's wording (kept when disjoint:
        that is a mixed log, reported by the version-mismatch detector across processes)."""
        if self.wording is None:
            self.wording = rng
            return
        lo, hi = max(self.wording[0], rng[0]), min(self.wording[1], rng[1])
        if lo <= hi:
            self.wording = (lo, hi)

    def absorb(self, later: ProcessState, base: int) -> None:
        """Continue this state with ``later``: the same process as read from a later chunk of the
        file alone, whose line numbers count from ``base`` (:mod:`parsers.nccl.chunks`). The
        result is what reading both chunks in one pass gives."""
        self.last_line = max(self.last_line, later.last_line + base)
        self.records += later.records
        self.warns += later.warns
        self.devs |= later.devs
        if self.version is None and later.version is not None:  # the first INFO version line wins
            self.version, self.cuda, self.version_source = later.version, later.cuda, later.version_source
        for rng in later.wording_log:  # what a single pass would have checked of these records
            if self.wording_open():
                self.check_wording(rng)
        for name in ("network", "bootstrap", "plugin"):  # the last one said wins
            if getattr(later, name) is not None:
                setattr(self, name, getattr(later, name))
        _add_new(self.socket_ifs, later.socket_ifs)
        _add_new(self.ib_hcas, later.ib_hcas)
        self.ib_none |= later.ib_none
        self.verbs_missing |= later.verbs_missing
        self.gdr_disabled |= later.gdr_disabled
        if later.progress_line:
            self.progress_line = later.progress_line + base
        if later.teardown_line and not self.teardown_line:
            self.teardown_line = later.teardown_line + base
        if later.network_line and not self.network_line:
            self.network_line = later.network_line + base
        for key, (n, first) in later.conns.items():
            c = self.conns.get(key)
            if c is None:
                self.conns[key] = [n, first + base]
            else:
                c[0] += n

    def shift(self, base: int) -> None:
        """Move the line numbers of a chunk's state to the lines of the whole file."""
        self.first_line += base
        self.last_line += base
        if self.progress_line:
            self.progress_line += base
        if self.teardown_line:
            self.teardown_line += base
        if self.network_line:
            self.network_line += base
        for c in self.conns.values():
            c[1] += base

    def add_conn(self, f: Conn, lineno: int) -> None:
        """A connection of ``f``'s kind, and the progress it shows (the process went on connecting)."""
        c = self.conns.get(f.key)
        if c is None:
            self.conns[f.key] = [1, lineno]
            if not self.network_line:  # the first connection: its network was chosen
                self.network_line = lineno
        else:
            c[0] += 1
        self.progress_line = lineno

    def apply(self, fact: Fact) -> None:
        """What a fact of this process's INFO records says of its setup (the facts other tables
        keep, such as connections and COLL lines, change nothing here)."""
        match fact:
            case VersionLine(version, cuda):
                if self.version is None or self.version_source != "info":
                    self.version, self.cuda, self.version_source = version, cuda, "info"
            case Bootstrap(interface, address):
                self.bootstrap = f"{interface}:{address}"
            case IbUsing(hcas, _):
                _add_new(self.ib_hcas, hcas)
            case IbNone():
                self.ib_none = True
            case SocketUsing(interfaces):
                _add_new(self.socket_ifs, interfaces)
            case NoVerbs():
                self.verbs_missing = True
            case Network(name):
                self.network = name
            case Plugin(text):
                self.plugin = text.split("Using ", 1)[-1] if "NET/OFI" in text else text.split()[-1]
            case Gdr(enabled=False):
                self.gdr_disabled = True


def version_owner(
    procs: dict[tuple[str | None, int | None], ProcessState], outer: str, by_tag: dict[str, list[ProcessState]]
) -> ProcessState | None:
    """The process that printed a bare version line: the one with the same launcher prefix (its
    timestamps aside: a collector's differ from line to line; ``by_tag``: the processes by that tag,
    :func:`tagged`), else the only process of the file."""
    tag = launcher_tag(outer)
    if tag:
        same = by_tag.get(tag, [])
        if len(same) == 1:
            return same[0]
    if len(procs) == 1:
        return next(iter(procs.values()))
    return None


def tagged(procs: dict[tuple[str | None, int | None], ProcessState]) -> dict[str, list[ProcessState]]:
    """The processes that have a prefix, by its :func:`launcher_tag`."""
    out: dict[str, list[ProcessState]] = {}
    for p in procs.values():
        if p.prefix is not None:
            out.setdefault(launcher_tag(p.prefix), []).append(p)
    return out


def bare_versions(
    procs: dict[tuple[str | None, int | None], ProcessState], bare: Iterable[BareVersion], info: Iterable[VersionRow]
) -> list[VersionRow]:
    """The rows of the bare version lines (``NCCL version X+cudaY``, printed by rank 0 only up to
    2.21), each attributed to the process that printed it when that is known. When the file
    shows one version only (one job), the processes that printed none get it too, with source
    ``job's version line``."""
    out = []
    by_tag = tagged(procs)  # once: a long log holds a bare line for each of its jobs' starts
    owners: dict[str, ProcessState | None] = {}  # by prefix: a job's lines repeat theirs (two regexes each)
    for lineno, outer, msg in bare:
        fact = classify(msg)
        if not isinstance(fact, VersionLine):
            continue
        if outer not in owners:
            owners[outer] = version_owner(procs, outer.strip(), by_tag)
        owner = owners[outer]
        if owner is not None and owner.version is None:
            owner.version, owner.cuda, owner.version_source = fact.version, fact.cuda, "bare line"
        host, pid = (owner.host, owner.pid) if owner else (None, None)
        out.append(VersionRow(host, pid, lineno, fact.version, fact.cuda, "bare line"))
    if len({r.version for r in (*out, *info)}) == 1 and out:
        for p in procs.values():
            if p.version is None:
                p.version, p.cuda, p.version_source = out[0].version, out[0].cuda, "job's version line"
    return out


def _add_new(items: list[str], new: Sequence[str]) -> None:
    """Append the entries of ``new`` not yet in ``items``, keeping NCCL's order."""
    items += [x for x in dict.fromkeys(new) if x not in items]
