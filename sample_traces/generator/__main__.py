"""Regenerate the committed synthetic samples: ``python -m sample_traces.generator [OUT_DIR]``.

Deterministic: the same code writes the same bytes (``tests/test_samples.py`` checks that
the committed files are exactly this program's output).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sample_traces.generator.timeline import TimelineSpec, write_timeline

SAMPLES: dict[str, TimelineSpec] = {
    "healthy_glued": TimelineSpec(ranks=8, tensors=16, steps=30, mark_cycles=True, seed=11),
    "legacy_line_per_event": TimelineSpec(ranks=4, tensors=8, steps=20, layout="line_per_event", cache=False,
                                          seed=12),
    "truncated_glued": TimelineSpec(ranks=4, tensors=8, steps=20, truncate_at=0.8, seed=13),
}


def generate(out: Path) -> list[Path]:
    written = []
    for name, spec in SAMPLES.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "timeline.json"
        write_timeline(path, spec)
        written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "synthetic"
    for p in generate(target):
        print(p)
