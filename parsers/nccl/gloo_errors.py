"""Gloo's own reports of a failed collective: the CPU backend of PyTorch's ``gloo`` process groups, of Horovod's Gloo
controller (``horovodrun --gloo``) and of the CPU-side groups vLLM and others make beside NCCL's.

Gloo raises ``gloo::IoException`` or ``gloo::EnforceNotMet`` with its source location first
(``GLOO_ERROR_MSG``, ``GLOO_ENFORCE``): ``[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by
peer [10.0.0.2]:28048``, ``[enforce fail at …/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address
for: ib0``. PyTorch raises them as ``RuntimeError: …`` (behind a launcher's ``[rank3]:`` or ``[trainer0|3]:``), a C++
program ends with ``terminate called after throwing an instance of 'gloo::IoException'`` and ``what():  […]``. Read
from Gloo's transport (``pair.cc``, ``unbound_buffer.cc``, ``device.cc``) and PyTorch's ``ProcessGroupGloo``:

* the connection to a peer closed or reset while in use (``Connection closed by peer [A]:P`` — 2.x adds "This is
  typically caused by a remote worker crashing" —, ``Read error [A]:P: Connection reset by peer``, ``writev [A]:P:
  Broken pipe``, ``Socket closed [A]:P``): a consequence of the peer's end, :data:`PEER_LOST`;
* an operation that waited past its timeout (``Timed out waiting 1800000ms for recv operation to complete``, ``Read
  timeout [A]:P``, ``Write timeout [A]:P``): a peer that hung or never posted the same operation, :data:`TIMEOUT`;
* the full mesh never connected at the start (``Gloo connectFullMesh failed with […] timed out connecting: SO_ERROR:
  Connection refused, remote=[127.0.0.1]:14215``; ``… no error`` in 2.x's first wording), :data:`CONNECT`;
* no address for the interface it was told to use (``Unable to find address for: eth0``, also without Gloo's
  location in PyTorch 2.4+), :data:`INTERFACE`;
* more bytes received than the operation expected (``op.preamble.length <= op.nbytes. 8 vs 4``; ``Received data size
  doesn't match expected size. Is there a distributed collective mismatch in your code?``), :data:`MISMATCH`.

The first two are what a process saw of a peer: consequences (of a worker's end the launcher reports, when it
does). The other three are causes of their own.
"""

from __future__ import annotations

import re

from parsers.nccl.reports import FrameworkError, rank_said

PEER_LOST, TIMEOUT, CONNECT, INTERFACE, MISMATCH = (
    "gloo_peer_lost",
    "gloo_timeout",
    "gloo_connect",
    "gloo_interface",
    "gloo_mismatch",
)
#: the classes of Gloo's reports, in the order the report's schema lists them
CLASSES = (PEER_LOST, TIMEOUT, CONNECT, INTERFACE, MISMATCH)
#: what a process saw of a peer, not why the peer failed
CONSEQUENCES = frozenset({PEER_LOST, TIMEOUT})
#: a text one of which a line holds when it may be such a report
HINTS = ("gloo/", "Gloo connectFullMesh", "Unable to find address for:", "Unable to find interface for:")

#: Gloo's source location before its message (a build tree's path, PyTorch's ``third_party/gloo`` or the bare tree)
_AT = re.compile(
    r"\[(?:enforce fail at )?(?P<path>[^\s\[\]]{0,300}?\bgloo/(?:[\w-]+/){0,3}[\w-]+\.cc):(?P<line>\d+)\] "
)
_PEER = r"\[[^\]\s]{1,64}\]:\d+"
_FORMS = (
    (CONNECT, re.compile(r"\bGloo connectFullMesh failed with\b.*|\btimed out connecting: .*")),
    (
        PEER_LOST,
        re.compile(
            rf"\b(?:Connection closed by peer (?P<closed>{_PEER})|Read error (?P<read>{_PEER}): [^.\n]+|"
            rf"writev (?P<write>{_PEER}): [^.\n]+|Socket (?:unexpectedly )?closed (?P<socket>{_PEER}))"
        ),
    ),
    (
        TIMEOUT,
        re.compile(
            rf"\b(?:(?:Read|Write|Connect) timeout {_PEER}|Timed out waiting \d+ms for (?:recv|send) operation to "
            r"complete)"
        ),
    ),
    (
        MISMATCH,
        re.compile(
            r"\bop\.preamble\.length <= op\.nbytes\.?(?: \d+ vs \d+)?|\bReceived data size doesn't match expected "
            r"size\."
        ),
    ),
)
_INTERFACE = re.compile(r"(?:^|(?<=[\s:.\]]))Unable to find (?:address|interface) for: ?(?P<name>[^\s,;]+)")
_REMOTE_LOOPBACK = re.compile(r"remote=\[(?:127\.\d+\.\d+\.\d+|::1|localhost)\]")


def parse_gloo(line: str) -> FrameworkError | None:
    """Gloo's report on ``line`` of a failed operation, its class named, its rank when a launcher's tag says it."""
    if not any(map(line.__contains__, HINTS)):
        return None
    at = _AT.search(line)
    if (iface := _INTERFACE.search(line)) is not None:
        name = iface["name"]
        said = "NCCL's exclusion list (^…) or a list, which Gloo does not take: " if name[:1] == "^" else ""
        advice = f"GLOO_SOCKET_IFNAME (HOROVOD_GLOO_IFACE) is {said}{name}, an interface this host has no address for"
        return _error(INTERFACE, iface[0].rstrip("."), line, at, cause=True, advice=advice)
    for cls, form in _FORMS:
        if at is None and cls != CONNECT:  # the other forms are read behind Gloo's source location only
            continue
        m = form.search(line, 0 if at is None or cls == CONNECT else at.end())
        if m is None:
            continue
        text = m[0].strip().rstrip(".")
        if cls == CONNECT:
            loopback = _REMOTE_LOOPBACK.search(line) is not None
            why = (
                "the peer's address is a loopback one: its host name resolved to 127.0.0.1 (ProcessGroupGloo warns "
                "'Using the loopback address as fallback'), so processes on other hosts cannot reach it"
                if loopback
                else None
            )
            return _error(cls, _first_sentence(text), line, at, cause=True, advice=why)
        return _error(cls, text, line, at, cause=cls == MISMATCH)
    return None


def _first_sentence(text: str) -> str:
    """A connect failure's message up to Gloo's or PyTorch's repeated boilerplate."""
    return text.split(". This is typically caused", 1)[0]


def _error(
    cls: str, text: str, line: str, at: re.Match[str] | None, cause: bool, advice: str | None = None
) -> FrameworkError:
    src = None
    if at is not None:
        path = at["path"]
        src = f"{path[path.rfind('gloo/') :]}:{at['line']}"
    return FrameworkError(src, text + rank_said(line), None, cls=cls, cause=cause, advice=advice)


REMEDIATION = {
    PEER_LOST: "A process's Gloo connection to a peer closed or was reset while it was in use: the process at that "
    "address ended (it crashed, was killed by the out-of-memory killer or the scheduler, or left its training loop "
    "early), or the network between the two dropped. This is what the surviving process saw, not why the peer "
    "ended: read the log of the host at that address for the first process that stopped (its exception, a signal, "
    "the launcher's report of its exit) and fix that.",
    TIMEOUT: "A Gloo send or receive waited longer than the group's timeout for its peer: the peer hung (a deadlock, "
    "a stuck data loader, a process paused or swapping), is much slower than the others, or never posted the same "
    "operation (ranks that took different code paths). Find the rank the others wait for: its log stops earlier or "
    "shows it elsewhere. Raise the timeout (init_process_group(timeout=...), HOROVOD_GLOO_TIMEOUT_SECONDS) only "
    "when a step is known to be that slow.",
    CONNECT: "The processes' Gloo connections never formed at the start: a peer refused or did not answer at the "
    "address it announced. Most often that address is the wrong one: a host name that resolves to 127.0.0.1 (or "
    "to an interface other hosts cannot reach), a firewall between the hosts, or a peer that never started. Set "
    "GLOO_SOCKET_IFNAME (Horovod: HOROVOD_GLOO_IFACE or --network-interface) to the interface the hosts reach each "
    "other on, and check that every process started.",
    INTERFACE: "Gloo was told to use a network interface this host has no address for (GLOO_SOCKET_IFNAME, Horovod's "
    "HOROVOD_GLOO_IFACE or --network-interface), or the host name it resolved has none. Set it to one interface "
    "name every host has (ip -br addr lists them; Gloo takes a name, not an address nor NCCL's ^exclusion list), "
    "or leave it unset.",
    MISMATCH: "Gloo received more bytes than the operation it was running expected: the ranks ran different "
    "collectives, or the same one with tensors of different sizes, at the same point (a condition on the rank or on "
    "the data, an uneven last batch, a skipped step). Make every rank issue the same collectives in the same order "
    "with the same shapes (drop_last=True, the same number of steps); in PyTorch, TORCH_DISTRIBUTED_DEBUG=DETAIL "
    "names the call that differs.",
}
