"""The failures a job's framework states of its own, not NCCL's: a rendezvous that never formed
(:mod:`parsers.nccl.rendezvous`), Horovod stopping the job (:mod:`parsers.nccl.horovod_errors`), a process's GPU
out of memory or faulting (:mod:`parsers.nccl.gpu_errors`), a DataLoader worker that died
(:mod:`parsers.nccl.dataloader`), Gloo's failed operations (:mod:`parsers.nccl.gloo_errors`). One reading of a line, their classes and their advice, for the
parser (:mod:`parsers.nccl.jobtexts`) and the error classes (:mod:`parsers.nccl.error_classes`)."""

from __future__ import annotations

from parsers.nccl import dataloader, gloo_errors, gpu_errors, horovod_errors, rendezvous
from parsers.nccl.reports import FrameworkError

#: the classes, in the order the report's schema lists them
CLASSES = rendezvous.CLASSES + horovod_errors.CLASSES + gpu_errors.CLASSES + dataloader.CLASSES + gloo_errors.CLASSES
REMEDIATION = {
    **rendezvous.REMEDIATION,
    **horovod_errors.REMEDIATION,
    **gpu_errors.REMEDIATION,
    **dataloader.REMEDIATION,
    **gloo_errors.REMEDIATION,
}
#: a text one of which a line holds when it may be such a report (besides ``Error``, which every exception's holds)
HINTS = (
    rendezvous.RENDEZVOUS_HINTS + horovod_errors.HOROVOD_HINTS + gpu_errors.HINTS + dataloader.HINTS + gloo_errors.HINTS
)


def parse_job_failure(line: str) -> FrameworkError | None:
    """The framework's own report of a failure on ``line``, if it holds one."""
    return (
        rendezvous.parse_rendezvous(line)
        or horovod_errors.parse_horovod(line)
        or gpu_errors.parse_gpu_error(line)
        or dataloader.parse_dataloader(line)
        or gloo_errors.parse_gloo(line)  # after Horovod's: its stopped loop quotes the Gloo error that stopped it
    )
