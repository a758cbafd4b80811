"""Which host and process each rank of a job ran on, from its NCCL logs.

Horovod's timeline names ranks only; NCCL prints, for every communicator a process joins,
``comm 0x... rank R nranks N ... Init COMPLETE`` under the process's ``host:pid`` header. The
communicator of all ``world`` ranks numbers them as Horovod does (Horovod's global communicator, or
PyTorch's default group), so its rows map a timeline rank to a host and pid. Smaller communicators
(hierarchical allreduce's local ones, splits) number ranks their own way and are not used. A rank
that two processes claim (two jobs' logs mixed) is left out rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analyzer.nccl.model import NcclModel, opt_int


@dataclass(frozen=True, slots=True)
class RankPlace:
    """Where a rank ran: its host, its process id and the log that says so."""

    host: str
    pid: int | None
    file: str

    def __str__(self) -> str:
        return self.host if self.pid is None else f"{self.host}, pid {self.pid}"


def rank_places(model: NcclModel, world: int) -> dict[int, RankPlace]:
    """Rank -> :class:`RankPlace` from the communicators of exactly ``world`` ranks."""
    cr: pd.DataFrame = model.tables.get("nccl_comm_ranks", pd.DataFrame())
    if cr.empty or world < 1:
        return {}
    rows = cr[(cr["nranks"] == world) & cr["host"].notna()]
    out: dict[int, RankPlace] = {}
    clash: set[int] = set()
    for r in rows.itertuples(index=False):
        rank = int(r.rank)
        place = RankPlace(str(r.host), opt_int(r.pid), str(r.file))
        seen = out.get(rank)
        if seen is not None and (seen.host, seen.pid) != (place.host, place.pid):
            clash.add(rank)
        out.setdefault(rank, place)
    return {rank: p for rank, p in out.items() if rank not in clash and 0 <= rank < world}
