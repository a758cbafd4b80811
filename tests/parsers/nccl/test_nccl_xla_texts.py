"""XLA's (JAX's) report of a failed NCCL call beyond its result code (``docs/formats/nccl-log.md`` §5): the last
WARN of NCCL it quotes (openxla/xla#7201, late 2023) names the cause, and a libnccl it could not load is a failure of
the environment. XLA's plain ``<call> failed: <text>`` is read with Horovod's (``test_nccl_framework_texts.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parsers.nccl.test_nccl_framework_texts import _errors


@pytest.mark.parametrize(
    ("text", "cls", "quoted"),
    [
        (  # openxla/xla#7201's own example: the result code says CUDA, NCCL's last WARN says out of memory
            "NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated) 'Cuda failure 2 'out "
            "of memory''.; current tracing scope: all-reduce-start.285; current profiling annotation: "
            "XlaModule:#hlo_module=pjit__wrapped_step_fn,program_id=25#.\n",
            "cuda_oom",
            "Cuda failure 2 'out of memory'",
        ),
        (  # JAX 0.4.2x (LWM#42): an internal error whose last WARN is the topology's
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: "
            "custom call 'xla.gpu.reduce_scatter' failed: external/xla/xla/service/gpu/nccl_utils.cc:305: NCCL "
            "operation ncclCommInitRank(&comm, nranks, id, rank) failed: internal error - please report this issue to "
            "the NCCL developers. Last NCCL warning(error) log entry (may be unrelated) 'Attribute busid of node nic "
            "not found'.; current tracing scope: reduce-scatter-start.4\n",
            "config_error",
            "Attribute busid of node nic not found",
        ),
    ],
)
def test_xlas_last_nccl_warning_names_the_cause(tmp_path: Path, text: str, cls: str, quoted: str) -> None:
    """XLA quotes NCCL's last WARN after its report (``Last NCCL warning(error) log entry``), as PyTorch does after
    ``Last error:``: the class comes from that text, not from the result code's."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert err["class"] == cls and quoted in err["message"]
    assert [f["code"] for f in findings] == ["nccl.error"]


@pytest.mark.parametrize(
    "text",
    [
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: "
        "custom call 'xla.gpu.all_reduce' failed:\nexternal/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation "
        "ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work.;\n"
        "current tracing scope: all-reduce-start; current profiling annotation:\n",
        "2024-02-23 23:00:08.992499: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2732] Execution of replica "
        "0 failed: INTERNAL: Failed to execute XLA Runtime executable: run time error: custom call "
        "'xla.gpu.reduce_scatter' failed: external/xla/xla/service/gpu/nccl_utils.cc:134: NCCL operation "
        "ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work.. Last NCCL "
        "warning(error) log entry (may be unrelated) 'Unable to load NCCL library. Multi-GPU collectives will not "
        "work.'.; current tracing scope: reduce-scatter-start.4\n",
    ],
)
def test_xla_without_its_nccl_library_is_a_failure_of_its_own(tmp_path: Path, text: str) -> None:
    """JAX whose XLA could not load libnccl (jax#18391, LWM#44): not "nothing to analyse" but a failure of the
    environment, with what to install."""
    errors, findings = _errors(tmp_path, text)
    (err,) = errors
    assert err["class"] == "config_error" and "libnccl" in (err["remediation"] or "")
    (finding,) = findings
    assert finding["code"] == "nccl.error" and finding["severity"] == "critical"
