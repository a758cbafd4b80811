"""Names in a rank's profiler trace: collectives of every backend, dtypes, and what a file name says.

NCCL's kernels are named ``ncclKernel_<Op>_<ALGO>_<PROTO>_<Red>_<type>`` up to 2.18 and
``ncclDevKernel_<Op>_<Red>_<type>_<ALGO>_<PROTO>`` (or ``ncclDevKernel_Generic``, ``..._SendRecv``)
after; RCCL keeps the older form. PyTorch names a collective ``nccl:all_reduce`` / ``gloo:all_reduce``
(annotations), ``c10d::allreduce_`` (the enqueue) and ``allreduce`` (``Collective name`` args); one
spelling is kept here, snake case: ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``,
``all_to_all``, ``send_recv``, ``barrier``, ...
"""

from __future__ import annotations

import re

_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)", re.IGNORECASE)
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: PyTorch's and NCCL's spellings of one collective -> the one kept
_OPS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "allgather_base": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather",
    "allgather_coalesced": "all_gather",
    "reducescatter": "reduce_scatter",
    "reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "alltoall": "all_to_all",
    "alltoall_base": "all_to_all",
    "all_to_allv": "all_to_all",
    "sendrecv": "send_recv",
    "generic": "generic",
    "allreduce_coalesced": "all_reduce",
}
#: PyTorch's dtype names (``dtype`` args) -> bytes per element
DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "byte": 1,
    "char": 1,
    "uint8": 1,
    "int8": 1,
    "int": 4,
    "int32": 4,
    "long": 8,
    "int64": 8,
    "short": 2,
    "int16": 2,
    "bool": 1,
}


def op_name(raw: str) -> str:
    """One spelling of a collective's name, from any of PyTorch's or NCCL's."""
    name = raw.split(":")[-1].strip().strip("_")
    name = _SNAKE.sub("_", name).lower()
    squashed = name.replace("_", "")
    for key, value in _OPS.items():
        if squashed == key.replace("_", ""):
            return value
    return name


def kernel_op(kernel: str) -> str | None:
    """The collective of an NCCL / RCCL kernel's name, or None when it is not one."""
    m = _KERNEL.match(kernel)
    return None if m is None else op_name(m.group(1))


def is_comm_kernel(name: str) -> bool:
    return _KERNEL.match(name) is not None


def dtype_bytes(dtype: str | None) -> int | None:
    return None if not dtype else DTYPE_BYTES.get(dtype.lower())


#: ``tensorboard_trace_handler``'s ``<worker>.<time_ns>.pt.trace.json[.gz]``
_HANDLER = re.compile(r"^(?P<worker>.+?)\.(?P<time>\d{12,})\.pt\.trace\.json(?:\.gz)?$")
#: PyTorch's default worker name, ``<host>_<pid>``
_HOST_PID = re.compile(r"^(?P<host>.+)_(?P<pid>\d{1,12})$")
_RANK = re.compile(r"(?:^|[^a-z])(?:rank|worker|proc)[-_]?(?P<rank>\d{1,9})(?![0-9])", re.IGNORECASE)


def worker_of(file_name: str) -> str | None:
    """The worker name of a ``tensorboard_trace_handler`` file name, or None for another name."""
    m = _HANDLER.match(file_name)
    return None if m is None else m.group("worker")


def host_pid_of(worker: str) -> tuple[str, int] | None:
    """Host and pid of PyTorch's default worker name ``<host>_<pid>``."""
    m = _HOST_PID.match(worker)
    return None if m is None else (m.group("host"), int(m.group("pid")))


def rank_of_name(file_name: str) -> int | None:
    """A rank a file name states (``rank3``, ``rank-3``, ``worker3``, ``rank_3``), or None."""
    m = _RANK.search(file_name)
    return None if m is None else int(m.group("rank"))
