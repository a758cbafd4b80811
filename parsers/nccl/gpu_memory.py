"""A framework's report that a process ran out of GPU memory: the most common way one rank of a job stops
while the others wait in a collective until their watchdog times them out.

* PyTorch: ``RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 15.78 GiB total capacity; …)``
  (1.x), ``torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 0 has a total
  capacity of 79.15 GiB of which 141.25 MiB is free. …`` (2.0+; ``torch.OutOfMemoryError`` from 2.5), ``HIP out of
  memory`` on ROCm;
* TensorFlow: ``ResourceExhaustedError: OOM when allocating tensor with shape[…] and type float on
  /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc``;
* JAX / XLA: ``RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.``

The rank is the launcher's tag before it when there is one (``[rank2]:``, mpirun's ``[1,2]<stderr>:``). A report
after a collective already timed out in the log is not the timeout's cause (nccl#1284: a bogus allocation while
the job tore down): :meth:`parsers.nccl.failures.Failures.settle` reads it as a consequence.
"""

from __future__ import annotations

import re

from parsers.nccl.reports import FrameworkError

GPU_OOM = "gpu_oom"
CLASSES = (GPU_OOM,)
HINTS = ("out of memory", "OOM when allocating", "Out of memory while trying to allocate")

_OOM = re.compile(
    r"\b(?:CUDA|HIP) out of memory\.(?: Tried to allocate [\d.]+ [KMGTE]?i?B)?"
    r"|\bOOM when allocating tensor with shape\S*(?: and type \w+)?(?: on \S+)?"
    r"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate \d+ bytes"
)
#: the launcher's tag that names the rank: torchrun's ``[rank2]:``, mpirun's ``[1,2]<stderr>:``, DeepSpeed's ``2: ``
_RANK = re.compile(r"^\s*(?:\[rank(?P<torch>\d+)\]:|\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:)")


def parse_gpu_oom(line: str) -> FrameworkError | None:
    """The out-of-memory report on ``line``, its rank named when a launcher's tag says it."""
    m = _OOM.search(line)
    if m is None:
        return None
    message = m[0].rstrip(".")
    if (tag := _RANK.match(line)) is not None:
        message += f" (rank {tag['torch'] or tag['mpi']})"
    return FrameworkError(None, message, None, cls=GPU_OOM, cause=True)


REMEDIATION = {
    GPU_OOM: "A process ran out of GPU memory and stopped; the other ranks then waited in their next collective "
    "until the watchdog timed them out (their timeouts follow from this). Lower the memory this rank needs: a "
    "smaller micro-batch or sequence length, activation checkpointing, sharding the optimizer state (ZeRO, FSDP), "
    "or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when much is reserved but unallocated. When one rank only "
    "runs out, look at what it does differently (the longest inputs of an uneven batch, evaluation or checkpointing "
    "on rank 0).",
}
