"""The jobs of a run (analyzer.jobs): which inputs belong together, and findings that use only their own job."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from analyzer.jobs import plan_jobs
from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.manifest import ManifestEntry
from analyzer.store.run_store import temporary_store

SYNTHETIC = Path(__file__).resolve().parents[2] / "sample_traces" / "synthetic"


def entry(path: str, kind: str = "job_log") -> ManifestEntry:
    return {"id": path, "path": path, "kind": kind}  # type: ignore[typeddict-item]  # what plan_jobs reads


def plan(*paths: str) -> dict[str, tuple[list[str], list[str], str]]:
    entries = [entry(p, "horovod_timeline" if p.endswith(".json") else "job_log") for p in paths]
    return {j.name: (list(j.timelines), list(j.logs), j.tied_by) for j in plan_jobs(entries).jobs}


def test_each_timeline_folder_is_a_job_and_logs_go_to_the_folder_that_holds_them() -> None:
    jobs = plan("/r/a/timeline.json", "/r/a/logs/rank0.log", "/r/a/logs/rank1.log", "/r/b/timeline.json", "/r/b/o.log")
    assert jobs == {
        "a": (["/r/a/timeline.json"], ["/r/a/logs/rank0.log", "/r/a/logs/rank1.log"], "logs in the job's folder"),
        "b": (["/r/b/timeline.json"], ["/r/b/o.log"], "logs in the job's folder"),
    }


def test_an_elastic_restart_is_one_job_with_two_timelines() -> None:
    jobs = plan("/r/job/timeline.json", "/r/job/timeline.restart1.json", "/r/job/stdout.log")
    assert jobs == {
        "job": (
            ["/r/job/timeline.json", "/r/job/timeline.restart1.json"],
            ["/r/job/stdout.log"],
            "logs in the job's folder",
        )
    }


def test_logs_from_elsewhere_go_to_the_only_timeline_job() -> None:
    (job,) = plan("/home/u/timeline.json", "/var/log/nccl.log").values()
    assert job[1] == ["/var/log/nccl.log"] and "this one timeline job" in job[2]


def test_logs_only_run_is_one_job() -> None:
    (job,) = plan("/r/rank0/nccl.log", "/r/rank1/nccl.log").values()
    assert job == ([], ["/r/rank0/nccl.log", "/r/rank1/nccl.log"], "a run of logs only")


def test_logs_beside_several_jobs_are_not_tied_to_any() -> None:
    entries = [entry("/r/a/t.json", "horovod_timeline"), entry("/r/b/t.json", "horovod_timeline")]
    entries += [entry("/r/stdout.log"), entry("/r/c/nccl.log")]
    p = plan_jobs(entries)
    by_name = {j.name: j for j in p.jobs}
    assert by_name["c"].logs == ("/r/c/nccl.log",) and by_name["c"].timelines == ()
    (lone,) = [j for j in p.jobs if j.logs == ("/r/stdout.log",)]
    assert lone.tied_by.startswith("unassigned (it lies beside the folders of 2 timeline jobs")
    assert p.unassigned == (("/r/stdout.log", lone.tied_by[len("unassigned (") : -len("): analysed alone")]),)


def report_of(*folders: Path) -> dict[str, Any]:
    with temporary_store() as store:
        store.ingest(*discover(list(folders)))
        return dict(to_document(analyze(store)))


def finding(doc: dict[str, Any], code: str) -> dict[str, Any]:
    (f,) = [f for f in doc["findings"] if f["code"] == code]
    return f


def test_two_unrelated_jobs_in_one_store_use_only_their_own_evidence(tmp_path: Path) -> None:
    a, b = tmp_path / "straggler_with_ib", tmp_path / "healthy_with_sockets"
    a.mkdir()
    shutil.copy(SYNTHETIC / "straggler_nocache" / "timeline.json", a / "timeline.json")
    shutil.copy(SYNTHETIC / "nccl_healthy_ib" / "job.log", a / "job.log")
    shutil.copytree(SYNTHETIC / "nccl_socket_fallback", b)
    alone_a, alone_b, both = report_of(a), report_of(b), report_of(tmp_path)
    ids = {j["name"]: j["id"] for j in both["jobs"]}
    assert set(ids) == {a.name, b.name}
    assert {p.split("/")[-1] for p in both["jobs"][0]["timelines"] + both["jobs"][0]["logs"]} == {
        "timeline.json",
        "job.log",
    }
    for alone, job in ((alone_a, ids[a.name]), (alone_b, ids[b.name])):
        mine = [f for f in both["findings"] if f["job"] == job]
        assert [f["code"] for f in mine] == [f["code"] for f in alone["findings"]]
        for f, g in zip(mine, alone["findings"], strict=True):  # the same evidence, impact and advice as alone
            assert (f["impact"], f["suggestions"], f["evidence"], f["summary"]) == (
                g["impact"],
                g["suggestions"],
                g["evidence"],
                g["summary"],
            )
    sock = finding(both, "nccl.socket_fallback")
    assert sock["job"] == ids[b.name] and sock["impact"] == finding(alone_b, "nccl.socket_fallback")["impact"]
    assert "mlx5" not in str(sock["suggestions"])  # the healthy job's HCAs are not this job's
    assert finding(both, "timeline.straggler")["job"] == ids[a.name]


def test_reports_of_several_jobs_say_so_and_group_findings_by_job(tmp_path: Path) -> None:
    from analyzer.render.markdown import MarkdownRenderer
    from analyzer.render.text import TextRenderer

    for name in ("straggler_nocache", "fusion_off"):
        shutil.copytree(SYNTHETIC / name, tmp_path / name)
    with temporary_store() as store:
        store.ingest(*discover([tmp_path]))
        report = analyze(store)
    text = TextRenderer().render(report)
    assert text.index("This run holds 2 jobs") < text.index("Inputs (")
    straggler = text.index("== Job straggler_nocache (")
    fusion = text.index("== Job fusion_off (")
    assert text.index("Verdict: ") < fusion  # the verdict is the run's, above the jobs' findings
    assert (
        fusion
        < text.index("timeline.fusion_fragmented", fusion)
        < straggler
        < text.index("timeline.straggler", straggler)
    )
    md = MarkdownRenderer().render(report)
    assert "## Jobs" in md and "## Job straggler\\_nocache (job2): 1 finding(s)" in md
