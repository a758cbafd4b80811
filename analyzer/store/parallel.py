"""Where work runs: here, on a local process pool, or on a Dask cluster (``dask.distributed``).

Two kinds of work are distributed, never as a shared in-memory state: ingest
(:mod:`analyzer.store.ingest`) and batch, one task per run (:mod:`analyzer.fleet`).

:meth:`Executor.map` hands work out largest first, a few items to a task (up to a size) while
much is left and one to a task at the end (:func:`_tapering`); either way the per-task
overhead (pickling, scheduling) stays small against the work, and the workers finish
together. :meth:`Executor.ordered` yields results in the items' order with a few computed
ahead: a big timeline's ranges, tokenized on threads or Dask workers and paired here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ThreadPoolExecutor,
    wait,
)
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeVar

from analyzer.config import available_cores
from analyzer.errors import UsageError

T = TypeVar("T")
R = TypeVar("R")
TASKS_PER_WORKER = 8  # groups handed to each worker (load balance vs per-task overhead)
PARALLEL_MIN_FILES = 64
PARALLEL_MIN_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class Executor:
    """How to run tasks: ``jobs`` local processes (1: in this process), or a Dask scheduler
    at ``scheduler`` (``tcp://HOST:PORT``), or a local Dask cluster of ``dask_workers`` processes."""

    jobs: int = 1
    scheduler: str | None = None
    dask_workers: int | None = None

    @property
    def workers(self) -> int:
        return self.dask_workers or self.jobs

    @property
    def uses_dask(self) -> bool:
        return self.scheduler is not None or self.dask_workers is not None

    def pays_off(self, pieces: int, total_bytes: int) -> bool:
        """Whether to parse ``pieces`` (:func:`ingest_pieces`: files, chunks of big logs)
        elsewhere than here: always on Dask (asked for by name); on local processes only for
        enough work, as starting them costs ~1-2 s (imports, compiled kernels)."""
        if pieces < 2:
            return False
        return self.uses_dask or self.jobs > 1 and (pieces >= PARALLEL_MIN_FILES or total_bytes >= PARALLEL_MIN_BYTES)

    def map(
        self, fn: Callable[[list[T]], list[R]], items: Sequence[T], weight: Callable[[T], int], most: int | None = None
    ) -> Iterator[R]:
        """``fn`` over groups of ``items`` (heaviest first); results as groups complete.

        By default about :data:`TASKS_PER_WORKER` groups per worker; ``most``: items that are
        already coarse (buckets, chunks) in groups of at most ``most`` in weight (an item
        heavier alone), lighter towards the end (:func:`_tapering`).
        """
        if not items:
            return iter(())
        groups = (
            _groups(items, weight, max(1, self.workers) * TASKS_PER_WORKER)
            if most is None
            else _tapering(items, weight, max(1, self.workers), most)
        )
        if self.uses_dask:
            return _dask_map(fn, groups, self.scheduler, self.dask_workers)
        if self.jobs <= 1 or len(groups) == 1:
            return (r for g in groups for r in fn(g))
        return _pool_map(fn, groups, self.jobs)

    def ordered(self, fn: Callable[[T], R], items: Sequence[T], window: int | None = None) -> Iterator[R]:
        """``fn(item)`` for each item, yielded in the items' order, at most ``window`` (by
        default two per worker) computed ahead of the consumer, so that memory stays bounded
        however many items there are. Local workers are threads of this process: ``fn`` must
        spend its time outside the GIL (the timeline tokenizer does); on Dask, tasks."""
        ahead = window or 2 * max(1, self.workers)
        if self.uses_dask:
            return _dask_ordered(fn, items, ahead, self.scheduler, self.dask_workers)
        if self.jobs <= 1:
            return map(fn, items)
        return _thread_ordered(fn, items, ahead, self.jobs)


def executor_from_options(jobs: int | None, scheduler: str | None, dask_workers: int | None) -> Executor:
    if scheduler and dask_workers:
        raise UsageError(
            "--scheduler and --dask-workers exclude each other: one names a running cluster, "
            "the other starts a local one"
        )
    if dask_workers is not None and dask_workers < 1 or jobs is not None and jobs < 1:
        raise UsageError("--jobs and --dask-workers need a number >= 1")
    return Executor(jobs=jobs or available_cores(), scheduler=scheduler, dask_workers=dask_workers)


def _groups(items: Sequence[T], weight: Callable[[T], int], n_groups: int) -> list[list[T]]:
    """Heaviest items first, each group about ``total / n_groups`` in weight (a big item alone)."""
    ordered = sorted(items, key=weight, reverse=True)
    total = sum(weight(i) for i in ordered)
    target = max(1, total // n_groups)
    out: list[list[T]] = []
    cur: list[T] = []
    size = 0
    for item in ordered:
        cur.append(item)
        size += weight(item)
        if size >= target:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def _tapering(items: Sequence[T], weight: Callable[[T], int], workers: int, most: int) -> list[list[T]]:
    """Heaviest items first, each group half of what is left per worker and at most ``most`` in
    weight (an item heavier than that alone): few tasks while much is left (a task costs Dask's
    scheduler and client ~3 ms of the coordinating process, on the cores the workers need;
    measured on 4096 per-rank logs, 18 tasks instead of 49 made Dask's ingest 3% faster),
    single items at the end, so that the workers finish together. Items of the same weight to the MB keep their
    order: a big log's chunks, which differ by a line's bytes, go out in file order and are merged as they come
    (sorted by their exact sizes, chunk 28 of 32 came back first and the coordinator held 21 chunks waiting for
    the first: 550 MB of a 1 GB log's ingest)."""
    ordered = sorted(items, key=lambda i: (weight(i) + (1 << 19)) >> 20, reverse=True)
    left = sum(weight(i) for i in ordered)
    out: list[list[T]] = []
    at = 0
    while at < len(ordered):
        cap = min(most, left / (2 * workers))
        group, size = [ordered[at]], weight(ordered[at])
        while at + len(group) < len(ordered) and size + weight(ordered[at + len(group)]) <= cap:
            size += weight(ordered[at + len(group)])
            group.append(ordered[at + len(group)])
        out.append(group)
        at += len(group)
        left -= size
    return out


def _pool_map(fn: Callable[[list[T]], list[R]], groups: list[list[T]], jobs: int) -> Iterator[R]:
    import multiprocessing  # with the process pool, only when one is used (20 ms at start-up)
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=ctx)
    try:
        pending: set[Future[list[R]]] = {ex.submit(fn, g) for g in groups}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            if not pending:  # the workers go before the caller works on the last results (a big log's merge and
                ex.shutdown(wait=True)  # write): their ~150 MB each was held, idle, through it
            for f in done:
                yield from f.result()
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


#: A local cluster here lives for one command and runs coarse tasks. Measured on 4096 per-rank logs
#: (bench/scale.py): the workers' statistical profiler (a stack sample of every thread every 10 ms)
#: cost a fifth of the parsing rate; glibc's trim threshold of 64 KB, which Dask sets for its
#: workers, turned every large allocation into mmap/munmap page faults (8% of the worker time);
#: work stealing, 100 ms memory polls and 20 ms ticks took ~40% of the coordinating process's CPU,
#: which shares the machine's cores with the workers. Workers start from a fork server
#: (``forkserver``), a process that imported distributed and its libraries and runs no thread: they
#: used to be forked from this process, which is up 0.4 s sooner, but this process runs the
#: cluster's event loop thread (and, in a CLI ingest, the early hash's), and a fork taken while
#: another thread holds a lock leaves the child waiting on it for ever (seen twice in the tests:
#: an idle forked worker, and the run hung).
_LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.scheduler.work-stealing": False,  # tasks are handed out from the scheduler's queue
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.multiprocessing-method": "forkserver",
}


@contextmanager
def _dask_client(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A client of the cluster at ``scheduler``, or of a local cluster of ``workers`` processes
    (see :data:`_LOCAL_CLUSTER_CONFIG`) that lives as long as the client."""
    import dask
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        env = {
            k: v
            for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
            if k != "MALLOC_TRIM_THRESHOLD_"
        }
        with dask.config.set({**_LOCAL_CLUSTER_CONFIG, "distributed.nanny.pre-spawn-environ": env}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(scheduler or cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_map(
    fn: Callable[[list[T]], list[R]], groups: list[list[T]], scheduler: str | None, workers: int | None
) -> Iterator[R]:
    from dask.distributed import as_completed

    with _dask_client(scheduler, workers) as client:
        futures = client.map(fn, groups, pure=False)
        for f in as_completed(futures):
            yield from f.result()


def _dask_ordered(
    fn: Callable[[T], R], items: Sequence[T], ahead: int, scheduler: str | None, workers: int | None
) -> Iterator[R]:
    with _dask_client(scheduler, workers) as client:
        yield from _windowed(lambda item: client.submit(fn, item, pure=False), items, ahead)


def _thread_ordered(fn: Callable[[T], R], items: Sequence[T], ahead: int, jobs: int) -> Iterator[R]:
    ex = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hvd-analyze-worker")
    try:
        yield from _windowed(lambda item: ex.submit(fn, item), items, ahead)
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _windowed(submit: Callable[[T], Any], items: Sequence[T], ahead: int) -> Iterator[Any]:
    """Results of ``submit(item)`` futures in the items' order, ``ahead`` submitted at a time."""
    todo = iter(items)
    pending = deque(submit(item) for item in islice(todo, ahead))
    while pending:
        result = pending.popleft().result()
        for item in islice(todo, 1):
            pending.append(submit(item))
        yield result
