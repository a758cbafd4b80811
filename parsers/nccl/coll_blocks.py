"""Blocks of COLL trace lines: which blocks of a log are mostly them, and the regex that reads them there.

A long ``NCCL_DEBUG_SUBSYS=COLL`` log is nearly all COLL trace lines, one per rank per collective: the parser reads
such a block with one regex over it (:meth:`~parsers.nccl.parser.JobLogParser._coll_block`) instead of line by line.
"""

from __future__ import annotations

import re

#: a block is searched for COLL trace lines when it holds one per this many characters or fewer (a COLL
#: line is ~200 characters: when they are about half its lines)
COLL_SHARE = 400
#: the first bytes of a block counted first: a block with less than half :data:`COLL_SHARE`'s share of COLL lines
#: there is not counted whole (counting 4 MB for a needle of 9 bytes was 2% of reading a log of mixed lines)
COLL_PROBE = 256 << 10
#: A whole COLL trace line (``docs/formats/nccl-log.md`` §3), launcher prefix included (mpirun's
#: ``[1,3]<stdout>:`` tried first: a third less time than scanning for the host). The host starts where
#: a run of host characters starts, so that a long line of them is read in linear time.
COLL_LINE = re.compile(
    r"^(?P<outer>\[\d+,\d+\]<\w+>:|[^\n]*?)(?<![^\s:\[\]|])(?P<host>[^\s:\[\]|]+):(?P<pid>\d+):\d+ \[(?P<dev>\d+)\] NCCL INFO "
    r"(?P<op>\w+): opCount (?P<opc>[0-9a-f]+) sendbuff \S+ recvbuff \S+ count \d+ datatype \d+ op \d+ root -?\d+ "
    r"comm (?P<comm>0x[0-9a-f]+) \[nranks=(?P<n>\d+)\][^\n]*\n",
    re.MULTILINE,
)


def coll_dense(data: bytes) -> bool:
    """Whether a block is mostly COLL trace lines, read by :data:`COLL_LINE` over the block. The regex tries every
    line start, and every position of a line that is not one: it pays only where COLL trace lines are most of the
    block (a log of WARNs: 5x; 30 MB of the corpus's mixed lines, 1,008 COLL lines among 325 k: 2.3 s of 9)."""
    probe = min(len(data), COLL_PROBE)
    if data.count(b" opCount ", 0, probe) * COLL_SHARE * 2 <= probe:
        return False
    return data.count(b" opCount ") * COLL_SHARE > len(data)
