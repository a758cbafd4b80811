"""Which of the job-log readers a line can concern, from the texts it holds: a bit per reader.

:meth:`~parsers.nccl.parser.JobLogParser._job_signal` tries its readers on a line in turn (NCCL's RAS report, a
framework's report, torchelastic's summary, a process's end, a launcher's report of a worker's exit, a watchdog
timeout, a process group's members, the work a timeout was, Horovod's stall warning); each reads a line only when it
holds one of the texts the reader tests first (its gate), unless a signal that spans lines is being read. The
compiled reader's first pass (:func:`parsers.nccl._lines.scan_lines`) finds every text of :data:`TEXTS` in a line at
once and hands the parser the bits of the readers they gate (:data:`RAS` … :data:`STALL`), so a line is given only
to the readers that may read it: a watchdog's line no longer waits for every framework form to be tried on it.

:data:`SIGNAL`: one of :data:`~parsers.nccl.joblog.SIGNAL_HINTS` (or an autotune line's separators): a line with none
of those and no ``NCCL`` is no job-log signal at all. A gate here is the reader's own first test, word for word (a
reader that tests nothing first, or a text not listed here, would lose lines): the tests read every log of the corpus
and the job-log signals of every kind both ways, the compiled reader with the bits and the Python path without.
"""

from __future__ import annotations

from parsers.nccl import crashes, dataloader, exits, gloo_errors, gpu_errors, horovod_errors, joblog, ras, rendezvous
from parsers.nccl import reports as R

SIGNAL, RAS, FRAMEWORK, JOB_FAILURE, ELASTIC, END, EXIT, WATCHDOG, PG_MEMBERS, WORK, STALL = (1 << i for i in range(11))
#: a line whose texts are not known (the Python path, a line read again): every reader tries it
ALL = (1 << 11) - 1

#: the texts each :meth:`~parsers.nccl.parser.JobLogParser._job_signal` step tests first
JOB_FAILURE_GATES = (
    *rendezvous.ANCHORS,
    *horovod_errors.HOROVOD_HINTS,
    *gpu_errors.HINTS,
    *dataloader.HINTS,
    *gloo_errors.HINTS,
)
GATES: tuple[tuple[int, tuple[str, ...]], ...] = (
    (SIGNAL, joblog.SIGNAL_HINTS),
    (RAS, ras.RAS_HINTS),
    (
        FRAMEWORK,
        (
            R.TORCH_ERROR_HINT,
            R.ASYNC_HINT,
            joblog.VLLM_VERSION_HINT,
            joblog.VERSION_HINT,
            joblog.RESULT_HINT,
            joblog.CALL_FAILED_HINT,
            R.NUMBERED_HINT,
            R.TF_HINT,
            R.NCCL_TESTS_HINT,
            *joblog.HEARTBEAT_HINTS,
            joblog.WATCHDOG_EXCEPTION_HINT,
            *JOB_FAILURE_GATES,
            joblog.OUT_OF_BOUNDS_HINT,
            R.UNIQUE_ID_HINT,
            joblog.LAST_ERROR_HINT,
        ),
    ),
    (JOB_FAILURE, JOB_FAILURE_GATES),
    (ELASTIC, (exits.ELASTIC_ROOT, exits.ELASTIC_OTHERS)),
    (END, (exits.MPI_FIRST_EXIT, *crashes.CRASH_HINTS)),
    (EXIT, exits.EXIT_HINTS),
    (WATCHDOG, (joblog.WATCHDOG_HINT,)),
    (PG_MEMBERS, (joblog.PG_OPTIONS_HINT,)),
    (WORK, joblog.WORK_HINTS),
    (STALL, (*joblog.STALL_HEADS, joblog.STALL_WARNING)),
)


def _table() -> tuple[tuple[str, ...], tuple[int, ...]]:
    bits: dict[str, int] = {}
    for bit, texts in GATES:
        for text in texts:
            bits[text] = bits.get(text, 0) | bit
    ordered = sorted(bits, key=lambda t: t[0])  # the order of parsers.nccl._foreign.text_table: by first byte
    return tuple(ordered), tuple(bits[t] for t in ordered)


#: every gate's text once, ordered by first byte, and the bits of the readers each one gates
TEXTS, BITS = _table()
