"""When a capture's injected sleep happens: shared by the training scripts (``train.py``, ``ddp_train.py``),
which import it from their own folder (they run as scripts, not as the package)."""

from __future__ import annotations

import argparse


def sleeps(args: argparse.Namespace, rank: int, step: int) -> bool:
    """Whether ``rank`` sleeps in ``step``: the sleeping rank (or every rank with ``--sleep-all``), from
    ``--sleep-from``, before ``--sleep-to`` (-1: to the end), on every ``--sleep-every``-th step."""
    if not (args.sleep_all or rank == args.sleep_rank) or step < args.sleep_from:
        return False
    if 0 <= args.sleep_to <= step:
        return False
    return (step - args.sleep_from) % max(args.sleep_every, 1) == 0
