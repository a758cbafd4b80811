"""Per-rank profiler (Kineto) traces: the layouts they come in, their evidence sources, damage."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from parsers.inputs import InputKind, sniff
from parsers.ranktrace import names
from parsers.ranktrace.events import EventStream
from parsers.ranktrace.parser import RankTraceParser
from tests.rank_builders import gloo_rank, kineto_text


def parse(text: str | bytes, name: str = "rank.pt.trace.json") -> tuple[RankTraceParser, dict[str, Any]]:
    p = RankTraceParser(name)
    data = text.encode() if isinstance(text, str) else text
    tables = p.parse(io.BytesIO(data))
    return p, {k: v.to_pylist() for k, v in tables.items()}


@pytest.mark.parametrize("layout", ["kineto", "compact"])
def test_both_layouts_give_the_same_rows(layout: str) -> None:
    g = gloo_rank(1)
    text = (
        kineto_text(g["header"], g["events"])
        if layout == "kineto"
        else json.dumps({**g["header"], "traceEvents": g["events"]})
    )
    p, t = parse(text)
    assert p.info.rank == 1 and p.info.world_size == 4 and p.info.host == "node0" and p.info.source == "gloo"
    assert [s["step"] for s in t["rank_steps"]] == [5, 6, 7, 8, 9, 10]
    assert len(t["rank_collectives"]) == 12 and all(c["enqueue_us"] is not None for c in t["rank_collectives"])
    assert [c["order"] for c in t["rank_collectives"][:2]] == [0, 1]
    assert not p.sink.issues


def test_a_separator_inside_a_kernel_name_does_not_cut_the_event() -> None:
    """`}, {` inside a string (a template's lambdas) splits a piece that does not parse: it is joined
    with the next and read whole."""
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL<{lambda()#1}, {lambda()#2}>",
        "pid": 0,
        "tid": 7,
        "ts": 1_000_100,
        "dur": 500,
        "args": {"stream": 7, "correlation": 3},
    }
    launch = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": 1_000_050,
        "dur": 5,
        "args": {"correlation": 3},
    }
    step = {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#1",
        "pid": 1,
        "tid": 1,
        "ts": 1_000_000,
        "dur": 90,
    }
    p, t = parse(
        json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [step, launch, kernel]})
    )
    (c,) = t["rank_collectives"]
    assert c["op"] == "all_reduce" and c["step"] == 1 and c["enqueue_us"] == 1_000_050 and c["source"] == "nccl_kernel"
    assert not p.sink.issues


@pytest.mark.parametrize(
    ("kernel", "op"),
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "send_recv"),
        ("ncclDevKernel_Generic_4", "generic"),
        ("aten::add", None),
    ],
)
def test_nccl_kernel_names_of_every_release(kernel: str, op: str | None) -> None:
    assert names.kernel_op(kernel) == op


@pytest.mark.parametrize(
    ("raw", "op"),
    [
        ("nccl:all_reduce", "all_reduce"),
        ("c10d::allreduce_", "all_reduce"),
        ("c10d::_allgather_base_", "all_gather"),
        ("allreduce", "all_reduce"),
        ("gloo:broadcast", "broadcast"),
        ("c10d::alltoall_base_", "all_to_all"),
    ],
)
def test_one_spelling_per_collective(raw: str, op: str) -> None:
    assert names.op_name(raw) == op


def test_a_cut_trace_keeps_its_whole_steps_and_says_so() -> None:
    g = gloo_rank(0)
    text = kineto_text(g["header"], g["events"])
    cut = text[: int(len(text) * 0.7)]
    p, t = parse(cut)
    codes = {i.code for i in p.sink.issues}
    assert "trace.cut" in codes
    steps = [s["step"] for s in t["rank_steps"]]
    assert steps and steps == list(range(5, 5 + len(steps))) and len(steps) < 6
    assert all(c["step"] is None or c["step"] <= steps[-1] for c in t["rank_collectives"])


def test_a_cut_gzip_stream_is_read_up_to_its_damage(tmp_path: Path) -> None:
    from parsers.inputs import open_binary

    g = gloo_rank(0, steps=800)  # a cut gzip stream loses what it inflated in its last 64 KiB piece
    data = gzip.compress(kineto_text(g["header"], g["events"]).encode())
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    p = RankTraceParser(path)
    with open_binary(path) as f:
        t = p.parse(f)
    assert "trace.cut" in {i.code for i in p.sink.issues}
    assert 0 < t["rank_steps"].num_rows < 800


def test_the_rank_comes_from_the_file_name_when_the_trace_has_none() -> None:
    g = gloo_rank(3)
    del g["header"]["distributedInfo"]
    p, _ = parse(kineto_text(g["header"], g["events"]), "rank3.1795831457178876761.pt.trace.json")
    assert p.info.rank == 3 and p.info.rank_from == "file name"
    p, _ = parse(kineto_text(g["header"], g["events"]), "vm_13.1795831457178876761.pt.trace.json")
    assert p.info.rank is None and "trace.no_rank" in {i.code for i in p.sink.issues}


def test_a_worker_name_that_is_not_host_and_pid_is_not_read_as_one() -> None:
    """``worker0_step_12`` ends in ``_12`` but the events' process is another: no host 'worker0_step'."""
    g = gloo_rank(0)
    del g["header"]["host_name"]
    p, _ = parse(kineto_text(g["header"], g["events"]), "worker0_step_12.1694128201545.pt.trace.json")
    assert p.info.host is None and p.info.pid == 10
    p, _ = parse(kineto_text(g["header"], g["events"]), "gpu-node7_10.1694128201545.pt.trace.json")
    assert p.info.host == "gpu-node7" and p.info.pid == 10


def test_horovod_synchronize_is_the_outer_of_two_nested_optimizer_steps() -> None:
    events = []
    for s in range(4):
        t0 = 1_000_000 + s * 100_000
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{s}",
                "pid": 1,
                "tid": 1,
                "ts": t0,
                "dur": 99_000,
            },
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "Optimizer.step#SGD.step",
                "pid": 1,
                "tid": 1,
                "ts": t0 + 20_000,
                "dur": 70_000,
            },
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "Optimizer.step#SGD.step",
                "pid": 1,
                "tid": 1,
                "ts": t0 + 89_000,
                "dur": 900,
            },
        ]
    p, t = parse(json.dumps({"schemaVersion": 1, "traceEvents": events}), "rank1.1.pt.trace.json")
    assert p.info.source == "horovod_sync"
    assert [(c["op"], c["dur_us"], c["step"]) for c in t["rank_collectives"]] == [
        ("synchronize", 69_100, s) for s in range(4)
    ]


def test_a_trace_without_events_is_an_error_not_silence() -> None:
    p, t = parse('{"schemaVersion": 1, "deviceProperties": []}')
    assert "trace.no_events" in {i.code for i in p.sink.issues} and not t["rank_steps"]


def test_unreadable_events_are_counted() -> None:
    g = gloo_rank(0, steps=2)
    text = kineto_text(g["header"], g["events"]).replace(
        '"name": "gloo:all_reduce"', '"name": "gloo:all_reduce" oops', 1
    )
    p, t = parse(text)
    (issue,) = [i for i in p.sink.issues if i.code == "trace.unreadable_event"]
    assert issue.count == 1 and issue.byte_offset is not None and len(t["rank_collectives"]) == 3


def test_events_stream_in_chunks_and_keep_the_trailer(monkeypatch: pytest.MonkeyPatch) -> None:
    from parsers.ranktrace import events as ev

    monkeypatch.setattr(ev, "CHUNK", 97)  # separators and events straddle every chunk
    g = gloo_rank(2, steps=5)
    text = kineto_text({"schemaVersion": 1}, g["events"], {"distributedInfo": g["header"]["distributedInfo"]})
    stream = EventStream()
    got = list(stream.events(io.BytesIO(text.encode()), keep=lambda _: True))
    assert got == g["events"] and stream.trailer["distributedInfo"]["rank"] == 2 and stream.pieces == len(g["events"])


def test_sniffing_tells_a_rank_trace_from_other_json(tmp_path: Path) -> None:
    g = gloo_rank(0)
    cases = {
        "kineto.json": (kineto_text(g["header"], g["events"]), InputKind.RANK_TRACE),
        "compact.json": (
            json.dumps({"traceEvents": g["events"], "distributedInfo": {"rank": 0}}),
            InputKind.RANK_TRACE,
        ),
        "chrome.json": (json.dumps({"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 1}]}), InputKind.UNKNOWN),
        "other.json": ('{"a": 1}', InputKind.UNKNOWN),
    }
    for name, (text, kind) in cases.items():
        (tmp_path / name).write_text(text)
        assert sniff(tmp_path / name).kind is kind, name


@pytest.mark.parametrize(
    ("events", "header", "code"),
    [
        ([{"ph": "X", "name": "ProfilerStep#99999999999999999999999", "ts": 1, "dur": 5}], {}, "trace.bad_number"),
        ([{"ph": "X", "name": "ProfilerStep#1", "ts": 1, "dur": -5}], {}, "trace.bad_number"),
        ([{"ph": "X", "name": "gloo:all_reduce", "ts": 1e300, "dur": 1e300}], {}, "trace.bad_number"),
        (
            [{"ph": "X", "name": "ProfilerStep#1", "ts": 1, "dur": 5}],
            {"distributedInfo": {"rank": -5}},
            "trace.no_rank",
        ),
        (
            [
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "ncclKernel_AllReduce",
                    "ts": 1,
                    "dur": 2,
                    "args": {"correlation": 2**70, "In msg nelems": 2**70, "dtype": "Float", "Seq": 2**70},
                }
            ],
            {"distributedInfo": {"rank": 0}},
            None,
        ),
    ],
)
def test_hostile_numbers_are_skipped_and_counted_never_overflow(
    events: list[dict[str, Any]], header: dict[str, Any], code: str | None
) -> None:
    p, t = parse(
        json.dumps({"schemaVersion": 1, **header, "traceEvents": events}), "rank99999999999999999.1.pt.trace.json"
    )
    if code is not None:
        assert code in {i.code for i in p.sink.issues}
    assert all(c["bytes"] is None and c["seq"] is None for c in t["rank_collectives"])


def test_time_in_data_loading_is_split_over_the_steps_a_span_crosses() -> None:
    """A DataLoader span that starts in one step and ends in the next counts in each for its part."""
    steps = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{s}",
            "pid": 1,
            "tid": 1,
            "ts": 1000 * s,
            "dur": 1000,
        }
        for s in range(1, 4)
    ]
    loads = [
        {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#x", "pid": 1, "tid": 1, "ts": t, "dur": d}
        for t, d in ((1100, 100), (1900, 300), (3500, 200), (5000, 50))
    ]
    _, t = parse(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": steps + loads}))
    assert [(s["step"], s["data_us"]) for s in t["rank_steps"]] == [(1, 200), (2, 200), (3, 200)]
