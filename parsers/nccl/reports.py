"""A framework's report of a failed NCCL call, line by line: PyTorch's ``NCCL error in: …`` (with NCCL's
version, without it, or only its header when a hard wrap cut it) and ``NCCL error: …``, Horovod's and XLA's
``<call> failed: <text>``, ``torch.cuda.nccl``'s ``NCCL Error 2: <text>``, TensorFlow's ``NCCL: <text>``,
nccl-tests' ``Test NCCL failure …``, PyTorch's unique id never fetched from the c10d store, a result code's
name (``ncclSystemError: …``), ``Last error:`` and the NCCL version PyTorch prints.

:mod:`parsers.nccl.jobtexts` joins these lines into one report; this module reads each line alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: PyTorch's NCCL version texts: ``ProcessGroupNCCL environments: NCCL version: 2.21.5, …`` and the end
#: of ``NCCL error in: FILE:LINE, <text>, NCCL version 2.18.3`` (docs/formats/nccl-log.md §5).
TORCH_VERSION = re.compile(r"(?:ProcessGroupNCCL environments: NCCL version: |, NCCL version )(?P<ver>\d+\.\d+\.\d+)")
#: NCCL's RAS client (``ncclras``, 2.24+) opens its report with the version of the job's NCCL: ``NCCL version 2.26.2
#: compiled with CUDA 12.4`` (then ``CUDA runtime version 12040, driver version 12040``)
RAS_VERSION = re.compile(r"\bNCCL version (?P<ver>\d+\.\d+\.\d+)\S* compiled with CUDA (?P<cuda>\d+\.\d+)")
#: ``NCCL error in: FILE:LINE, <ncclGetErrorString text>, NCCL version X`` (PyTorch), or ``NCCL error: <text>, …``.
TORCH_ERROR = re.compile(r"NCCL error(?: in: (?P<src>\S+?:\d+),|:) (?P<text>.+?), NCCL version \S+")
#: The ncclGetErrorString texts of each result code (their 2.18.1+ suffixes follow them).
_RESULT_TEXTS = (
    ("unhandled cuda error", 1),
    ("unhandled system error", 2),
    ("internal error", 3),
    ("invalid argument", 4),
    ("invalid usage", 5),
    ("remote process exited or there was a network error", 6),
)
#: any of those texts, as a regex alternative (each form below anchors its report on one)
_TEXTS = "|".join(re.escape(t) for t, _ in _RESULT_TEXTS)
#: PyTorch's report without NCCL's version (releases before ≈1.6 printed ``NCCL error in: FILE:LINE, <text>``
#: only), or a report whose version a hard wrap cut off: the text must be a result code's
TORCH_ERROR_BARE = re.compile(r"NCCL error(?: in: (?P<src>\S+?:\d+),|:) (?P<text>(?:" + _TEXTS + r")\b.*)")
#: PyTorch's report of an error NCCL raised later (``ncclCommGetAsyncError``, read by the watchdog): ``NCCL error:
#: <text>[, NCCL version X]``
ASYNC_HINT = "NCCL error: "
#: Horovod's report of a failed NCCL call (``NCCLContext::ErrorCheck``: ``<call> failed: <ncclGetErrorString text>``,
#: raised as ``HorovodInternalError`` or TensorFlow's ``UnknownError``), and XLA's (JAX: ``NCCL operation
#: ncclCommInitRank(&comm, nranks, id, rank) failed: <text>``); the text must be a result code's
CALL_FAILED = re.compile(r"\b(?P<src>nccl[A-Z]\w*)(?:\([^()]*\))? failed: (?P<text>(?:" + _TEXTS + r")\b.*)")
#: ``torch.cuda.nccl``'s report (``nn.DataParallel``'s broadcast and reduce, ``torch/csrc/cuda/nccl.cpp``): the result
#: code's number and text, ``NCCL Error 2: unhandled system error``, no source location
NUMBERED = re.compile(r"\bNCCL Error (?P<code>[1-7]): (?P<text>(?:" + _TEXTS + r")\b.*)")
NUMBERED_HINT = "NCCL Error "
#: TensorFlow's report (``NcclManager``): ``NCCL: unhandled system error. Set NCCL_DEBUG=WARN for detail.``
TF_ERROR = re.compile(r"\bNCCL: (?P<text>(?:" + _TEXTS + r")\b.*)")
TF_HINT = "NCCL: "
#: the start of PyTorch's report: a line that holds it and does not read as a whole report may be hard-wrapped
TORCH_ERROR_HINT = "NCCL error in:"


#: ``ncclSystemError: System call …`` (PyTorch's and NCCL's result code names, before ``Last error:``)
#: with the start of NCCL's description of that code (ncclGetErrorString's long texts, 2.4-2.30), so that
#: prose naming a code ("a bare `ncclSystemError`") is no report
RESULT_NAME = re.compile(
    r"\bnccl(?P<name>UnhandledCuda|System|Internal|InvalidArgument|InvalidUsage|Remote)Error: (?:"
    r"System call|Internal check|Call to CUDA|This usually reflects|A call failed|Invalid value|unhandled|"
    r"internal error|invalid (?:argument|usage)|remote process)"
)
_RESULT_CODES = {"UnhandledCuda": 1, "System": 2, "Internal": 3, "InvalidArgument": 4, "InvalidUsage": 5, "Remote": 6}
#: ``Last error:`` and the text NCCL kept of the call that failed (ncclGetLastError), on the same line or the next
LAST_ERROR = re.compile(r"\bLast error:\s*(?P<text>.*)$")
#: XLA's words for the same text (2023-11+, openxla/xla#7201): ``Last NCCL warning(error) log entry (may be unrelated)
#: 'Cuda failure 2 'out of memory''.`` (the text quoted, quotes of its own kept: up to the last quote)
XLA_LAST_ERROR = re.compile(r"\bLast NCCL warning\(error\) log entry \(may be unrelated\) '(?P<text>.*)'")
#: XLA's report of a libnccl it could not load (its stub's text, JAX without NCCL for its CUDA)
XLA_NO_LIBRARY = re.compile(r"\b(?P<src>nccl[A-Z]\w*)(?:\([^()]*\))? failed: Unable to load NCCL library\b")
XLA_NO_LIBRARY_ADVICE = (
    "XLA could not load libnccl.so.2: install the NCCL of its CUDA (the nvidia-nccl-cu12 wheel that jax[cuda12] "
    "brings, or the system's libnccl2) where the process finds it (LD_LIBRARY_PATH)."
)


#: the launcher's tag that names a report's rank: torchrun's ``[rank2]:``, mpirun's ``[1,2]<stderr>:``
_RANK_TAG = re.compile(r"^\s*(?:\[rank(?P<torch>\d+)\]:|\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:)")


def rank_said(line: str) -> str:
    """`` (rank N)`` when a launcher's tag at ``line``'s start names its rank, else nothing: what a framework's report
    that names no process of its own adds to its message."""
    tag = _RANK_TAG.match(line)
    return "" if tag is None else f" (rank {tag['torch'] or tag['mpi']})"


@dataclass(frozen=True, slots=True)
class FrameworkError:
    """A framework's report of a failed NCCL call: where it was raised, its text, the result code, and
    the text NCCL kept of the call that failed (``Last error: …``) when the report carries it."""

    src: str | None
    message: str
    result_code: int | None
    last_error: str | None = None
    cls: str | None = None  # the class its text names where no result code does (a unique id never fetched)
    host: str | None = None  # the host the report names (nccl-tests prints it)
    cause: bool = False  # a failure of its own (nccl-tests' wrong results), not the report of a failed call
    advice: str | None = None  # what its own words say to change, beside its class's remediation


def parse_result_name(line: str) -> FrameworkError | None:
    """A result code named without PyTorch's ``NCCL error in:`` header (``ncclSystemError: …``, a
    traceback's last line or a launcher-prefixed block), with a ``Last error:`` on the same line."""
    m = RESULT_NAME.search(line)
    if m is None:
        return None
    last = LAST_ERROR.search(line, m.end())
    return FrameworkError(None, line[m.start() :].strip(), _RESULT_CODES[m["name"]], _last_text(last))


def _last_text(m: re.Match[str] | None) -> str | None:
    text = m["text"].strip() if m is not None else ""
    return text or None


def parse_torch_version(line: str) -> str | None:
    """The NCCL version PyTorch printed on ``line``, if it did. Older PyTorch decoded the version
    code of NCCL 2.9 - 2.11 wrongly (``21.1.4`` for 2.11.4): such a version is not reported."""
    m = TORCH_VERSION.search(line)
    if m is None or int(m["ver"].split(".")[0]) >= 10:
        return None
    return m["ver"]


def parse_call_failed(line: str) -> FrameworkError | None:
    """Horovod's and XLA's ``<nccl call> failed: <text>``: the call's text and its result code (no source location:
    the call's name stays in the message); or XLA's report of a libnccl it could not load."""
    m = CALL_FAILED.search(line)
    if m is not None:
        return _report(m, line, None, _code(m["text"]))
    if (missing := XLA_NO_LIBRARY.search(line)) is None:
        return None
    message = line[missing.start() :].strip()
    return FrameworkError(None, message, None, cls="config_error", cause=True, advice=XLA_NO_LIBRARY_ADVICE)


def parse_numbered(line: str) -> FrameworkError | None:
    """``torch.cuda.nccl``'s ``NCCL Error <code>: <text>``, or TensorFlow's ``NCCL: <text>``."""
    if (m := NUMBERED.search(line)) is not None:
        return _report(m, line, None, int(m["code"]))
    m = TF_ERROR.search(line)
    return None if m is None else _report(m, line, None, _code(m["text"]))


def _report(m: re.Match[str], line: str, src: str | None, code: int | None) -> FrameworkError:
    """The report match ``m`` found in ``line``: its message from where the match starts, and the text after
    a ``Last error:`` that follows its result text."""
    after = m.start("text")
    last = LAST_ERROR.search(line, after) or XLA_LAST_ERROR.search(line, after)
    return FrameworkError(src, line[m.start() :].strip(), code, _last_text(last))


def _code(text: str) -> int | None:
    """The result code whose ncclGetErrorString text ``text`` starts with."""
    low = text.lower()
    return next((c for t, c in _RESULT_TEXTS if low.startswith(t)), None)


def parse_torch_error(line: str, bare: bool = True) -> FrameworkError | None:
    """PyTorch's ``NCCL error in: …`` line: the failed call's text and its result code; ``bare``: also a
    report without NCCL's version (:data:`TORCH_ERROR_BARE`)."""
    m = TORCH_ERROR.search(line)
    if m is None and bare:
        m = TORCH_ERROR_BARE.search(line)
    return None if m is None else _report(m, line, m["src"], _code(m["text"]))


#: the header of PyTorch's report, whatever follows it (a report hard-wrapped after its source location)
TORCH_ERROR_HEAD = re.compile(r"NCCL error in: (?P<src>\S+?:\d+)")


def torch_error_head(line: str) -> FrameworkError | None:
    """PyTorch's report as far as ``line`` holds it: whole, without NCCL's version, or only its header
    (``NCCL error in: FILE:LINE,`` and the rest hard-wrapped onto the next line: no result code yet)."""
    whole = parse_torch_error(line)
    if whole is not None:
        return whole
    m = TORCH_ERROR_HEAD.search(line)
    return None if m is None else FrameworkError(m["src"], line[m.start() :].strip(), None)


#: PyTorch could not fetch a communicator's unique id from the c10d store (``broadcastUniqueNCCLID``; ``retreiving``
#: in older releases): ``[N] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value
#: store by key 'K', but store->get('K') got error: <why>`` (Socket Timeout, wait timeout after T ms, Connection
#: reset by peer, Failed to recv …). NCCL was not initialised yet: the root of the group never published the id
UNIQUE_ID = re.compile(
    r"\[(?P<rank>\d+)\] is setting up NCCL communicator and retr(?:ie|ei)ving [Nn]cclUniqueId from \[(?P<root>\d+)\] "
    r"via c10d key-value store(?: by key '[^']*', but store->get\('[^']*'\) got error\b| failed)"
)
UNIQUE_ID_HINT = "UniqueId from ["


def parse_unique_id(line: str) -> FrameworkError | None:
    """PyTorch's failure to fetch a communicator's unique id from the c10d store, class ``unique_id_exchange``."""
    m = UNIQUE_ID.search(line)
    return None if m is None else FrameworkError(None, line[m.start() :].strip(), None, cls="unique_id_exchange")


#: nccl-tests' report (``NCCLCHECK``): ``HOST: Test NCCL failure common.cu:891 '<text> / <ncclGetLastError>'`` (the
#: host and the last error since its NCCL 2.13 builds; ``Test NCCL failure FILE:LINE '<text>'`` alone before)
NCCL_TESTS = re.compile(r"(?:(?P<host>[\w.-]+): )?(?P<report>Test NCCL failure (?P<src>\S+:\d+) '(?P<body>.*)')")
NCCL_TESTS_HINT = "Test NCCL failure "


def parse_nccl_tests(line: str) -> FrameworkError | None:
    """nccl-tests' report of a failed NCCL call: its result code by the text, NCCL's last error after `` / ``."""
    m = NCCL_TESTS.search(line)
    if m is None:
        return None
    text, _, last = m["body"].partition(" / ")
    code = _code(text)
    if code is None:
        return None
    message = line[m.start("report") :].strip()
    return FrameworkError(m["src"], message, code, last.strip() or None, host=m["host"])


#: PyTorch's heartbeat monitor (2.2+): its watchdog thread made no progress for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, so
#: the process is ended: ``[PG 0 Rank 25] Heartbeat monitor timed out! Process will be terminated after dumping debug
#: info. workMetaList_.size()=2``, then (a FATAL line) ``ProcessGroupNCCL's watchdog got stuck for 600 seconds without
#: making progress in monitoring enqueued collectives. …``; either may be pasted alone
HEARTBEAT = re.compile(
    r"Heartbeat monitor timed out!|ProcessGroupNCCL's watchdog got stuck for (?P<seconds>\d+) seconds without making "
    r"progress"
)
#: the group and the rank in it before the text (``[PG 0 Rank 25] ``, ``[PG ID 0 PG GUID 0(default_pg) Rank 3] ``), kept
_PG_RANK = re.compile(r"\[(?:PG [^\]]*)?Rank \d+\] ")
PG_TAGS = 4  # tags looked for before the text (PyTorch prints one, or the same twice)


def parse_heartbeat(line: str) -> tuple[FrameworkError, bool] | None:
    """PyTorch's heartbeat monitor ending a process whose watchdog was stuck (class ``watchdog_stuck``), and whether
    ``line`` is the FATAL line that states how long (the second line of the same report, when the first came)."""
    m = HEARTBEAT.search(line)
    if m is None:
        return None
    report = FrameworkError(None, line[_tagged(line, m.start()) :].strip(), None, cls="watchdog_stuck")
    return report, m["seconds"] is not None


def _tagged(line: str, start: int) -> int:
    """Where the group and rank tags just before ``line[start:]`` begin (``start`` without them)."""
    for _ in range(PG_TAGS):  # back over the tags just before it, one at a time: linear in the line
        at = line.rfind("[", 0, start)
        if at < 0 or _PG_RANK.fullmatch(line, at, start) is None:
            break
        start = at
    return start


#: PyTorch's watchdog thread ended by an error it met while polling its collectives' work: ``[PG ID 0 PG GUID
#: 0(default_pg) Rank 2] Process group watchdog thread terminated with exception: <what>`` (2.3+), ``[Rank 0] NCCL
#: watchdog thread terminated with exception: <what>`` (1.13-2.2). A CUDA error there was raised by whatever ran on
#: the GPU (the job's kernels as much as NCCL's); a timeout or an NCCL error there is read as such by their own forms
WATCHDOG_EXCEPTION = re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception: (?P<what>.*)")
_GPU_ERROR = re.compile(r"(?:CUDA|HIP) error: (?P<text>.+)")


def parse_watchdog_exception(line: str) -> FrameworkError | None:
    """PyTorch's watchdog ended by a CUDA error on its GPU (class ``gpu_fault``; ``cuda_oom`` when out of memory)."""
    m = WATCHDOG_EXCEPTION.search(line)
    gpu = _GPU_ERROR.match(m["what"].strip()) if m is not None else None
    if m is None or gpu is None:
        return None
    cls = "cuda_oom" if "out of memory" in gpu["text"] else "gpu_fault"
    tags = line[_tagged(line, m.start()) : m.start()].strip()
    message = f"{gpu[0].strip()} (met by PyTorch's NCCL watchdog{', ' + tags if tags else ''})"  # the cause first
    return FrameworkError(None, message, None, cls=cls)


#: nccl-tests' check of the results (``-c 1``, the default): ``# Out of bounds values : 3 FAILED`` when any value was
#: wrong (``0 OK`` otherwise); each row's ``#wrong`` column counts them per size and placement
OUT_OF_BOUNDS = re.compile(r"# Out of bounds values : (?P<n>\d+) FAILED")
#: nccl-tests found every value right at the end of its run: its collectives completed on every rank
NCCL_TESTS_OK = re.compile(r"# Out of bounds values : 0 OK")


def parse_out_of_bounds(line: str) -> FrameworkError | None:
    """nccl-tests' report that a collective returned wrong values (class ``wrong_results``)."""
    m = OUT_OF_BOUNDS.search(line)
    if m is None or int(m["n"]) == 0:
        return None
    text = f"nccl-tests: {m['n']} wrong value(s) in the collectives' results ({m[0][2:]})"
    return FrameworkError(None, text, None, cls="wrong_results", cause=True)
