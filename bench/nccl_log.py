"""NCCL log benchmark: our parser and our ingest vs ``grep -c NCCL`` on the same >= 1 GB log.

    python bench/nccl_log.py [--mb 1024]

The log is mpirun-style interleaved stdout of 1024 ranks (128 hosts x 8 GPUs): every rank's
init block (bootstrap, network, channels, Init START/COMPLETE), then one COLL trace line per
rank per collective (``NCCL_DEBUG_SUBSYS=COLL``). Each method runs in a fresh process.
``parse`` = :class:`parsers.nccl.parser.JobLogParser` to Arrow tables; ``ingest`` = the whole
``hvd-analyze ingest`` path (parse, hash, Parquet store); ``grep -c`` only counts lines.
Target (issue #3): parse >= 50 MB/s with peak RSS < 300 MB.

``--real``: the log is made of the real logs of ``../shared/corpus/nccl*/`` instead (every release,
launcher and paste of the corpus), each whole, repeated until the size is reached (issue 45's
"mixed real lines"; written to ``bench/.cache``, never into the project).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import CACHE, big_nccl_log, entry, measure_all


def parse(path: Path) -> None:
    from parsers.nccl.parser import JobLogParser

    with open(path, "rb") as f:
        JobLogParser(path).parse(f)


def ingest(path: Path) -> None:
    from analyzer.store.discovery import discover
    from analyzer.store.run_store import RunStore

    with tempfile.TemporaryDirectory() as d:
        RunStore.create_or_open(Path(d) / "store").ingest(*discover([path]))


def grep_count(path: Path) -> None:
    subprocess.run(["grep", "-c", "NCCL", str(path)], check=True, capture_output=True)


def real_nccl_log(target_mb: int) -> Path:
    """About ``target_mb`` MB of the corpus's real NCCL logs, each whole, repeated in turn."""
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    logs = sorted(p for d in sorted(corpus.glob("nccl*")) for p in d.glob("*.log"))
    if not logs:
        sys.exit(f"--real needs the corpus's NCCL logs under {corpus}/nccl*/")
    path = CACHE / f"nccl_real_{target_mb}mb.log"
    if not path.exists():
        CACHE.mkdir(exist_ok=True)
        texts = [p.read_bytes().rstrip(b"\n") + b"\n" for p in logs]
        with open(path, "wb") as out:
            written, i = 0, 0
            while written < target_mb * 1_000_000:
                out.write(texts[i % len(texts)])
                written += len(texts[i % len(texts)])
                i += 1
    return path


METHODS = {"parse": parse, "ingest": ingest, "grep -c NCCL": grep_count}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="log size to generate (MB)")
    ap.add_argument("--real", action="store_true", help="repeat the corpus's real logs instead")
    args = ap.parse_args()
    path = real_nccl_log(args.mb) if args.real else big_nccl_log(args.mb)
    r = measure_all(__file__, list(METHODS), path)
    print(f"input: {r['parse']['input_mb']:.0f} MB")
    print(
        f"parse: {r['parse']['mb_per_s']:.0f} MB/s, peak RSS {r['parse']['peak_rss_mb']:.0f} MB  "
        "(target >= 50 MB/s, < 300 MB)"
    )
    print(f"parse / grep -c NCCL time: {r['parse']['seconds'] / r['grep -c NCCL']['seconds']:.1f}x")


if __name__ == "__main__":
    entry(METHODS, main)
