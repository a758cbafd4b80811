"""Declared schemas of every table hvd-analyze produces: the single source of truth.

Each table is a list of :class:`Column` specs (name, Arrow type, nullability, unit and a
one-line meaning). Parsers build Arrow tables with :func:`arrow_schema`, the store checks
every table it writes and reads with :func:`validate`, and ``docs/schema.md`` is generated
from this module (``python -m parsers.schema > docs/schema.md``; a test keeps it current).

Times are integer microseconds on the trace's own clock (``*_us``); byte offsets point
into the (decompressed) input file so that evidence can cite a position.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pyarrow as pa

from parsers.columns import INPUT as _INPUT
from parsers.columns import STR_DICT, TableSpec
from parsers.columns import Column as Column
from parsers.columns import col as _c
from parsers.errors import SchemaError
from parsers.schema_ranks import RANK_TABLES

#: Bump when a table changes incompatibly; the store refuses versions it cannot read.
SCHEMA_VERSION = 3

TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "spans",
            "Horovod timeline B/E pairs, one row per span (unclosed spans kept with closed=false).",
            (
                _INPUT,
                _c("span_id", pa.int64(), "sequence number of the span's B record in the file"),
                _c("pid", pa.int32(), "timeline pid (= tensor index, not a rank)"),
                _c("tensor", STR_DICT, "tensor name from the pid's process_name metadata", null=True),
                _c("name", STR_DICT, "span name, e.g. NEGOTIATE_ALLREDUCE, ALLREDUCE, QUEUE"),
                _c("kind", STR_DICT, "negotiate | op | activity"),
                _c("depth", pa.int16(), "nesting depth on the pid's stack (0 = top level)"),
                _c("start_us", pa.int64(), "B timestamp", unit="us"),
                _c("end_us", pa.int64(), "E timestamp (null if the E never came)", null=True, unit="us"),
                _c("dur_us", pa.int64(), "end_us - start_us", null=True, unit="us"),
                _c("closed", pa.bool_(), "false when the file ended before the span's E"),
                _c("parent_id", pa.int64(), "span_id of the enclosing span", null=True),
                _c("op_id", pa.int64(), "span_id of the enclosing top-level op (self for ops)", null=True),
                _c("dtype", STR_DICT, "dtype from the op's E args", null=True),
                _c("shape", pa.string(), "shape from the op's E args, e.g. [172, 4096]", null=True),
                _c("numel", pa.int64(), "number of elements of shape", null=True),
                _c("bytes", pa.int64(), "numel x dtype size", null=True, unit="bytes"),
                _c("start_offset", pa.int64(), "byte offset of the B record", unit="bytes"),
                _c("end_offset", pa.int64(), "byte offset of the E record", null=True, unit="bytes"),
            ),
        ),
        TableSpec(
            "ticks",
            "Per-rank 'ready' X events inside NEGOTIATE_* spans (the only per-rank data in a timeline).",
            (
                _INPUT,
                _c("pid", pa.int32(), "timeline pid (tensor index)"),
                _c("tensor", STR_DICT, "tensor name", null=True),
                _c("negotiation_id", pa.int64(), "span_id of the enclosing NEGOTIATE_* span", null=True),
                _c("rank", pa.int32(), "rank that became ready (process-set relative from 0.23)"),
                _c("ts_us", pa.int64(), "time rank 0 processed the rank's request", unit="us"),
                _c("order", pa.int32(), "0-based position of the tick within its negotiation"),
                _c("offset", pa.int64(), "byte offset of the X record", unit="bytes"),
            ),
        ),
        TableSpec(
            "markers",
            "Global instant events (CYCLE_START with HOROVOD_TIMELINE_MARK_CYCLES=1).",
            (
                _INPUT,
                _c("name", STR_DICT, "marker name"),
                _c("ts_us", pa.int64(), "marker timestamp", unit="us"),
                _c("offset", pa.int64(), "byte offset of the record", unit="bytes"),
            ),
        ),
        TableSpec(
            "tensors",
            "One row per timeline pid: the tensor it stands for and what was done with it.",
            (
                _INPUT,
                _c("pid", pa.int32(), "timeline pid"),
                _c("tensor", pa.string(), "tensor name (null if the metadata record was lost)", null=True),
                _c("op_type", STR_DICT, "most frequent top-level op (ALLREDUCE, BROADCAST, ...)", null=True),
                _c("negotiations", pa.int64(), "number of NEGOTIATE_* spans"),
                _c("ticked_negotiations", pa.int64(), "NEGOTIATE_* spans that carry rank ticks"),
                _c("ops", pa.int64(), "number of top-level op spans"),
                _c("first_ts_us", pa.int64(), "first B timestamp", null=True, unit="us"),
            ),
        ),
        TableSpec(
            "parse_issues",
            "Problems found while parsing, aggregated per file and code (first position kept).",
            (
                _INPUT,
                _c("file", pa.string(), "input path as given"),
                _c("byte_offset", pa.int64(), "position of the first occurrence", null=True, unit="bytes"),
                _c("severity", STR_DICT, "info | data_loss | error"),
                _c("code", STR_DICT, "stable issue code, e.g. timeline.truncated_record"),
                _c("message", pa.string(), "what happened and what was done about it"),
                _c("count", pa.int64(), "number of occurrences"),
            ),
        ),
    )
}

_HOST = _c("host", pa.string(), "host name as NCCL printed it (null when the user stripped the prefix)", null=True)
_PID = _c("pid", pa.int64(), "process id (null when the user stripped the prefix)", null=True)
_LINE = _c("line", pa.int64(), "1-based line number in the input file")
_STRS = pa.list_(pa.string())

#: Tables of NCCL_DEBUG logs and job logs (parsers/nccl/parser.py).
LOG_TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (
        TableSpec(
            "nccl_processes",
            "One row per NCCL process (host, pid) of a log: what it said about itself at init.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("first_line", pa.int64(), "line of its first record"),
                _c("last_line", pa.int64(), "line of its last record"),
                _c(
                    "prefix",
                    pa.string(),
                    "launcher prefix in front of its first record (e.g. [1,3]<stdout>:)",
                    null=True,
                ),
                _c("cuda_devs", pa.list_(pa.int32()), "CUDA devices ([DEV], not ranks) it logged from"),
                _c("version", pa.string(), "NCCL version it printed (INFO or bare version line)", null=True),
                _c(
                    "version_source",
                    pa.string(),
                    "info | bare line | job's version line (the one version the file shows) | null",
                    null=True,
                ),
                _c(
                    "cuda",
                    pa.string(),
                    "CUDA version of the NCCL build (+cudaX.Y; hipX.Y, or hip alone, for RCCL's)",
                    null=True,
                ),
                _c("wording_min", pa.string(), "oldest release printing its version-specific wording", null=True),
                _c("wording_max", pa.string(), "newest release printing its version-specific wording", null=True),
                _c("network", pa.string(), "'Using network X' (IB, Socket, IBext_v8, AWS Libfabric, ...)", null=True),
                _c("bootstrap_interface", pa.string(), "bootstrap interface:address", null=True),
                _c("socket_interfaces", _STRS, "NET/Socket interfaces (if:address)"),
                _c("ib_hcas", _STRS, "NET/IB devices (name:port/IB|RoCE)"),
                _c("ib_no_device", pa.bool_(), "printed 'NET/IB : No device found'"),
                _c("verbs_missing", pa.bool_(), "printed 'Failed to open libibverbs.so'"),
                _c("plugin", pa.string(), "net plugin it loaded or probed (IBext, aws-ofi-nccl, ...)", null=True),
                _c("gdr_disabled", pa.bool_(), "printed 'GPU Direct RDMA Disabled'"),
                _c("records", pa.int64(), "NCCL records it wrote"),
                _c("warns", pa.int64(), "NCCL WARN records it wrote"),
            ),
        ),
        TableSpec(
            "nccl_connections",
            "Connection lines (Ring/Channel ... via ...), aggregated per process and transport.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("kind", pa.string(), "P2P | SHM | NET | COLLNET"),
                _c("detail", pa.string(), "e.g. P2P/IPC/read, NET/IB/GDRDMA, NET/Socket, NET/AWS Libfabric"),
                _c("net", pa.string(), "network name for NET/COLLNET", null=True),
                _c("gdr", pa.bool_(), "GPUDirect RDMA used (/GDRDMA)"),
                _c("connections", pa.int64(), "number of connection lines"),
                _c("first_line", pa.int64(), "line of the first one"),
            ),
        ),
        TableSpec(
            "nccl_comm_ranks",
            "Communicator init lines: one row per comm ... rank ... nranks line (Init START / COMPLETE).",
            (
                _INPUT,
                _HOST,
                _PID,
                _LINE,
                _c("api", pa.string(), "ncclCommInitRank, ncclCommSplit, ... (2.21+)", null=True),
                _c("comm", pa.string(), "communicator pointer (per process)"),
                _c("comm_id", pa.string(), "commId hash shared by every rank of the communicator (2.16+)", null=True),
                _c("rank", pa.int32(), "rank in the communicator"),
                _c("nranks", pa.int32(), "communicator size"),
                _c("cuda_dev", pa.int32(), "CUDA device", null=True),
                _c("bus_id", pa.string(), "PCI bus id (hex)", null=True),
                _c("phase", pa.string(), "START | COMPLETE"),
            ),
        ),
        TableSpec(
            "nccl_versions",
            "Every NCCL version line: INFO records (2.22+, or a debug file) and bare lines (rank 0 only up to "
            "2.21; attributed to a process when its launcher prefix or the file says whose it is).",
            (
                _INPUT,
                _HOST,
                _PID,
                _LINE,
                _c("version", pa.string(), "e.g. 2.18.3"),
                _c(
                    "cuda",
                    pa.string(),
                    "CUDA version of the build (+cudaX.Y; CUDA_MAJOR.CUDA_MINOR in TF builds; hipX.Y for RCCL, hip when its line does not say)",
                ),
                _c(
                    "source",
                    pa.string(),
                    "info | bare line | pytorch (a version PyTorch printed) | vllm (the version vLLM says it loaded) | "
                    "ras (the version NCCL's RAS client reports)",
                ),
            ),
        ),
        TableSpec(
            "nccl_env",
            "NCCL_* variables NCCL reported ('... set by environment to ...').",
            (_INPUT, _HOST, _PID, _LINE, _c("var", pa.string(), "variable"), _c("value", pa.string(), "value")),
        ),
        TableSpec(
            "nccl_errors",
            "NCCL WARN records (with their error chains) and chains without a WARN.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("tid", pa.int64(), "thread id", null=True),
                _LINE,
                _c(
                    "level",
                    pa.string(),
                    "WARN | chain (error chain seen without its WARN) | framework (PyTorch's report of a failed call)",
                ),
                _c("class", pa.string(), "error class (null: a benign warning)", null=True),
                _c("src", pa.string(), "FILE:LINE NCCL printed", null=True),
                _c("message", pa.string(), "the warning text"),
                _c("chain", _STRS, "error-chain frames that followed (FILE:LINE -> code)"),
                _c("result_code", pa.int32(), "ncclResult_t of the chain's last frame", null=True),
                _c("remediation", pa.string(), "what to do about this class"),
                _c(
                    "time",
                    pa.string(),
                    "timestamp printed with it (NCCL 2.26+ or the log collector), as written",
                    null=True,
                ),
                _c(
                    "consequence",
                    pa.bool_(),
                    "its text reports an earlier error (a result chain, a failed async job or proxy operation, "
                    "a framework's wrapper, shutdown noise after the process's own abort); null in a store "
                    "written before this column",
                    null=True,
                ),
                _c(
                    "unconfirmed",
                    pa.bool_(),
                    "raised while NCCL probed its networks (a plugin's or the verbs wrapper's WARN, a chain without "
                    "a WARN), and nothing after it shows whether the process failed or went on: the log ends "
                    "first; null in a store written before this column",
                    null=True,
                ),
            ),
        ),
        TableSpec(
            "nccl_collectives",
            "COLL trace lines (NCCL_DEBUG_SUBSYS=COLL) aggregated per process, communicator and op.",
            (
                _INPUT,
                _HOST,
                _PID,
                _c("comm", pa.string(), "communicator pointer"),
                _c("op", pa.string(), "AllReduce, Broadcast, ..."),
                _c("nranks", pa.int32(), "communicator size", null=True),
                _c("calls", pa.int64(), "number of lines"),
                _c("first_opcount", pa.int64(), "first opCount"),
                _c("last_opcount", pa.int64(), "last opCount (the rank with the lowest one stopped first)"),
                _c("last_line", pa.int64(), "line of the last one"),
            ),
        ),
        TableSpec(
            "watchdog_timeouts",
            "PyTorch ProcessGroupNCCL watchdog timeouts.",
            (
                _INPUT,
                _LINE,
                _c("rank", pa.int32(), "rank that timed out, within its process group", null=True),
                _c("global_rank", pa.int32(), "the job's rank that timed out, where the log tells", null=True),
                _c("seq", pa.int64(), "SeqNum of the collective (null: PyTorch 1.8-1.10 print none)", null=True),
                _c("op", pa.string(), "OpType"),
                _c("numel_in", pa.int64(), "NumelIn", null=True),
                _c("numel_out", pa.int64(), "NumelOut", null=True),
                _c("timeout_ms", pa.int64(), "Timeout(ms)", unit="ms"),
                _c("ran_ms", pa.int64(), "how long it ran before timing out", unit="ms"),
                _c("pg", pa.string(), "process group, from the watchdog's exception line", null=True),
                _c("last_enqueued", pa.int64(), "last enqueued NCCL work (SeqNum)", null=True),
                _c("last_completed", pa.int64(), "last completed NCCL work (SeqNum)", null=True),
            ),
        ),
        TableSpec(
            "worker_exits",
            "A worker's end as its launcher (horovodrun, mpirun, torchrun and torchelastic, srun and slurmstepd, "
            "DeepSpeed) or its own crash handler reported it.",
            (
                _INPUT,
                _LINE,
                _c("launcher", pa.string(), "the launcher, or the crash handler (ucx, open-mpi, python)"),
                _c(
                    "rank",
                    pa.int32(),
                    "the worker's rank (torchrun: local; torchelastic: the job's; srun: its first task; deepspeed: none)",
                    null=True,
                ),
                _c("host", pa.string(), "the node it ran on, when the launcher names it", null=True),
                _c("pid", pa.int64(), "its process id, when the launcher names it", null=True),
                _c("exit_code", pa.int32(), "exit code as reported (torchrun: -N for signal N)", null=True),
                _c("signal", pa.int32(), "the signal that ended it (named, or exit code 128+N / -N)", null=True),
                _c("text", pa.string(), "the launcher's line"),
            ),
        ),
        TableSpec(
            "horovod_stalls",
            "Horovod stall-inspector warnings: one row per missing rank per warning.",
            (
                _INPUT,
                _LINE,
                _c("rank", pa.int32(), "rank that had not submitted the tensors"),
                _c("shutdown", pa.bool_(), "marked '!': stalled past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"),
                _c("tensors", _STRS, "tensors it had not submitted (Horovod lists at most six)"),
                _c("more", pa.bool_(), "Horovod cut the list ('...')"),
            ),
        ),
        TableSpec(
            "autotune",
            "Horovod autotune log rows (HOROVOD_AUTOTUNE_LOG): fusion threshold in MB, cycle in ms, score.",
            (
                _INPUT,
                _LINE,
                _c("layout", pa.string(), "header layout, by first Horovod version writing it"),
                _c("hierarchical_allreduce", pa.bool_(), "hierarchical allreduce on"),
                _c("hierarchical_allgather", pa.bool_(), "hierarchical allgather on"),
                _c("torus_allreduce", pa.bool_(), "torus allreduce on (0.26+)", null=True),
                _c("cache_enabled", pa.bool_(), "response cache on (0.16.2+)", null=True),
                _c("cycle_time_ms", pa.float64(), "HOROVOD_CYCLE_TIME", unit="ms"),
                _c("fusion_threshold_mb", pa.float64(), "fusion threshold (MiB; the env var takes bytes)", unit="MiB"),
                _c("score", pa.float64(), "bytes per microsecond, higher is better"),
            ),
        ),
    )
}
TABLES.update(LOG_TABLES)
TABLES.update(RANK_TABLES)


def arrow_schema(table: str, keep: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of a declared table (``keep``: of those columns only, and ``input_id``)."""
    cols = [c for c in TABLES[table].columns if keep is None or c.name == "input_id" or c.name in keep]
    return pa.schema([pa.field(c.name, c.type, nullable=c.nullable) for c in cols])


def validate(data: pa.Table, table: str) -> pa.Table:
    """Check ``data`` against the declared schema of ``table`` and return it.

    Raises:
        SchemaError: naming the table, the column, the expected and the found type.
    """
    if table not in TABLES:
        raise SchemaError(f"unknown table {table!r}; declared tables: {', '.join(sorted(TABLES))}")
    expected = arrow_schema(table)
    found = {f.name: f for f in data.schema}
    for field in expected:
        got = found.get(field.name)
        if got is None:
            raise SchemaError(f"table {table!r}: column {field.name!r} is missing")
        if not got.type.equals(field.type):
            raise SchemaError(f"table {table!r}: column {field.name!r} should be {field.type}, found {got.type}")
        if not field.nullable and data.column(field.name).null_count:
            raise SchemaError(f"table {table!r}: column {field.name!r} must not contain nulls")
    extra = set(found) - {f.name for f in expected}
    if extra:
        raise SchemaError(f"table {table!r}: undeclared columns {sorted(extra)}")
    return data


def render_markdown() -> str:
    """The text of ``docs/schema.md``."""
    lines = [
        "# Store tables",
        "",
        "Generated from `parsers/schema.py` by `python -m parsers.schema > docs/schema.md`;",
        "`tests/test_docs.py` fails when this file and the code disagree.",
        "",
        f"Schema version: **{SCHEMA_VERSION}**. Each table is a hive-partitioned Parquet dataset under",
        "`STORE/tables/<table>/run=<run>/bucket=<name>/part-0.parquet`: one file per bucket (one big input,",
        "or several small ones such as per-rank logs), whose `input_id` column names the input of each row;",
        "`run` and `bucket` are the partition keys (`run` names the store's run, so that the tables of many",
        "stores read as one dataset).",
        "",
    ]
    for spec in TABLES.values():
        lines += [
            f"## `{spec.name}`",
            "",
            spec.doc,
            "",
            "| column | type | null | unit | meaning |",
            "|---|---|---|---|---|",
        ]
        for c in spec.columns:
            type_name = "string (dictionary)" if c.type.equals(STR_DICT) else str(c.type)
            lines.append(f"| `{c.name}` | {type_name} | {'yes' if c.nullable else 'no'} | {c.unit} | {c.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - exercised through tests/test_docs.py
    sys.stdout.write(render_markdown())
