"""Dashboard responsiveness: every page callback on a 1 GB timeline's run vs on a small sample.

    python bench/dashboard.py [--mb 1024]

The app analyses a run once, when it is ingested (``dashboards.runs``); afterwards each page
callback renders from the cached analysis document. This measures, on the same >= 1 GB synthetic
timeline as bench/report.py (64 ranks, ticks on every negotiation): the one-time ingest + analysis,
the size of ``analysis.json``, and for each page the time a callback takes (render the page, then
serialise it to JSON as Dash does before sending it). The baseline is the same page of the small
real sample ``captured/straggler_nocache`` in the same process: a ratio near 1 means page time does
not grow with the run. Target (issue #5): no callback over ~1 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import big_timeline


def _callback_s(lib: object, run_id: str, page: str, repeat: int = 3) -> float:
    from plotly.utils import PlotlyJSONEncoder

    from dashboards.app import run_error
    from dashboards.pages import render_page

    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        lib._docs.clear()  # type: ignore[attr-defined]  # include reading analysis.json, as after a restart
        run_error(lib, run_id)  # type: ignore[arg-type]
        out = render_page(page, lib.document(run_id))  # type: ignore[attr-defined]
        json.dumps(out.to_plotly_json(), cls=PlotlyJSONEncoder)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1024, help="input size to generate (MB)")
    args = ap.parse_args()
    from dashboards.pages import PAGES
    from dashboards.runs import RunLibrary

    big = big_timeline(args.mb)
    small = Path(__file__).resolve().parents[1] / "sample_traces" / "captured" / "straggler_nocache" / "timeline.json"
    with tempfile.TemporaryDirectory() as tmp:
        lib = RunLibrary(tmp)
        t = time.perf_counter()
        big_id = lib.submit_paths([str(big)], wait=True)
        ingest_s = time.perf_counter() - t
        assert lib.job(big_id)["stage"] == "done", lib.job(big_id)  # type: ignore[index]
        small_id = lib.submit_paths([str(small)], wait=True)
        size = (Path(tmp) / "runs" / big_id / "analysis.json").stat().st_size
        print(
            f"input {big.name}: {big.stat().st_size / 1e6:.0f} MB; ingest + analysis once: {ingest_s:.1f} s; "
            f"analysis.json {size / 1e6:.2f} MB"
        )
        print(f"{'page':<10} {'1 GB run (s)':>13} {'small run (s)':>14} {'ratio':>7}")
        worst = 0.0
        for page, _ in PAGES:
            b = _callback_s(lib, big_id, page)
            s = _callback_s(lib, small_id, page)
            worst = max(worst, b)
            print(f"{page:<10} {b:>13.3f} {s:>14.3f} {b / s:>7.1f}")
        print(
            f"slowest callback on the 1 GB run: {worst:.3f} s (target <= ~1 s: {'met' if worst <= 1.0 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
