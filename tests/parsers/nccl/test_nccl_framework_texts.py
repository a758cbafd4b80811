"""A framework's report of a failed NCCL call is classified by the failed call's own words.

PyTorch wraps NCCL's result code (``unhandled system error``, ``internal error``) around the text NCCL
kept of the call that failed (``Last error: …``). The wrapper's code is generic; the last error names
the cause: ``Bootstrap : no socket interface found`` is a configuration error, not an internal one. The
report arrives flattened onto one line (older PyTorch's crash text), as a block behind a launcher's
prefix (``[trainer0|0]:``, TorchX; ``[rank1]:``, torchrun), or as a result code's name without
PyTorch's ``NCCL error in:`` header. NCCL 2.14 and 2.19 texts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import temporary_store
from parsers.inputs import InputKind, sniff

ONE_LINE = (
    "terminate called after throwing an instance of 'std::runtime_error'\n"
    "  what():  NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, "
    "NCCL version 2.14.3 ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error. Last error: NET/IB : Got completion from peer 10.0.0.2<45678> with error 12, opcode 0, len 0, "
    "vendor err 129 (Recv)\n"
    "Fatal Python error: Aborted\n"
)
BLOCK = (
    "[trainer0|0]:Traceback (most recent call last):\n"
    "[trainer0|0]:    dist.barrier()\n"
    "[trainer0|0]:torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the "
    "NCCL developers, NCCL version 2.19.3\n"
    "[trainer0|0]:ncclInternalError: Internal check failed.\n"
    "[trainer0|0]:Last error:\n"
    "[trainer0|0]:Bootstrap : no socket interface found\n"
)
NAMED_ONLY = (
    "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
    "[rank1]: Last error:\n"
    "[rank1]: Call to ibv_reg_mr failed with error Cannot allocate memory\n"
)
NO_LAST_ERROR = (
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system "
    "error, NCCL version 2.14.3\n"
)


def _errors(tmp_path: Path, text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    log = tmp_path / "job.log"
    log.write_text(text)
    assert sniff(log).kind is InputKind.JOB_LOG
    with temporary_store() as store:
        store.ingest(*discover([log]))
        doc = to_document(analyze(store))
    assert doc["nccl"] is not None
    return list(doc["nccl"]["errors"]), list(doc["findings"])


@pytest.mark.parametrize(
    ("text", "cls", "cause"),
    [
        (ONE_LINE, "ib_completion_error", "NET/IB : Got completion from peer"),
        (BLOCK, "config_error", "Bootstrap : no socket interface found"),
        (NAMED_ONLY, "ibv_setup_failure", "Call to ibv_reg_mr failed"),
    ],
)
def test_the_last_error_names_the_cause(tmp_path: Path, text: str, cls: str, cause: str) -> None:
    errors, findings = _errors(tmp_path, text)
    (err,) = errors  # one report: its result code's name and its Last error belong to it
    assert err["class"] == cls and err["message"].startswith(f"Last error: {cause}")
    (f,) = findings
    assert f["code"] == "nccl.error" and f["labels"]["class"] == cls and cause in f["title"]


def test_without_a_last_error_the_result_code_decides(tmp_path: Path) -> None:
    errors, _ = _errors(tmp_path, NO_LAST_ERROR)
    (err,) = errors
    assert err["class"] == "system_error" and err["result_code"] == 2


def test_two_reports_stay_two(tmp_path: Path) -> None:
    """Each ``NCCL error in:`` is a failed call of its own, even right after another one."""
    errors, _ = _errors(tmp_path, NO_LAST_ERROR + NO_LAST_ERROR.replace("1269", "1271"))
    assert [e["line"] for e in errors] == [1, 2]


def test_prose_naming_a_result_code_is_no_report(tmp_path: Path) -> None:
    """A README that says "a bare `ncclSystemError: …` takes its class from the `Last error:` text" is
    not a failed call: a result code's name counts only with NCCL's own description after it."""
    notes = tmp_path / "notes.md"
    notes.write_text(
        "A framework's report (a bare `ncclSystemError: …`) takes its class from the `Last error:`\n"
        "text it carries, not from the wrapper's result code.\n"
    )
    assert sniff(notes).kind is not InputKind.JOB_LOG
