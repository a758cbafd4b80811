"""Horovod's own reports of a failed job, from its coordinator (``horovod/common/controller.cc``,
``operations.cc`` before 0.19), whatever the framework raised them as (TensorFlow's ``AbortedError``,
``FailedPreconditionError``, ``UnknownError``; PyTorch's ``RuntimeError``, ``HorovodInternalError``):

* ``Horovod background loop uncaught exception: <what>``, the exception that stopped a rank's Horovod (with Gloo,
  ``Read error [10.0.0.2]:5000: Connection reset by peer`` when a peer died), then
  ``Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce,
  allgather or broadcast a tensor after one of the ranks finished execution. …`` (0.14+; ``This has been caused
  by an exception on one of the rank or …`` before): every collective after a rank failed or finished early
  raises it. A consequence: of an error before it in the log, else of a rank that stopped (its exception, or
  the end of its loop);
* the coordinator's check that every rank submitted the same thing under one tensor name: ``Mismatched data types:
  One rank had type float32, but another rank had type float16.``, ``Mismatched ALLREDUCE tensor shapes: One rank
  sent a tensor of shape [10], but another rank sent a tensor of shape [12].`` (``allreduce``, and ``Mismatched MPI
  operations``, before 0.19), ``Mismatched operations``, root ranks, CPU/GPU device selection, prescale and/or
  postscale factors. The cause of the job's end.
"""

from __future__ import annotations

import re

from parsers.nccl.reports import FrameworkError

SHUTDOWN, MISMATCH = "horovod_shutdown", "horovod_mismatch"
#: the classes of Horovod's own reports, in the order the report's schema lists them
CLASSES = (SHUTDOWN, MISMATCH)
#: a text one of which a line holds when it may be such a report
HOROVOD_HINTS = ("Horovod has been shut down", "Mismatched ", "Horovod background loop uncaught exception")

_SHUTDOWN = re.compile(r"Horovod has been shut down\b")
#: the exception that stopped Horovod's background loop on this rank (``operations.cc``), logged before its shutdown:
#: with Gloo, ``… pair.cc:589] Read error [10.0.0.2]:5000: Connection reset by peer`` when a peer died
_LOOP = re.compile(r"Horovod background loop uncaught exception: (?P<what>\S.*)")
_MISMATCH = re.compile(
    r"\bMismatched (?:MPI |[A-Za-z_]+ )?(?:operations|data types|tensor shapes|root ranks|CPU/GPU device selection"
    r"|prescale and/or postscale factors): One rank\b"
)
#: the sentence Horovod's shutdown message starts with: the rest repeats on every line that holds it
_FIRST_SENTENCE = re.compile(r"[^.]*\.(?: This (?:was|has been) caused by [^.]*\.)?")


def parse_horovod(line: str) -> FrameworkError | None:
    if not any(map(line.__contains__, HOROVOD_HINTS)):  # each pattern holds one: three searches a line saved
        return None
    """Horovod's report of a stopped job on ``line``: its shutdown (a consequence) or a mismatch (a cause)."""
    if (m := _MISMATCH.search(line)) is not None:
        return FrameworkError(None, line[m.start() :].strip().rstrip("."), None, cls=MISMATCH, cause=True)
    if (m := _LOOP.search(line)) is not None:  # what stopped this rank's Horovod: its shutdown's own cause
        return FrameworkError(None, m[0].strip().rstrip("."), None, cls=SHUTDOWN)
    if (m := _SHUTDOWN.search(line)) is not None:
        said = _FIRST_SENTENCE.match(line, m.start())
        message = said[0] if said is not None else m[0]
        return FrameworkError(None, message.strip().rstrip("."), None, cls=SHUTDOWN)
    return None


REMEDIATION = {
    SHUTDOWN: "Horovod shut itself down: a rank raised an exception, or a rank left its training loop while "
    "others still called collectives (unequal numbers of batches or steps per rank). The cause is the first "
    "exception before the first of these messages (mpirun --tag-output or horovodrun names the rank that printed "
    "it); when there is none, give every rank the same number of steps (shard the data evenly, drop_last=True), or "
    "call hvd.join() (0.20+) so that ranks that finish early wait for the others.",
    MISMATCH: "Horovod's coordinator found that the ranks submitted different things under one tensor name: a "
    "shape that depends on each rank's data (variable-length batches, a smaller last batch: drop_last=True or pad), "
    "a model built differently on some rank, parameters registered in another order or under other names, a dtype "
    "that differs (mixed precision on some ranks only), another root rank, or CPU on one rank and GPU on another. "
    "Every rank must build the same model and submit the same tensors in the same order.",
}
