"""A framework's report that a process's GPU failed: out of memory, the most common way one rank of a job stops
while the others wait in a collective until their watchdog times them out, or a CUDA error.

* PyTorch: ``RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 1; 15.78 GiB total capacity; …)``
  (1.x), ``torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 0 has a total
  capacity of 79.15 GiB of which 141.25 MiB is free. …`` (2.0+; ``torch.OutOfMemoryError`` from 2.5), ``HIP out of
  memory`` on ROCm;
* TensorFlow: ``ResourceExhaustedError: OOM when allocating tensor with shape[…] and type float on
  /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc``;
* JAX / XLA: ``RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.``

A CUDA error a process raised itself (``RuntimeError: CUDA error: an illegal memory access was encountered``,
``device-side assert triggered``, 2.8+'s ``torch.AcceleratorError``, a C++ exception's ``what():  CUDA error: …``)
is a ``gpu_fault``, with what its text says to change (:func:`parsers.nccl.cuda_errors.cuda_advice`); the same
error met by PyTorch's NCCL watchdog is read by :func:`parsers.nccl.reports.parse_watchdog_exception` first.

The rank is the launcher's tag before it when there is one (``[rank2]:``, mpirun's ``[1,2]<stderr>:``). A report
after a collective already timed out in the log is not the timeout's cause (nccl#1284: a bogus allocation while
the job tore down): :meth:`parsers.nccl.failures.Failures.settle` reads it as a consequence.
"""

from __future__ import annotations

import re

from parsers.nccl.cuda_errors import cuda_advice
from parsers.nccl.reports import FrameworkError, rank_said

GPU_OOM = "gpu_oom"
GPU_FAULT = "gpu_fault"  # one of error_classes' own (the watchdog's): not listed here
CLASSES = (GPU_OOM,)
HINTS = (
    "out of memory",
    "OOM when allocating",
    "Out of memory while trying to allocate",
    "CUDA error: ",
    "HIP error: ",
)

_OOM = re.compile(
    r"\b(?:CUDA|HIP) out of memory\.(?: Tried to allocate [\d.]+ [KMGTE]?i?B)?"
    r"|\bOOM when allocating tensor with shape\S*(?: and type \w+)?(?: on \S+)?"
    r"|\bRESOURCE_EXHAUSTED: Out of memory while trying to allocate \d+ bytes"
)
#: a CUDA error raised by the process itself: at a line's start (after tags), after an exception's name or a C++
#: exception's ``what():``; a sentence that mentions one is none. The exception's dotted name is bounded: a long run of
#: word characters and dots before it is read in linear time
_CUDA_ERROR = re.compile(
    r"(?:^\s*(?:\[[^\[\]\n]{1,40}\](?:<\w+>)?:?\s*)*|\bwhat\(\):\s*|\b[\w.]{0,100}(?:Error|Exception): )"
    r"(?P<err>(?:CUDA|HIP) error: (?P<text>\S.*?))\s*$"
)
#: a device-side assert: the job's own check failed in a kernel
_ASSERT = "device-side assert triggered"
ASSERT_ADVICE = (
    "a device-side assert is a check of the job's own code failing in a kernel, most often an index out of range "
    "(embedding ids past the vocabulary, loss targets past the classes, a gather): rerun with CUDA_LAUNCH_BLOCKING=1, "
    "or the step on CPU, to see which"
)


def parse_gpu_error(line: str) -> FrameworkError | None:
    """The report on ``line`` of a process's GPU out of memory, or of a CUDA error it raised, its rank named when a
    launcher's tag says it."""
    if not any(map(line.__contains__, HINTS)):  # each pattern holds one
        return None
    if (m := _OOM.search(line)) is not None:
        return FrameworkError(None, m[0].rstrip(".") + rank_said(line), None, cls=GPU_OOM, cause=True)
    if "error: " not in line or (c := _CUDA_ERROR.search(line)) is None:
        return None
    text = c["text"].rstrip(".")
    if text.lower() == "out of memory":
        return FrameworkError(None, c["err"].rstrip(".") + rank_said(line), None, cls=GPU_OOM, cause=True)
    advice = ASSERT_ADVICE if _ASSERT in text else cuda_advice(f"'{text}'")
    return FrameworkError(None, c["err"].rstrip(".") + rank_said(line), None, cls=GPU_FAULT, cause=True, advice=advice)


REMEDIATION = {
    GPU_OOM: "A process ran out of GPU memory and stopped; the other ranks then waited in their next collective "
    "until the watchdog timed them out (their timeouts follow from this). Lower the memory this rank needs: a "
    "smaller micro-batch or sequence length, activation checkpointing, sharding the optimizer state (ZeRO, FSDP), "
    "or PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when much is reserved but unallocated. When one rank only "
    "runs out, look at what it does differently (the longest inputs of an uneven batch, evaluation or checkpointing "
    "on rank 0).",
}
