"""Property: every prefix cut of a real file parses into exactly what was complete before it.

For any cut ``data[:k]`` the parser raises nothing but ``InputError`` (never, in fact, for
a cut of a real timeline), keeps every span, tick and marker whose records ended before
``k``, and reports the cut as exactly one issue (``timeline.truncated_record`` as
data_loss when the cut is inside a record; ``timeline.unterminated`` otherwise: data_loss
for >=0.20.1 files, info for <=0.20.0 files, where a cut between records cannot be told
from a complete file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers.timeline import parse_timeline
from sample_traces.generator.timeline import TimelineSpec, write_timeline
from tests.conftest import CORPUS

CUT_CODES = {"timeline.truncated_record", "timeline.unterminated"}


def _record_ends(data: bytes, offsets: np.ndarray) -> np.ndarray:
    ends = []
    for off in offsets.astype(np.int64):
        j = data.index(b"}", int(off))
        if b'"args"' in data[int(off) : j]:
            j = data.index(b"}", j + 1)
        ends.append(j + 1)
    return np.array(ends, dtype=np.int64)


class Reference:
    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        full = parse_timeline(path)
        s = full.tables["spans"].to_pandas()
        s = s[s["closed"]]
        self.span_end = dict(zip(s["span_id"], _record_ends(self.data, s["end_offset"].to_numpy()), strict=True))
        t = full.tables["ticks"].to_pandas()
        self.tick_end = _record_ends(self.data, t["offset"].to_numpy())
        m = full.tables["markers"].to_pandas()
        self.marker_end = _record_ends(self.data, m["offset"].to_numpy())
        self.legacy = full.info.layout == "line_per_event"


def _sources(tmp: Path) -> list[Path]:
    real = [
        CORPUS / "horovod-public" / "alcf-workshop-timeline_cpu_n1.json",
        CORPUS / "horovod-cpu" / "h_per_rank_timeline_env_np2" / "timeline_rank0.json",
    ]
    files = [p for p in real if p.exists()]
    for layout in ("glued", "line_per_event"):
        p = tmp / f"gen_{layout}.json"
        write_timeline(p, TimelineSpec(ranks=3, tensors=4, steps=3, layout=layout, mark_cycles=True, seed=7))
        files.append(p)
    return files


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> list[Reference]:
    tmp = tmp_path_factory.mktemp("cuts")
    legacy_real = CORPUS / "horovod-public" / "andrewor14-tf-logs-72f32f9-horovod_timeline.json"
    files = _sources(tmp)
    if legacy_real.exists():  # a real <=0.20.0 file, shortened to keep the test fast
        data = legacy_real.read_bytes()
        cut = data.index(b"},\n", 60_000) + 3
        (tmp / "legacy_real.json").write_bytes(data[:cut])
        files.append(tmp / "legacy_real.json")
    return [Reference(p) for p in files]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 10), frac=st.floats(0, 1, exclude_max=True))  # strict prefixes
def test_every_prefix_cut(references: list[Reference], tmp_path: Path, which: int, frac: float) -> None:
    ref = references[which % len(references)]
    k = int(len(ref.data) * frac)
    path = tmp_path / "cut.json"
    path.write_bytes(ref.data[:k])
    parsed = parse_timeline(path)
    spans = parsed.tables["spans"].to_pandas()
    closed = set(spans.loc[spans["closed"], "span_id"])
    complete = {sid for sid, end in ref.span_end.items() if end <= k}
    assert complete <= closed <= set(ref.span_end)
    assert parsed.tables["ticks"].num_rows == int((ref.tick_end <= k).sum())
    assert parsed.tables["markers"].num_rows == int((ref.marker_end <= k).sum())
    if parsed.info.status == "empty":
        return
    cut_issues = [i for i in parsed.issues if i.code in CUT_CODES]
    assert len(cut_issues) == 1, parsed.issues
    tail = ref.data[:k].rstrip(b" \t\r\n,")
    if not tail.endswith(b"}"):
        assert cut_issues[0].code == "timeline.truncated_record"
    if cut_issues[0].code == "timeline.truncated_record" or not ref.legacy:
        assert cut_issues[0].severity == "data_loss"
