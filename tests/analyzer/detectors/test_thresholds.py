"""Each threshold decides at its boundary: a detector fires when the run's value meets the
threshold and is silent just past it. The values come from the finding's own evidence on a
sample built for that detector, so a change to how a detector compares (``<`` for ``<=``,
another quantity) fails here. Models are built in memory from the parsed tables (no store)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from analyzer.config import AnalysisConfig, Thresholds
from analyzer.detectors.base import TimelineDetector
from analyzer.detectors.cycle_time import CycleTimeHigh
from analyzer.detectors.long_queue import LongQueue
from analyzer.detectors.over_threshold import TensorOverFusionThreshold
from analyzer.detectors.straggler import Straggler
from analyzer.findings import Finding
from analyzer.timeline.model import TimelineModel
from tests.analyzer.timeline.in_memory import MemoryEvidence, model_in_memory
from tests.conftest import ROOT

SYNTH = ROOT / "sample_traces" / "synthetic"
BELOW, ABOVE = 0.999, 1.001


def _model(sample: str) -> tuple[TimelineModel, pa.Table]:
    return model_in_memory(SYNTH / sample / "timeline.json")


def _run(detector: TimelineDetector, sample: str, group: str, **values: float) -> Finding | None:
    model, ticks = _model(sample)
    thresholds = replace(Thresholds(), **{group: replace(getattr(Thresholds(), group), **values)})
    return detector.check(model, MemoryEvidence(ticks, AnalysisConfig(thresholds=thresholds)))


def _metrics(finding: Finding | None) -> dict[str, float]:
    assert finding is not None
    return finding.evidence[0].metrics


def test_long_queue_boundary_on_the_step_share() -> None:
    model, _ = _model("long_queue")
    m = _metrics(_run(LongQueue(), "long_queue", "long_queue"))
    assert model.median_step_us
    share = m["queue_ms"] * 1e3 / model.median_step_us
    assert _run(LongQueue(), "long_queue", "long_queue", min_step_share=share * BELOW) is not None
    assert _run(LongQueue(), "long_queue", "long_queue", min_step_share=share * ABOVE) is None


def test_long_queue_boundary_on_the_communication_share() -> None:
    m = _metrics(_run(LongQueue(), "long_queue", "long_queue"))
    share = m["queue_ms"] / m["comm_ms"]
    assert _run(LongQueue(), "long_queue", "long_queue", min_comm_share=share * BELOW) is not None
    assert _run(LongQueue(), "long_queue", "long_queue", min_comm_share=share * ABOVE) is None


def test_cycle_time_boundary_on_the_cycle_and_its_regularity() -> None:
    m = _metrics(_run(CycleTimeHigh(), "cycle_time_high", "cycle"))
    cycle_us, regularity = m["cycle_ms"] * 1e3, m["regularity"]
    low = {"min_step_share": 0.0}
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_cycle_us=int(cycle_us * BELOW), **low) is not None
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_cycle_us=int(cycle_us * ABOVE) + 1, **low) is None
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_regularity=regularity) is not None
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_regularity=regularity + 1e-9) is None


def test_cycle_time_boundary_on_the_step_share() -> None:
    m = _metrics(_run(CycleTimeHigh(), "cycle_time_high", "cycle"))
    share = m["cycle_ms"] / m["step_ms"]
    base = {"min_cycle_us": 0}
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_step_share=share * BELOW, **base) is not None
    assert _run(CycleTimeHigh(), "cycle_time_high", "cycle", min_step_share=share * ABOVE, **base) is None


def test_over_threshold_boundary_on_how_often_the_tensor_runs_alone() -> None:
    m = _metrics(_run(TensorOverFusionThreshold(), "over_threshold", "over_threshold"))
    alone = m["alone_share"]
    det = TensorOverFusionThreshold()
    assert _run(det, "over_threshold", "over_threshold", min_alone_share=alone) is not None
    assert _run(det, "over_threshold", "over_threshold", min_alone_share=alone + 1e-9) is None


def test_straggler_boundary_on_the_lateness() -> None:
    """A rank late throughout is named while its median lateness beyond its peers meets the floor."""
    m = _metrics(_run(Straggler(), "straggler_nocache", "straggler"))
    late_us = m["offset_ms"] * 1e3
    low = {"min_late_share": 0.0, "noise_z": 0.0}
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_us=int(late_us * BELOW), **low) is not None
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_us=int(late_us * ABOVE), **low) is None


def test_straggler_boundary_on_how_many_steps_the_rank_is_late() -> None:
    m = _metrics(_run(Straggler(), "straggler_nocache", "straggler"))
    k = int(m["late_steps"])
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_steps=k) is not None
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_steps=k + 1) is None


def test_negotiation_wait_boundary_on_the_floor() -> None:
    """The floor is the 10th percentile of each step's shortest negotiation: fires when it meets the
    threshold (in us, or as a share of the median step), silent just past it."""
    from analyzer.detectors.negotiation_wait import NegotiationWait

    m = _metrics(_run(NegotiationWait(), "straggler_cached", "negotiation_wait"))
    floor_us, share = m["floor_p10_ms"] * 1e3, m["floor_p10_ms"] / m["step_ms"]
    low = {"min_floor_share": 0.0}
    det = NegotiationWait()
    assert _run(det, "straggler_cached", "negotiation_wait", min_floor_us=int(floor_us), **low) is not None
    assert _run(det, "straggler_cached", "negotiation_wait", min_floor_us=int(floor_us) + 1, **low) is None
    base = {"min_floor_us": 0}
    assert _run(det, "straggler_cached", "negotiation_wait", min_floor_share=share * BELOW, **base) is not None
    assert _run(det, "straggler_cached", "negotiation_wait", min_floor_share=share * ABOVE, **base) is None


@pytest.mark.parametrize(
    ("field_name", "value"),
    [
        ("min_tensors", lambda m: m["tensors_per_step"]),
        ("min_batch_ratio", lambda m: m["batches_per_step"] / m["tensors_per_step"]),
        ("min_singleton_share", lambda m: m["singleton_share"]),
    ],
)
def test_fusion_fragmented_boundary(field_name: str, value: object) -> None:
    """Each of the three conditions (enough tensors, batches nearly one per tensor, mostly single-tensor
    batches) fires at its boundary and is silent just past it."""
    from analyzer.detectors.fusion_fragmented import FusionFragmented

    det = FusionFragmented()
    m = _metrics(_run(det, "fusion_off", "fusion"))
    at = value(m)  # type: ignore[operator]
    if field_name == "min_tensors":
        assert _run(det, "fusion_off", "fusion", min_tensors=int(at)) is not None
        assert _run(det, "fusion_off", "fusion", min_tensors=int(at) + 1) is None
    else:
        assert _run(det, "fusion_off", "fusion", **{field_name: at * BELOW}) is not None
        assert _run(det, "fusion_off", "fusion", **{field_name: at * ABOVE}) is None


def test_startup_skew_boundary() -> None:
    from analyzer.detectors.startup_skew import StartupSkew

    det = StartupSkew()
    skew_us = _metrics(_run(det, "startup_and_init", "startup"))["skew_ms"] * 1e3
    assert _run(det, "startup_and_init", "startup", min_skew_us=int(round(skew_us))) is not None
    assert _run(det, "startup_and_init", "startup", min_skew_us=int(round(skew_us)) + 1) is None


def test_init_overhead_boundary() -> None:
    from analyzer.detectors.init_overhead import InitOverhead

    det = InitOverhead()
    finding = _run(det, "startup_and_init", "startup")
    assert finding is not None
    total_us = sum(e.metrics["total_ms"] for e in finding.evidence if "total_ms" in e.metrics) * 1e3
    assert _run(det, "startup_and_init", "startup", min_init_us=int(round(total_us))) is not None
    assert _run(det, "startup_and_init", "startup", min_init_us=int(round(total_us)) + 1) is None


def test_straggler_boundary_on_the_lateness_as_a_share_of_the_step() -> None:
    model, _ = _model("straggler_nocache")
    m = _metrics(_run(Straggler(), "straggler_nocache", "straggler"))
    assert model.median_step_us
    share = m["offset_ms"] * 1e3 / model.median_step_us
    low = {"min_late_us": 0, "noise_z": 0.0}
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_share=share * BELOW, **low) is not None
    assert _run(Straggler(), "straggler_nocache", "straggler", min_late_share=share * ABOVE, **low) is None


def test_straggler_severity_boundary() -> None:
    """Critical when the time lost per step is at least ``critical_share`` of the median step."""
    finding = _run(Straggler(), "straggler_nocache", "straggler")
    assert finding is not None and finding.impact is not None
    share = finding.impact.fraction_of_step
    crit = _run(Straggler(), "straggler_nocache", "straggler", critical_share=share * BELOW)
    warn = _run(Straggler(), "straggler_nocache", "straggler", critical_share=share * ABOVE)
    assert crit is not None and crit.severity.label == "critical"
    assert warn is not None and warn.severity.label == "warning"


def test_slowdown_severity_and_late_rank_boundaries(tmp_path: Path) -> None:
    """Critical when the slow steps cost at least ``critical_share`` of the median step per steady step;
    a rank is named as the one that became late when it was last in at least ``min_last_share`` of the
    slow steps' negotiations. (The slowdown reads beyond its model: a store, not memory.)"""
    from analyzer.context import Context
    from analyzer.detectors.slowdown import StepSlowdown
    from analyzer.store import RunStore, discover

    store = RunStore.create_or_open(tmp_path / "store")
    store.ingest(*discover([SYNTH / "slowdown_rank_late"]))

    def run(**values: float) -> Finding:
        thresholds = replace(Thresholds(), slowdown=replace(Thresholds().slowdown, **values))
        (found,) = [f for f in StepSlowdown().detect(Context(store, AnalysisConfig(thresholds=thresholds)))]
        return found

    f = run()
    assert f.impact is not None and f.ranks
    share = f.impact.fraction_of_step
    assert run(critical_share=share * BELOW).severity.label == "critical"
    assert run(critical_share=share * ABOVE).severity.label == "warning"
    last = next(e.metrics["last_share"] for e in f.evidence if "last_share" in e.metrics)
    assert run(min_last_share=last).ranks == f.ranks
    assert run(min_last_share=last + 1e-9).ranks == ()


def test_init_overhead_boundary_on_a_slow_nccl_init() -> None:
    """The bootstrap advice (NCCL_DEBUG=INFO) comes when one NCCL initialisation took at least
    ``slow_nccl_init_us``."""
    from analyzer.detectors.init_overhead import InitOverhead

    det = InitOverhead()
    f = _run(det, "startup_and_init", "startup")
    assert f is not None
    (m,) = [e.metrics for e in f.evidence if e.summary.startswith("INIT_NCCL: 1 time")]
    longest_us = int(m["total_ms"] * 1e3)
    slow = _run(det, "startup_and_init", "startup", slow_nccl_init_us=longest_us)
    fine = _run(det, "startup_and_init", "startup", slow_nccl_init_us=longest_us + 1)
    assert slow is not None and [s.env for s in slow.suggestions] == [{"NCCL_DEBUG": "INFO"}]
    assert fine is not None and fine.suggestions == ()


def test_fusion_advice_boundary_on_a_small_threshold() -> None:
    """fusion_tiny (a real 1 KiB threshold): the batches bound it below 1,792 B. Below
    ``small_threshold`` the advice raises the threshold; at the boundary the threshold is not small,
    and without cycle markers the advice asks for them instead of guessing a cycle time."""
    from analyzer.detectors.fusion_fragmented import FusionFragmented

    path = SYNTH.parent / "captured" / "fusion_tiny" / "timeline.json"
    model, ticks = model_in_memory(path)
    upper = model.fusion_estimate.upper_bytes
    assert upper == 1792

    def advice(small: int) -> dict[str, str]:
        fusion = replace(Thresholds().fusion, small_threshold=small)
        evidence = MemoryEvidence(ticks, AnalysisConfig(thresholds=replace(Thresholds(), fusion=fusion)))
        f = FusionFragmented().check(model, evidence)
        assert f is not None
        return dict(f.suggestions[0].env)

    assert set(advice(upper + 1)) == {"HOROVOD_FUSION_THRESHOLD"}
    assert advice(upper) == {"HOROVOD_TIMELINE_MARK_CYCLES": "1"}


def test_negotiation_wait_reruns_as_many_steps_as_its_setting_says() -> None:
    from analyzer.detectors.negotiation_wait import NegotiationWait

    f = _run(NegotiationWait(), "straggler_cached", "negotiation_wait", rerun_steps=123)
    assert f is not None and "123 steps" in f.suggestions[0].action
