"""Hostile lines: content sniffing and the log parser must stay linear in the line's length.

    python bench/hostile_lines.py [--kb 48]

Each shape is one line without a record the parser could use, written at ``--kb`` KiB and at 8x
that; the script prints the seconds of ``sniff`` + ``JobLogParser`` on each (in this process, after
a warm-up: start-up is not what is measured) and their ratio. A linear reader takes about 8x as
long on the 8x line; the quadratic patterns this guards against took minutes (issue 26: 64 KiB of
``a`` sniffed in 44-70 s, a 48 KB line of host characters parsed in 21 s).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from parsers.inputs import sniff
from parsers.nccl.parser import JobLogParser

SHAPES = {
    "letters, no newline": lambda n: "a" * n,
    "host characters": lambda n: "h" * n + "\n",
    "record, long message": lambda n: "x:1:1 [0] NCCL INFO " + "x:1:1 [0] " * (n // 10) + "\n",
    "repeated ' NCCL INFO'": lambda n: " NCCL INFO" * (n // 10) + "\n",
    "spaces before a marker": lambda n: " " * n + "NCCL INFO x\n",
    "group tags before a heartbeat": lambda n: "[PG 0 Rank 1] " * (n // 14) + "Heartbeat monitor timed out!\n",
    "elastic field, spaces": lambda n: "Failures:\n[0]:\n  host      : a" + " " * n + "b\n",
    "WARN, long message": lambda n: "x:1:1 [0] misc/socket.cc:1 NCCL WARN " + "y" * n + "\n",
    "launcher prefixes": lambda n: "[1,0]<stdout>:" * (n // 14) + "\n",
    "links that are almost automatic": lambda n: "[net.cc:1](http://net.cc:2/) <http://a|b> " * (n // 42) + "\n",
    "a rendezvous restated": lambda n: (
        "The server socket has failed to listen on any local network address. " * (n // 69)
        + "The client socket has failed to connect to any network address of "
        + "h:" * (n // 2)
        + "\n"
    ),
    "Horovod's texts restated": lambda n: "Horovod has been shut down" * (n // 26) + "Mismatched " * (n // 11) + "\n",
    "dotted words before a CUDA error": lambda n: "a." * (n // 2) + " CUDA error: x\n",
    "digits after a barrier's timeout": lambda n: (
        "Timed out initializing process group in store based barrier on rank: 1 " + "9" * n + "\n"
    ),
    "Gloo's locations without a message": lambda n: "[enforce fail at " + "gloo/" * (n // 5) + "x.cc:1] \n",
    "a long path before Gloo's": lambda n: "[" + "a" * n + " [gloo/" + "w-" * (n // 2) + ".cc:9] Read timeout\n",
    "a plugin's signature, parentheses": lambda n: (
        "x:1:1 [0] int f(" + "(" * (n // 2) + ")" * (n // 2) + "):1 NCCL WARN y\n"
    ),
    "signatures before markers": lambda n: "x:1:1 [0] int f(a, b):1 NCCL WARN " * (n // 34) + "\n",
    "a collector's JSON line": lambda n: '{"log":"' + "x:1:1 [0] NCCL INFO " * (n // 20) + '\\n"}\n',
    "JSON openings, never closed": lambda n: '{"' * (n // 2) + "\n",
    "a crash's backtrace": lambda n: (
        "[h:1] *** Process received signal ***\n" + "[h:1] Signal: " * (n // 15) + "\n 1 " + "libnccl" * (n // 7) + "\n"
    ),
}


def seconds(text: str) -> float:
    data = text.encode()
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        t = time.perf_counter()
        sniff(Path(f.name))
        JobLogParser("hostile.log").parse(io.BytesIO(data))
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=int, default=48, help="length of the shorter line (KiB)")
    n = ap.parse_args().kb * 1024
    seconds(SHAPES["WARN, long message"](100))  # warm-up: imports, the WARN table
    for name, make in SHAPES.items():
        short, long = seconds(make(n)), seconds(make(8 * n))
        print(f"{name:24s} {short:7.3f} s  {long:7.3f} s at 8x  ratio {long / max(short, 1e-6):5.1f}")


if __name__ == "__main__":
    main()
