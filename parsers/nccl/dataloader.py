"""PyTorch's report that a DataLoader worker process died: a rank's training loop raises, the rank stops, and the
other ranks wait in their next collective until their watchdog times them out.

* ``RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.`` (``Killed.``, ``Segmentation
  fault.``, ``Aborted.``), ``DataLoader worker (pid(s) 1234, 1235) exited unexpectedly``;
* the worker's own last words before it: ``ERROR: Unexpected bus error encountered in worker. This might be caused
  by insufficient shared memory (shm).`` (``Unexpected segmentation fault encountered in worker.``).

A bus error there is /dev/shm too small for the batches the workers hand over; SIGKILL is the kernel's
out-of-memory killer (host memory).
"""

from __future__ import annotations

import re

from parsers.nccl.reports import FrameworkError, rank_said

DATALOADER = "dataloader_died"
CLASSES = (DATALOADER,)
HINTS = ("DataLoader worker (pid", "encountered in worker")

_DIED = re.compile(
    r"\bDataLoader worker \(pid(?:\(s\))? [\d, ]+\) (?:is killed by signal: (?P<sig>[A-Z][a-z]+(?: [a-z]+)*)|exited "
    r"unexpectedly)"
    r"|\bUnexpected (?P<own>bus error|segmentation fault|floating-point exception) encountered in worker"
)
_ADVICE = {
    "bus": "a bus error in a DataLoader worker is /dev/shm too small for the batches the workers hand over: give "
    "the container more (docker --shm-size=16g, or --ipc=host; Kubernetes: an emptyDir of medium Memory on "
    "/dev/shm), or use fewer workers",
    "killed": "SIGKILL of a DataLoader worker is most often the kernel's out-of-memory killer (host memory): fewer "
    "workers or a smaller prefetch_factor, datasets read lazily, or more memory for the job",
    "segmentation": "a segmentation fault in a DataLoader worker is a crash in native code the dataset calls (an "
    "image or audio decoder, a library not safe after fork): rerun with num_workers=0 to see its traceback",
}


def parse_dataloader(line: str) -> FrameworkError | None:
    """PyTorch's report on ``line`` that a DataLoader worker died, with what its signal says to change."""
    m = _DIED.search(line) if any(map(line.__contains__, HINTS)) else None  # each form holds a hint
    if m is None:
        return None
    how = (m["sig"] or m["own"] or "").lower()
    advice = next((text for key, text in _ADVICE.items() if how.startswith(key)), None)
    return FrameworkError(None, m[0] + rank_said(line), None, cls=DATALOADER, cause=True, advice=advice)


REMEDIATION = {
    DATALOADER: "A DataLoader worker process of this rank died, so its training loop raised and the rank stopped; "
    "the other ranks then waited in their next collective until the watchdog timed them out. Read the worker's "
    "signal: a bus error is /dev/shm, SIGKILL host memory, a segmentation fault native code in the dataset's path; "
    "num_workers=0 runs the loading in the main process, where its traceback shows.",
}
