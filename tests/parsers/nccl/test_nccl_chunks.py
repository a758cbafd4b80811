"""A log parsed in chunks (any cut, merged in file order) gives exactly the single pass's tables."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pytest

from parsers.nccl.chunks import ChunkMerger, chunk_ranges, parse_chunk
from parsers.nccl.parser import JobLogParser
from sample_traces.generator.nccl import NcclLogSpec, write_nccl_log
from tests.parsers.nccl.test_nccl_log import (
    MERGED_DOUBLED_ORPHAN,
    WARN_CHAIN,
    WATCHDOG_STALL_AUTOTUNE,
)

# Every state that crosses lines: a WARN whose frames follow, interleaved threads, a chain
# probe followed by progress, merged and doubled lines, an orphan message, stall rank lists,
# a watchdog timeout completed by a later "detected by watchdog at work" line, an autotune
# CSV, bare version lines, COLL lines of the block regex and of the careful path, a cut end.
WORK = (
    "[rank1]:[E626 06:24:44.9 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception "
    "(either an error or timeout) detected by watchdog at work: 12, last enqueued NCCL work: 13, last completed "
    "NCCL work: 11.\n"
)
KITCHEN_SINK = (
    "NCCL version 2.7.8+cuda11.0\n"
    "h:1:5 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n"
    "h:1:5 [0] NCCL INFO NET/IB : No device found.\n"
    "h:1:5 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    "h:1:5 [0] NCCL INFO Using network Socket\n"
    "h:2:6 [1] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n" + WARN_CHAIN + "h:2:6 [1] NCCL INFO net.cc:55 -> 3\n"
    "h:2:6 [1] NCCL INFO Using network IB\n"
    "h:1:5 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId b000 commId 0xfa - Init COMPLETE\n"
    + MERGED_DOUBLED_ORPHAN
    + "".join(
        f"a:2:2 [7] NCCL INFO Broadcast: opCount {i:x} sendbuff 0x1 recvbuff 0x1 count 5 datatype 4 op 0 "
        "root 0 comm 0x9 [nranks=8] stream 0x3\n"
        for i in range(1, 6)
    )
    + MERGED_DOUBLED_ORPHAN  # again: issues of the same code in two chunks count up
    + WORK  # a completion with no timeout before it: matches nothing
    + "h:1:5 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
    + "".join(WATCHDOG_STALL_AUTOTUNE.splitlines(keepends=True)[:2])  # two watchdog timeouts
    + "h:2:6 [1] NCCL INFO Using network IB\n" * 3
    + WORK  # completes the timeout of rank 1, two chunks back when every line is a chunk
    + "".join(WATCHDOG_STALL_AUTOTUNE.splitlines(keepends=True)[2:])  # the stall warning, the autotune CSV
    + "h:1:5 [0] NCCL INFO Using network IB\n"
    # a framework's report of a failed call, its result code's name and a "Last error:" block on the next lines
    + "[trainer0|0]:torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - "
    "please report this issue to the NCCL developers, NCCL version 2.19.3\n"
    "[trainer0|0]:ncclInternalError: Internal check failed.\n"
    "[trainer0|0]:Last error:\n"
    "[trainer0|0]:Bootstrap : no socket interface found\n"
    # a watchdog timeout hard-wrapped mid-token over two lines
    "[rank3]:[E1206 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=12, OpType=ALLRE\n"
    "[rank3]:DUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n"
    # a framework's report hard-wrapped before NCCL's version: the next line completes it
    "[rank0]:RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL versi\n"
    "[rank0]:on 2.10.3\n"
    # torchelastic's summary: its root cause printed after another failure, an entry's fields over lines
    "Failures:\n[1]:\n  host      : node2\n  rank      : 9 (local_rank: 1)\n  exitcode  : 1 (pid: 2201)\n"
    "  traceback : Traceback (most recent call last):\n------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n[0]:\n  host      : node1\n  rank      : 3 (local_rank: 3)\n"
    "  exitcode  : -9 (pid: 12345)\n============================================================\n"
    # Open MPI's report of the first process to exit with a non-zero code, over six lines
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "the job to be terminated. The first process to do so was:\n\n  Process name: [[56171,1],6]\n  Exit code:    3\n"
    "h:1:5 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth"
)


def single(path: Path) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    p = JobLogParser(path)
    with open(path, "rb") as f:
        tables = p.parse(f)
    return {k: v.to_pylist() for k, v in tables.items()}, p.sink.issues, p.info


def chunked(path: Path, chunk_bytes: int, shuffle: random.Random | None = None) -> tuple[Any, ...]:
    ranges = chunk_ranges(path, path.stat().st_size, chunk_bytes)
    # each chunk goes through pickle, as it does between processes
    chunks = [(i, pickle.loads(pickle.dumps(parse_chunk(path, a, b)))) for i, (a, b) in enumerate(ranges)]
    if shuffle:
        shuffle.shuffle(chunks)  # they complete in any order
    merger = ChunkMerger(path, ranges)
    for i, c in chunks:
        merger.add(i, c)
    tables = merger.tables()
    return (
        {k: v.to_pylist() for k, v in tables.items()},
        merger.parser.sink.issues,
        merger.parser.info,
        len(ranges),
        merger.rereads,
    )


def assert_same(path: Path, chunk_bytes: int, shuffle: random.Random | None = None) -> tuple[int, int]:
    tables, issues, info, n, rereads = chunked(path, chunk_bytes, shuffle)
    want = single(path)
    assert tables.keys() == want[0].keys()
    for name in tables:
        assert tables[name] == want[0][name], (path.name, chunk_bytes, name)
    assert (issues, info) == want[1:]
    return n, rereads


def test_chunk_ranges_cut_at_lines_and_cover_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"ab\n" + b"x" * 50 + b"\ncd\nef")  # a line longer than a chunk, no final newline
    data = path.read_bytes()
    ranges = chunk_ranges(path, len(data), 4)
    assert ranges == [(0, 54), (54, 57), (57, 59)]  # each cut at the first line starting at or after k * 4
    assert b"".join(data[a:b] for a, b in ranges) == data
    assert chunk_ranges(path, len(data), 1 << 20) == [(0, len(data))]


@pytest.mark.parametrize("chunk_bytes", [1, 7, 100, 1000])
def test_every_cut_of_a_log_with_every_cross_line_state(tmp_path: Path, chunk_bytes: int) -> None:
    path = tmp_path / "job.log"
    path.write_text(KITCHEN_SINK)
    n, rereads = assert_same(path, chunk_bytes, random.Random(chunk_bytes))
    assert n > 1
    assert single(path)[0]["watchdog_timeouts"][0]["pg"] == "0 0(default_pg)"  # completed by a later line
    if chunk_bytes == 1:  # every line a chunk: the stall list, the CSV and the chain are read again
        assert rereads > 0 and rereads < n // 2


def test_generated_combined_logs(tmp_path: Path) -> None:
    """mpirun-style logs of 16 ranks: the healthy one merges without reading any chunk again
    (process facts, connections and COLL counters all continue across cuts); with faults,
    only a chunk whose first lines continue an error chain of the chunk before is re-read."""
    specs = [
        (NcclLogSpec(hosts=4, gpus_per_host=4, wording="2.4", network="Socket", collectives=40), 0),
        (
            NcclLogSpec(
                hosts=2,
                gpus_per_host=8,
                wording="2.26",
                link="RoCE",
                collectives=40,
                mismatch_host=1,
                stuck_ranks=(3,),
                completion_error_rank=5,
                watchdog_behind_rank=2,
            ),
            1,
        ),
    ]
    for i, (spec, max_rereads) in enumerate(specs):
        (path,) = write_nccl_log(tmp_path / f"job{i}.log", spec)
        for chunk_bytes in (997, 16 << 10):
            n, rereads = assert_same(path, chunk_bytes, random.Random(i))
            assert n > 3 and rereads <= max_rereads


def test_corpus_logs_cut_anywhere(corpus: Path) -> None:
    logs = sorted((corpus / "nccl").glob("*.log"))
    assert len(logs) > 60
    for path in logs:
        for chunk_bytes in (1, 333, 4096):
            assert_same(path, chunk_bytes)


def test_a_flood_of_errors_keeps_the_first_and_counts_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """64 ranks repeating one IB completion error in turn (no line repeats the one before it): past
    ERROR_LIMIT (2 M such lines took 7.5 GB) a WARN is counted, not kept, in one pass and in chunks alike."""
    import parsers.nccl.chunks as chunks_module
    import parsers.nccl.closing as closing
    import parsers.nccl.failures as failures

    for module in (failures, chunks_module, closing):
        monkeypatch.setattr(module, "ERROR_LIMIT", 50)
    lines = [
        f"node{p % 8}:{1000 + p}:{2000 + p} [{p % 8}] transport/net_ib.cc:1294 NCCL WARN NET/IB : Got completion "
        f"from peer 10.0.0.{p} with error 12, opcode 0, len 0, vendor err 129\n"
        for p in range(64)
    ]
    path = tmp_path / "flood.log"
    path.write_text("".join(lines[i % 64] for i in range(640)))
    tables, issues, _ = single(path)
    assert len(tables["nccl_errors"]) == 50 and tables["nccl_errors"][-1]["line"] == 50
    (flood,) = [i for i in issues if i.code == "log.errors_not_kept"]
    assert flood.count == 590 and "after the first 50 were counted" in flood.message
    for chunk_bytes in (3000, 20_000):
        assert_same(path, chunk_bytes, random.Random(chunk_bytes))


def test_a_log_past_its_row_limit_is_read_up_to_there_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood of distinct records the analysis keeps (communicator inits here) stops the reading once
    ROW_LIMIT rows are kept: what was read is analysed, the issue names the line, in one pass and in chunks."""
    import parsers.nccl.chunks as chunks_module
    import parsers.nccl.parser as parser_module

    for module in (parser_module, chunks_module):
        monkeypatch.setattr(module, "ROW_LIMIT", 100)
    monkeypatch.setattr(parser_module, "BLOCK", 4096)
    path = tmp_path / "inits.log"
    path.write_text(
        "".join(
            f"node{r % 4}:{100 + r}:{100 + r} [0] NCCL INFO comm 0x{r:x} rank {r % 8} nranks 8 cudaDev 0 busId 1000 "
            "commId 0x5 - Init COMPLETE\n"
            for r in range(2000)
        )
    )
    for tables, issues, info in (single(path), chunked(path, 20_000)[:3]):
        (stop,) = [i for i in issues if i.code == "log.row_limit"]
        assert "the lines after it are not read" in stop.message
        read = len(tables["nccl_comm_ranks"])
        assert 100 < read < 400 and info["records"] == read  # up to the block (or chunk) that passed it
        assert f"line {read}:" in stop.message


def test_an_autotune_header_makes_only_the_chunks_with_rows_be_read_again(tmp_path: Path) -> None:
    """A header near the log's start used to make every later chunk be read again in the coordinator (the
    whole log read twice, once on one core). Now only a chunk holding a line the CSV could read as its row
    is: NCCL records, plain output and lines of few separators read the same either way."""
    header = "hierarchical_allreduce,hierarchical_allgather,cycle_time_ms,tensor_fusion_threshold,score\n"
    body = "".join(
        f"h:1:5 [0] NCCL INFO Channel {i:02d}/0 : 0[0] -> 1[1] via P2P/IPC\nepoch {i}, loss 0.5\n" for i in range(40)
    )
    path = tmp_path / "job.log"
    path.write_text(header + "0,0,5,64,100.5\n" + body + "1,0,2.5,32,90\n" + body + "a,b,c,d,e\n" + body)
    n, rereads = assert_same(path, 200, random.Random(5))
    assert n > 30
    assert 1 <= rereads <= 3  # the chunks of "1,0,2.5,32,90" and "a,b,c,d,e" (and the header's, if cut there)
    assert single(path)[2]["autotune_rows"] == 2
