"""A process's own report of the signal that killed it, and whether NCCL's code was where it died.

When native code crashes, a signal handler the process loaded prints the signal and a backtrace before the
process dies; which handler depends on what the job linked, not on NCCL:

- UCX's (loaded with Open MPI or HPC-X): ``[HOST:PID:THREAD:TID] Caught signal 11 (Segmentation fault: address not
  mapped to object at address 0x48)``, then ``==== backtrace (tid: TID) ====``, frames ``N  /lib/libx.so(fn+0x2d)
  [0x7f…]`` or ``N 0x… fn()  file:line``, and a closing line of ``=``;
- Open MPI's: ``[HOST:PID] *** Process received signal ***``, ``[HOST:PID] Signal: Segmentation fault (11)``, frames
  ``[HOST:PID] [ N] /lib/libx.so(+0x3533c)[0x7f…]`` and ``[HOST:PID] *** End of error message ***``;
- Python's faulthandler: ``Fatal Python error: Segmentation fault`` (``Aborted``, ``Bus error``), then the Python
  frames of each thread; printed after UCX's report of the same crash when both handlers are loaded, and read
  as that report's then (one end, not two).

The process died on that signal: a worker's end (``worker_exits``). When frames of the backtrace are NCCL's
(``libnccl.so``, a plugin's ``libnccl-net.so``, or a symbol ``ncclX``), NCCL's code is where it crashed: a failure
of NCCL's own (class ``nccl_crash``). :mod:`parsers.nccl.jobtexts` reads the report line by line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: UCX's first line (its ``[HOST:PID:THREAD:TID]`` tag is sometimes left out of a paste)
UCX_HEADER = re.compile(
    r"(?:\[(?P<host>[^\s:\[\]]+):(?P<pid>\d+)(?::\d+){1,2}\] )?Caught signal (?P<sig>\d+) \((?P<name>[A-Z][\w ]*)[:)]"
)
OMPI_HEADER = re.compile(r"\[(?P<host>[^\s:\[\]]+):(?P<pid>\d+)\] \*\*\* Process received signal \*\*\*")
#: Python's faulthandler (PyTorch enables it, vLLM and Ray too): the signal by name, then the Python frames
PY_HEADER = re.compile(r"Fatal Python error: (?P<name>Segmentation fault|Aborted|Bus error|Floating point exception)")
PY_SIGNALS = {"Segmentation fault": 11, "Aborted": 6, "Bus error": 7, "Floating point exception": 8}
OMPI_SIGNAL = re.compile(r"\] Signal: (?P<name>[^()\]]{1,64}?) \((?P<sig>\d+)\)")  # bounded: linear in the line
#: a line of a backtrace: its frame's number first (behind Open MPI's ``[HOST:PID]``), then the frame
FRAME = re.compile(r"^(?:.*?\] )?\s*\[?\s*\d{1,3}\]?\s+\S")
#: a frame in NCCL's code: its library (NCCL's, a plugin's) or one of its functions
NCCL_FRAME = re.compile(r"(?P<lib>libnccl[\w.-]{0,64}?\.so)|\b(?P<fn>nccl[A-Z]\w*)")
#: the line that closes a report (UCX's rule of ``=``, Open MPI's last line)
END = re.compile(r"^\s*={10,}\s*$|\*\*\* End of error message \*\*\*")
#: lines a report's backtrace may take: past them it was cut
CRASH_LINES = 120
#: who printed a report (``worker_exits.launcher``): the process's own signal handler, not a launcher
REPORTERS = ("ucx", "open-mpi", "python")
#: what a line must hold to open a report (the compiled reader hands such lines over)
CRASH_HINTS = ("Caught signal ", "*** Process received signal ***", "Fatal Python error: ")


@dataclass(slots=True)
class Crash:
    """A process's report of the signal that killed it, as far as it was read."""

    since: int  # its first line
    reporter: str  # ucx | open-mpi | python: the signal handler that printed it
    host: str | None
    pid: int | None
    signal: int | None
    name: str
    frames: int = 0
    nccl_frames: int = 0
    where: str | None = None  # NCCL's first frame: its function, else its library

    def read(self, line: str) -> None:
        """One more line of the report: its signal (Open MPI names it on its second line), or a frame."""
        if self.signal is None and (m := OMPI_SIGNAL.search(line)) is not None:
            self.signal, self.name = int(m["sig"]), m["name"].strip()
            return
        if FRAME.match(line) is None:
            return
        self.frames += 1
        if (m := NCCL_FRAME.search(line)) is not None:
            self.nccl_frames += 1
            self.where = self.where or m["fn"] or m["lib"]

    @property
    def in_nccl(self) -> bool:
        return self.nccl_frames > 0

    def describe(self) -> str:
        """The report in one sentence."""
        sig = f"{self.name or 'signal'} (signal {self.signal})" if self.signal is not None else "a fatal signal"
        if not self.in_nccl:
            return f"{sig}, reported by the process's own signal handler ({self.reporter})"
        return f"{sig} in {self.where}: {self.nccl_frames} of the {self.frames} frames of its backtrace are NCCL's"


def open_crash(line: str, lineno: int) -> Crash | None:
    """The report ``line`` opens, if it opens one."""
    if (m := UCX_HEADER.search(line)) is not None:
        pid = int(m["pid"]) if m["pid"] else None
        return Crash(lineno, "ucx", m["host"], pid, int(m["sig"]), m["name"].strip())
    if (m := OMPI_HEADER.search(line)) is not None:
        return Crash(lineno, "open-mpi", m["host"], int(m["pid"]), None, "")
    if (m := PY_HEADER.search(line)) is not None:
        return Crash(lineno, "python", None, None, PY_SIGNALS[m["name"]], m["name"])
    return None
