"""The committed synthetic samples are the generator's exact output, and meet their EXPECTED.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.render.jsonreport import to_document
from analyzer.report.assembly import analyze
from analyzer.store.discovery import discover
from analyzer.store.run_store import RunStore
from parsers.timeline import parse_timeline
from sample_traces.generator.__main__ import SAMPLES, expected_md, generate
from tests.conftest import ROOT, Validate, assert_round_trip

SYNTH = ROOT / "sample_traces" / "synthetic"


def test_samples_are_the_generators_output(tmp_path: Path) -> None:
    written = generate(tmp_path)
    assert {p.name for p in written} == {"timeline.json", "job.log"}
    for path in written:
        committed = SYNTH / path.parent.name / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed} differs: rerun python -m sample_traces.generator"
        )
    assert sorted(p.name for p in SYNTH.iterdir() if p.is_dir()) == sorted(SAMPLES)
    for name, sample in SAMPLES.items():
        assert (SYNTH / name / "EXPECTED.md").read_text() == expected_md(name, sample)


def _analysis(tmp_path: Path, name: str):
    store = RunStore.create_or_open(tmp_path / name)
    store.ingest(*discover([p for p in (SYNTH / name).iterdir() if p.name in ("timeline.json", "job.log")]))
    return analyze(store)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_gives_exactly_its_expected_findings(tmp_path: Path, name: str, validated: Validate) -> None:
    report = _analysis(tmp_path, name)
    validated(to_document(report))
    assert_round_trip(report)
    assert sorted(f.code for f in report.findings) == sorted(SAMPLES[name].expect)
    truth = SAMPLES[name].spec
    if truth is not None:
        steps = report.timelines[0]["steps"]
        assert abs(steps["count"] - truth.steps) <= (truth.steps if truth.truncate_at else 1)
    if name == "straggler_nocache":
        (f,) = report.findings
        assert f.ranks == (5,) and 25 <= f.evidence[0].metrics["offset_ms"] <= 35
        (src,) = f.evidence[0].sources  # rank 5's first tick among the last ready ones
        data = (SYNTH / name / "timeline.json").read_bytes()
        tick = json.loads(data[src.byte_offset : data.index(b"}", src.byte_offset) + 1])
        assert (tick["ph"], tick["name"]) == ("X", "5")
    if name == "slowdown_rank_late":
        f = next(f for f in report.findings if f.code == "timeline.slowdown")
        g = next(f for f in report.findings if f.code == "timeline.straggler")
        assert g.ranks == (2,) and g.labels["rank2_when"] == "from" and "from step 60 on" in g.title
        metrics = {k: v for e in f.evidence for k, v in e.metrics.items()}
        assert f.ranks == (2,) and metrics["onset_step"] == 60 and metrics["wait_ms"] == pytest.approx(25, abs=1)
        assert "(2026-11-22 07:10:42 UTC, " in f.summary  # the header's start time + the step's ts
    if name == "straggler_cached":
        (f,) = report.findings
        assert f.suggestions[0].env == {"HOROVOD_CACHE_CAPACITY": "0"} and f.ranks == ()
    if name == "over_threshold":
        (f,) = report.findings
        assert "allreduce.layer6.weight" in f.summary
        assert f.suggestions[0].env == {"HOROVOD_FUSION_THRESHOLD": "268435456"}
    if name == "fusion_off":
        (f,) = report.findings
        assert f.suggestions[0].env == {"HOROVOD_FUSION_THRESHOLD": "134217728"}
    if name == "nccl_socket_fallback":
        f = next(f for f in report.findings if f.code == "nccl.socket_fallback")
        assert f.severity.label == "critical" and f.impact is not None and f.impact.confidence == "low"
        assert f.suggestions[-1].env["NCCL_SOCKET_IFNAME"] == "ib0"
        assert any("libibverbs" in e.summary for e in f.evidence) and any("timeline" in e.summary for e in f.evidence)
    if name == "nccl_init_failure":
        stuck = next(f for f in report.findings if f.code == "nccl.init_incomplete")
        err = next(f for f in report.findings if f.code == "nccl.error")
        assert stuck.ranks == (9, 13) and stuck.hosts == ("gpu-node-001",)
        assert err.labels == {"class": "ib_completion_error", "root_src": "transport/net_ib.cc:1295"}
        assert err.summary.startswith("Root cause: ib_completion_error on gpu-node-001:20009 (rank 9) at ")
        assert err.ranks == (9,)
        assert "retry counter exceeded" in err.suggestions[0].action
    if name == "watchdog_behind":
        (f,) = report.findings
        assert f.ranks == (3,) and f.labels == {"verdict": "behind"}
    if name == "nccl_healthy_ib":
        procs = report.nccl["processes"]
        assert len(procs) == 16 and all(p["init_complete"] and p["network"] == "IB" for p in procs)
        assert {t for p in procs for t in p["transports"]} == {"NET/IB/GDRDMA", "P2P/IPC/read"}
    if name == "startup_and_init":
        skew = next(f for f in report.findings if f.code == "timeline.startup_skew")
        assert skew.ranks == (7,)


def test_healthy_glued_facts() -> None:
    p = parse_timeline(SYNTH / "healthy_glued" / "timeline.json")
    assert (p.info.layout, p.info.status, p.info.version.low) == ("glued", "closed", (0, 20, 1))
    assert p.info.cache.response_cache == "on" and p.issues == []


def test_legacy_line_per_event_facts() -> None:
    p = parse_timeline(SYNTH / "legacy_line_per_event" / "timeline.json")
    assert (p.info.layout, p.info.status, p.info.uptime_origin) == ("line_per_event", "unterminated", True)
    assert (p.info.version.low, p.info.version.high) == ((0, 16, 0), (0, 20, 0))
    assert [(i.code, i.severity) for i in p.issues] == [("timeline.unterminated", "info")]
    assert p.info.cache.response_cache == "off"


def test_truncated_glued_cites_the_file(tmp_path: Path) -> None:
    path = SYNTH / "truncated_glued" / "timeline.json"
    p = parse_timeline(path)
    assert p.info.status == "truncated"
    codes = {i.code: i.severity for i in p.issues}
    assert codes["timeline.truncated_record"] == "data_loss" and "timeline.unclosed_spans" in codes
    report = _analysis(tmp_path, "truncated_glued")
    assert all(s.file == str(path) for e in report.findings[0].evidence for s in e.sources)


@pytest.mark.parametrize("name", sorted(n for n, s in SAMPLES.items() if s.spec is not None))
def test_generated_records_have_horovods_shape(name: str, corpus: Path) -> None:
    """Key order and separators of every generated record kind equal a real 0.28.1 file's."""
    import re

    def shapes(text: str) -> set[str]:
        recs = re.findall(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)?\}", text)
        return {re.sub(r'"(?:[^"\\]|\\.)*"|\d+', "V", r) for r in recs}

    real = (corpus / "horovod-cpu" / "a2_baseline_mlp_np2_markcycles" / "timeline.json").read_text()
    gen = (SYNTH / name / "timeline.json").read_text()
    real_shapes = shapes(real)
    gen_shapes = shapes(gen)
    assert gen_shapes <= real_shapes, gen_shapes - real_shapes
