"""Fused batches from hand-made spans: which activity belongs to which op's batch, including
activities that name no op or a span that is not one (damaged or hand-edited files)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.timeline.batches import find_batches
from analyzer.timeline.model import typed_spans

NAN = float("nan")
#        span_id pid kind         name                  start end  op_id start_off end_off
ROWS = [
    (0, 1, "negotiate", "NEGOTIATE_ALLREDUCE", 0, 90, NAN, 10, 50),
    (1, 1, "op", "ALLREDUCE", 100, 200, NAN, 100, 500),
    (2, 2, "op", "ALLREDUCE", 101, 200, NAN, 110, 510),
    (3, 1, "activity", "MEMCPY_IN_FUSION_BUFFER", 102, 150, 1.0, 120, 300),
    (4, 2, "activity", "MEMCPY_IN_FUSION_BUFFER", 103, 150, 2.0, 130, 310),
    (5, 1, "op", "ALLREDUCE", 300, 350, NAN, 600, 700),  # after the batch began: a batch of its own
    (6, 1, "activity", "QUEUE", 301, 310, NAN, 610, 620),  # names no op
    (7, 2, "activity", "QUEUE", 302, 310, 0.0, 630, 640),  # names the negotiation, not an op
    (8, 2, "activity", "QUEUE", 303, 310, 99.0, 650, 660),  # names a span past every span
]


def _spans() -> pd.DataFrame:
    cols = ["span_id", "pid", "kind", "name", "start_us", "end_us", "op_id", "start_offset", "end_offset"]
    df = pd.DataFrame(ROWS, columns=cols)
    df["tensor"] = "t"
    df["dtype"] = "float32"
    df["closed"] = True
    df["parent_id"] = np.nan
    df["bytes"] = 4.0
    df = typed_spans(df)
    df["step"] = 0
    return df


def test_activities_join_their_op_s_batch_and_others_none() -> None:
    batch_of, ready_of, table = find_batches(_spans())
    assert batch_of.tolist() == [-1, 0, 0, 0, 0, 1, -1, -1, -1]
    assert table["tensors"].tolist() == [2, 1]
    # an op is ready when its pid's last negotiation before it ended; pid 2 has none
    assert ready_of[1] == 90.0 and np.isnan(ready_of[2]) and ready_of[5] == 90.0


def test_rows_in_any_order_and_any_index_give_the_same_batches() -> None:
    """The parser writes ops in file order, which the batching reads without sorting; rows in
    another order (hand-made tables, another writer) or under another index are sorted first."""
    spans = _spans()
    want_batch, want_ready, want_table = find_batches(spans)
    shuffled = spans.iloc[[8, 5, 2, 0, 7, 1, 4, 6, 3]]
    shuffled.index = [90, 10, 40, 70, 20, 80, 30, 60, 50]  # a frame filtered or concatenated
    batch_of, ready_of, table = find_batches(shuffled)
    pd.testing.assert_frame_equal(table, want_table)
    back = np.argsort([8, 5, 2, 0, 7, 1, 4, 6, 3])
    assert batch_of[back].tolist() == want_batch.tolist()
    np.testing.assert_array_equal(ready_of[back], want_ready)
