"""Trust on first use: what a new user meets first, one test per class of break (issue 41).

No internal error on a real public layout; nothing analysable is never "Healthy"; a check passes only
on its own evidence and never beside a finding that denies it; files given together read as a folder's;
unrelated logs are not linked; numbers that agree at a glance.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from analyzer.cli import cli
from analyzer.findings import clip
from analyzer.render.base import fixed
from tests.conftest import ROOT, validate_report

CAPTURED = ROOT / "sample_traces" / "captured"
SYNTHETIC = ROOT / "sample_traces" / "synthetic"
STDOUT = "[0]<stdout>:CONFIG model=mlp steps=30\n[1]<stdout>:CONFIG model=mlp steps=30\n"


def _run(*args: str) -> Result:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def _doc(*paths: Path | str) -> dict[str, Any]:
    res = _run("report", "-q", "-f", "json", *map(str, paths))
    assert res.exit_code == 0, res.stderr
    return dict(validate_report(json.loads(res.stdout)))


def _nccl_log(path: Path, host: str, version: str, nranks: int, network: str = "IB") -> Path:
    """A healthy NCCL_DEBUG=INFO log of ``nranks`` processes on ``host``, one per CUDA device."""
    lines = []
    for rank in range(nranks):
        who = f"{host}:{4000 + rank}:{4000 + rank} [{rank}]"
        lines += [
            f"{who} NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
            f"{who} NCCL INFO NCCL version {version}+cuda12.2"
            if rank == 0
            else f"{who} NCCL INFO cudaDriverVersion 12020",
            f"{who} NCCL INFO Using network {network}",
            f"{who} NCCL INFO comm 0x{rank:x}0 rank {rank} nranks {nranks} cudaDev {rank} busId {rank}b000 - Init START",
            f"{who} NCCL INFO comm 0x{rank:x}0 rank {rank} nranks {nranks} cudaDev {rank} busId {rank}b000 - Init COMPLETE",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


# 1. a crash on a real public layout ---------------------------------------------------------------


def test_a_cycle_time_known_from_markers_explains_fragmented_fusion(corpus: Path) -> None:
    """The public TensorFlow timeline with CYCLE_START markers crashed in fusion_fragmented."""
    doc = _doc(corpus / "horovod-public" / "andrewor14-tf-logs-e2205b9-horovod_timeline.json")
    (frag,) = [f for f in doc["findings"] if f["code"] == "timeline.fusion_fragmented"]
    assert "tensors are ready one cycle apart with the cycle time in effect of 9.018 ms" in frag["summary"]
    assert frag["suggestions"][0]["env"] == {"HOROVOD_CYCLE_TIME": "18.036"}


# 2. nothing analysable is never "Healthy" -------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "said"),
    [
        # a document that quotes NCCL's and PyTorch's texts (the project's own code reference): read as a log,
        # nothing in it judged
        ({"README.md": (ROOT / "docs" / "detectors.md").read_text()}, "read as a job log"),
        ({"stderr.txt": ""}, "a 0-byte file, nothing in it"),
        ({"README.md": "# notes\n", "env.txt": "HOROVOD_CYCLE_TIME=5\n"}, "none a Horovod timeline"),
        ({"job.log": "training started\nepoch 1 loss 0.31\n"}, "not an input hvd-analyze reads"),
    ],
)
def test_input_without_evidence_exits_2_saying_what_was_read(tmp_path: Path, files: dict[str, str], said: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    target = tmp_path if len(files) > 1 else tmp_path / next(iter(files))
    for gate in ((), ("--fail-on", "critical")):  # a CI gate never passes on nothing
        res = _run("report", str(target), *gate)
        assert res.exit_code == 2, res.stdout
        assert "Healthy" not in res.stdout and res.stderr.startswith("hvd-analyze: error: ")
        assert said in res.stderr and str(target) in res.stderr


def test_a_run_too_small_to_judge_is_inconclusive_not_healthy(tmp_path: Path) -> None:
    """One rank, one step: the timeline is read, no check has its evidence."""
    from tests.builders import B, E, glued, meta, write

    one = write(tmp_path, glued(meta(1, "broadcast.w"), B("BROADCAST", 10, 1), E(20, 1)))
    v = _doc(one)["verdict"]
    assert v["status"] == "inconclusive" and v["passed"] == []
    assert v["headline"].startswith("Inconclusive: a timeline of") and "too little to judge" in v["headline"]


# 3. checks passed agree with the findings and need their evidence --------------------------------


def test_a_straggler_report_does_not_pass_the_waiting_check() -> None:
    doc = _doc(CAPTURED / "straggler_nocache")
    assert {f["code"] for f in doc["findings"]} >= {"timeline.straggler"}
    assert "waiting for other ranks is a small share of the step" not in doc["verdict"]["passed"]


def test_network_checks_need_the_network_they_speak_of(tmp_path: Path) -> None:
    sockets = _doc(_nccl_log(tmp_path / "sockets.log", "solo", "2.18.3", 2, network="Socket"))
    passed = sockets["verdict"]["passed"]
    assert "no process fell back to TCP sockets" not in passed  # it runs on sockets
    assert "no InfiniBand process runs without GPUDirect RDMA" not in passed  # there is no IB process
    assert "network: Socket on its one host (solo)" in passed
    ib = _doc(_nccl_log(tmp_path / "ib.log", "node-a", "2.18.3", 2))
    assert "no process fell back to TCP sockets" in ib["verdict"]["passed"]
    assert "every process runs the same NCCL version" not in ib["verdict"]["passed"]  # one version line of 2


def test_a_closed_timeline_passes_complete_and_an_unclosed_layout_does_not(corpus: Path) -> None:
    closed = _doc(CAPTURED / "straggler_nocache")
    assert "the timeline is complete: no step after its end is missing" in closed["verdict"]["passed"]
    legacy = _doc(corpus / "horovod-public" / "andrewor14-tf-logs-72f32f9-horovod_timeline.json")
    assert legacy["inputs"][0]["timeline"]["status"] == "unterminated"
    assert not any(p.startswith("the timeline is complete") for p in legacy["verdict"]["passed"])


# 4. files given together read as a folder's -------------------------------------------------------


def test_files_given_together_skip_and_list_a_non_input(tmp_path: Path) -> None:
    (tmp_path / "stdout.txt").write_text(STDOUT)
    shutil.copy(CAPTURED / "straggler_nocache" / "timeline.json", tmp_path / "timeline.json")
    doc = _doc(tmp_path / "timeline.json", tmp_path / "stdout.txt")
    assert [Path(s["path"]).name for s in doc["skipped_files"]] == ["stdout.txt"]
    assert "'[N]<stdout>:' prefixes" in doc["skipped_files"][0]["reason"]
    alone = _run("report", str(tmp_path / "stdout.txt"))  # alone it must be an input
    assert alone.exit_code == 2 and "not an input hvd-analyze reads" in alone.stderr
    text = _run("report", str(tmp_path / "timeline.json"), str(tmp_path / "stdout.txt")).stdout
    assert "Files that are not inputs (1, left out):" in text and "stdout.txt: text without" in text


# 6. batch --------------------------------------------------------------------------------------------


def test_batch_names_file_runs_without_their_endings_and_survives_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(CAPTURED / "straggler_nocache" / "timeline.json", runs / "run_a.json")
    shutil.copy(CAPTURED / "healthy_np2" / "timeline.json", runs / "run_b.json")
    import analyzer.fleet as fleet_module

    real = fleet_module.analyze_in

    def buggy(ctx: Any) -> Any:
        if "run_b" in str(ctx.store.inputs[0]["path"]):
            raise KeyError("a bug")
        return real(ctx)

    monkeypatch.setattr(fleet_module, "analyze_in", buggy)
    out = tmp_path / "out"
    res = _run("batch", str(runs), "-o", str(out), "-j", "1")
    assert res.exit_code == 3, res.output  # a bug is told from a finding and from bad input
    fleet = json.loads((out / "fleet.json").read_text())["fleet"]
    assert fleet["analysed"] == 1 and [r["run"] for r in fleet["failed"]] == ["run_b"]
    assert fleet["failed"][0]["internal"] and "internal error: KeyError" in fleet["failed"][0]["error"]
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["run_a.json"]  # not run_a.json.json
    assert "`run_b`: internal error" in (out / "fleet.md").read_text()
    assert _run("batch", str(runs), "-o", str(tmp_path / "o2"), "-j", "1", "--allow-failures").exit_code == 0


# 7. unrelated logs are not linked ------------------------------------------------------------------


def test_logs_of_different_clusters_in_one_folder_are_different_jobs(tmp_path: Path) -> None:
    _nccl_log(tmp_path / "cluster-a.log", "a-node", "2.7.8", 4)
    _nccl_log(tmp_path / "cluster-b.log", "b-node", "2.8.4", 8)
    (tmp_path / "watchdog.log").write_text(
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.\n"
    )
    doc = _doc(tmp_path)
    assert "nccl.version_mismatch" not in {f["code"] for f in doc["findings"]}
    assert len(doc["jobs"]) == 3
    tied = {Path(j["logs"][0]).name: j["tied_by"] for j in doc["jobs"]}
    assert (
        "they look like another job" in tied["cluster-b.log"] or "they look like another job" in tied["cluster-a.log"]
    )
    assert "nothing ties it to one of them" in tied["watchdog.log"]
    assert not any(p.startswith("every process runs the same NCCL version") for p in doc["verdict"]["passed"])


def test_logs_of_one_cluster_stay_one_job(tmp_path: Path) -> None:
    _nccl_log(tmp_path / "rank0.log", "node-a", "2.18.3", 2)
    _nccl_log(tmp_path / "rank1.log", "node-a", "2.18.3", 2)
    assert len(_doc(tmp_path)["jobs"]) == 1


# 8. numbers that agree at a glance -----------------------------------------------------------------


def test_the_straggler_title_quotes_the_time_the_job_loses() -> None:
    doc = _doc(CAPTURED / "straggler_nocache")
    f = next(f for f in doc["findings"] if f["code"] == "timeline.straggler")
    lost = f"{f['impact']['seconds_per_step'] * 1e3:.1f} ms"
    assert f"the run loses about {lost} per step to it" in f["title"] and f"lost about {lost} per step" in f["summary"]


def test_text_helpers_never_cut_mid_word_nor_print_minus_zero() -> None:
    long = "Got completion from peer with status=IBV_WC_RETRY_EXC_ERR(12) opcode 0 len 0 vendor err 129 (Recv) opcode"
    short = clip(long, 90)
    assert len(short) <= 90 and short.endswith("…") and long.startswith(short[:-1])
    assert not short[:-1].endswith(" opcode") and clip("short", 90) == "short"
    assert fixed(-0.0004) == "0.00" and fixed(-0.004) == "0.00" and fixed(-0.5) == "-0.50" and fixed(1.234, 1) == "1.2"


def test_ingest_describes_a_log_and_report_confirms_its_output(tmp_path: Path) -> None:
    log = _nccl_log(tmp_path / "job.log", "node-a", "2.18.3", 2)
    (tmp_path / "notes.txt").write_text("nothing\n")
    res = _run("ingest", str(tmp_path), "-o", str(tmp_path / "store"))
    assert f"added {log} (log, 10 lines, " in res.stdout and "NCCL record(s), 2 process(es); issues:" in res.stdout
    assert "None" not in res.stdout and f"skipped {tmp_path / 'notes.txt'}: text without" in res.stdout
    res = _run("report", str(log), "-o", str(tmp_path / "report.html"))
    assert res.exit_code == 0 and f"wrote the html report to {tmp_path / 'report.html'}: Healthy" in res.stderr


def test_a_watchdog_sequence_number_is_a_whole_number(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "[rank1]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600021 milliseconds before timing out.\n"
        "[rank0]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600021 milliseconds before timing out.\n"
        "[rank0]:[E1206 18:44:13.001 ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 7753, last "
        "enqueued NCCL work: 7753, last completed NCCL work: 7752.\n"
    )
    doc = _doc(log)
    assert all(isinstance(w["seq"], int) for w in doc["nccl"]["watchdog_timeouts"])
    assert "7752.0" not in _run("report", str(log)).stdout


def test_in_a_run_of_two_jobs_the_losses_are_shares_of_their_own_jobs_step() -> None:
    """A costly finding of the other job must not be quoted as a share of this job's step."""
    from analyzer.report.model import AnalysisReport
    from analyzer.report.verdict import verdict_of

    pair = ROOT / "sample_traces" / "compare" / "cycle_default"
    doc = _doc(pair / "before", pair / "after")
    top = next(f for f in doc["findings"] if f["severity"] == "warning")
    other_job = next(j["id"] for j in doc["jobs"] if j["id"] != top["job"])
    other = dict(top, code="timeline.straggler", job=other_job, severity="warning")
    other["impact"] = dict(top["impact"], seconds_per_step=top["impact"]["seconds_per_step"] / 2)
    doc["findings"] = [top, other]
    v = verdict_of(AnalysisReport.from_document(doc))
    assert [loss["code"] for loss in v["losses"]] == [top["code"]]
    assert v["losses"][0]["fraction_of_step"] == pytest.approx(
        v["losses"][0]["ms_per_step"] / v["median_step_ms"], rel=0.02
    )
