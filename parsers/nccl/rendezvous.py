"""PyTorch's reports of a job that never formed: its processes did not meet at the rendezvous, so NCCL never
started (``docs/formats/nccl-log.md`` §5).

Every process of a PyTorch job first meets the others through a key-value store (``TCPStore``) that one of them
hosts at MASTER_ADDR:MASTER_PORT (torchrun's ``--rdzv_endpoint``); NCCL's unique id travels through it too. Three
ways that fails, each in the words of the releases that print it:

* the store cannot be reached: the client's ``The client socket has timed out after 60s while trying to connect to
  (10.0.3.17, 29400).`` (1.13+; ``to 10.0.3.17:29400`` in 1.12), ``… has failed to connect to any network address of
  (H, P).``, 1.8-1.12's ``connect() timed out. Original timeout was 1800000 ms.``, torchelastic's
  ``RendezvousConnectionError: The connection to the C10d store has failed.`` (or ``to etcd``);
* the store's port is taken: ``The server socket has failed to listen on any local network address. The server
  socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). …`` (2.0+; libuv's store, 2.4+:
  ``… name: EADDRINUSE …``), a bind's own warning with that errno, 1.x's ``RuntimeError: Address already in use``;
* not every process joined in time: ``Timed out after 601 seconds waiting for clients. 3/4 clients joined.``
  (2.2+), ``Timed out initializing process group in store based barrier on rank: 0, for key:
  store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)`` (``num_workers_joined=`` in 2.0+),
  torchelastic's ``torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError``.

A process states one failure several times (its log line, the exception, torchelastic's summary): each is a report,
and the first of them is the cause the others follow (:mod:`analyzer.nccl.incidents`).
"""

from __future__ import annotations

import re

from parsers.nccl.reports import FrameworkError

UNREACHABLE, PORT_IN_USE, INCOMPLETE = "rendezvous_unreachable", "rendezvous_port_in_use", "rendezvous_incomplete"
#: the classes of a rendezvous that failed, in the order the report's schema lists them
CLASSES = (UNREACHABLE, PORT_IN_USE, INCOMPLETE)

#: a text one of which a line holds when it may be such a report, besides ``Error`` (an exception's name: every
#: job-log signal's line holds one of :data:`parsers.nccl.joblog.SIGNAL_HINTS`)
RENDEZVOUS_HINTS = (" socket has ", "connect() timed out", "waiting for clients.", "store based barrier")

#: the store's address as the client names it: ``(HOST, PORT)`` (1.13+), ``HOST:PORT`` (1.12)
_HOST = r"(?:\((?P<host>[^\s,()]+), \d+\)|(?P<bare>\[[^\]\s]*\]|[^\s,()\[\]]+):\d+)"
_FORMS = (
    (
        UNREACHABLE,
        re.compile(
            r"The client socket has (?:timed out after \S+ while trying to connect to"
            r"|failed to connect to any network address of) " + _HOST
        ),
    ),
    (UNREACHABLE, re.compile(r"\bconnect\(\) timed out\. Original timeout was \d+ ms")),
    (UNREACHABLE, re.compile(r"The connection to (?:the C10d store|etcd) has failed")),
    (
        PORT_IN_USE,
        re.compile(
            r"The server socket has failed to (?:listen on any local network address|(?:bind to|listen on) \S+ \(errno: 98\b)"
        ),
    ),
    (PORT_IN_USE, re.compile(r"\b(?:RuntimeError|DistNetworkError): Address already in use\s*$")),
    (
        INCOMPLETE,
        re.compile(r"Timed out after \d+ seconds waiting for (?:clients|workers)\. \d+/\d+ (?:clients|workers) joined"),
    ),
    (INCOMPLETE, re.compile(r"Timed out initializing process group in store based barrier on rank:? \d+")),
    (
        INCOMPLETE,
        re.compile(r"(?:torch\.distributed\.elastic\.rendezvous\.api\.|\"message\": \")RendezvousTimeoutError\b"),
    ),
)
#: a text each form holds, tested first: most lines that reach this test are none of them
ANCHORS = (
    "The client socket has",
    "connect() timed out",
    "The connection to ",
    "The server socket has failed",
    "Address already in use",
    "seconds waiting for ",
    "store based barrier",
    "RendezvousTimeoutError",
)
#: how many processes joined, and of how many: ``3/4 clients joined``, ``(world_size=4, worker_count=3``
_JOINED = re.compile(
    r"(?<!\d)(?P<k>\d{1,9})/(?P<n>\d{1,9}) (?:clients|workers) joined"
    r"|world_size=(?P<world>\d{1,9}), (?:worker_count|num_workers_joined)=(?P<count>\d{1,9})"
)
#: a store on the same host only: on a job of more than one node the others cannot reach it
_LOOPBACK = re.compile(r"localhost|127\.\d+\.\d+\.\d+|\[?::1\]?")


def _in_use(line: str) -> bool:
    """Whether the listen's failure says why: its port was taken (errno 98, libuv's ``EADDRINUSE``)."""
    return "EADDRINUSE" in line or "ddress already in use" in line


def parse_rendezvous(line: str) -> FrameworkError | None:
    """The rendezvous failure ``line`` reports, its class named (a failure of its own, not an NCCL call's)."""
    if not any(map(line.__contains__, ANCHORS)):  # map: no generator frame a line
        return None
    for cls, form in _FORMS:
        m = form.search(line)
        if m is None or cls == PORT_IN_USE and not _in_use(line):
            continue
        start = -1
        if cls == INCOMPLETE:  # torchelastic's exception: its name, without its module
            start = line.find("Rendezvous", m.start(), m.end())
        elif cls == PORT_IN_USE:  # the listen's failure lists each bind's, the first with the port and the errno;
            # libuv's store (2.4+) says ``port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE``
            start = line.find("The server socket has failed to bind to ", m.start())
            start = line.find("port: ", m.start()) if start < 0 else start
        message = line[start if start >= 0 else m.start() :].strip().rstrip('.",: ') or m[0]
        host = m.groupdict().get("host") or m.groupdict().get("bare")
        if host is not None and _LOOPBACK.fullmatch(host):
            message += " (a loopback address: only processes on that host reach it)"
        joined = _JOINED.search(line, m.start()) if cls == INCOMPLETE else None
        if joined is not None and int(joined["k"] or joined["count"]) > int(joined["n"] or joined["world"]):
            message += " (more than the world size: another job, or a second launch of this one, uses the same store)"
        return FrameworkError(None, message, None, cls=cls, cause=True)
    return None


REMEDIATION = {
    UNREACHABLE: "The processes could not reach the rendezvous store, the key-value store one of them hosts at "
    "MASTER_ADDR:MASTER_PORT (torchrun's --rdzv_endpoint or --master_addr): the job never formed and NCCL never "
    "started. From a node that failed, check that the address resolves and the port answers (nc -zv HOST PORT): a "
    "name only some nodes know, localhost or 127.0.0.1 on a job of several nodes, a firewall or security group that "
    "closes the port, an address of the host's other network, or the node that hosts the store not started yet or "
    "already gone (its own log then says why).",
    PORT_IN_USE: "The process that hosts the rendezvous store (rank 0, or torchrun's agent on the first node) could "
    "not listen on its port: another process holds it, usually a job still running on that node or a process left "
    "over from an earlier run (ss -ltnp | grep PORT). Stop it, or give the job a port of its own (MASTER_PORT, "
    "torchrun's --master_port or --rdzv_endpoint HOST:PORT): two jobs on one node each need one.",
    INCOMPLETE: "The rendezvous store was reached, but not every process joined before its timeout: some never "
    "started (a node that did not launch, a scheduler that started fewer tasks than the world size), started with "
    "other settings (another --nnodes, WORLD_SIZE or --rdzv_id), or could not reach the store. Compare how many "
    "joined with the world size, and read the logs of the nodes that are missing: the first to fail often hides "
    "behind this timeout.",
}
