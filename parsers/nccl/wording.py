"""The release range an NCCL INFO message's wording shows (``docs/formats/nccl-log.md`` §6): wording only some releases
print narrows the version of a process that never printed its version line (:func:`wording_range`), and a version's
text read as numbers (:func:`parse_version`)."""

from __future__ import annotations

import re
from functools import lru_cache

Version = tuple[int, int, int]
LATEST: Version = (2, 99, 99)

#: Wording only some releases print (``nccl-log.md`` §6): regex, first and last version that prints it.
WORDING: tuple[tuple[re.Pattern[str], Version, Version], ...] = tuple(
    (re.compile(p), lo, hi)
    for p, lo, hi in (
        (r"^NET : Using interface|^Using internal Network", (2, 3, 0), (2, 3, 99)),
        (r"^NET/Plugin : No plugin found \(libnccl-net\.so\)\.$", (2, 4, 0), (2, 4, 99)),
        (r"^NET/Plugin : No plugin found \([^)]*\), using internal implementation", (2, 5, 0), (2, 16, 99)),
        (r"^NET/Plugin : Plugin load \(|^NET/Plugin : No plugin found, using internal", (2, 17, 0), (2, 18, 99)),
        (r"^NET/Plugin : dlerror=", (2, 19, 0), (2, 21, 99)),
        (r"^NET/Plugin: Could not find: .*Using internal network plugin", (2, 22, 0), (2, 25, 99)),
        (r"^NET/Plugin: Could not find: .*Using internal net plugin", (2, 26, 0), LATEST),
        (r"^Bootstrap : Using \[\d+\]", (2, 4, 8), (2, 7, 99)),
        (r"^Bootstrap : Using [^\[]", (2, 8, 0), (2, 23, 99)),
        (r"^Bootstrap: Using", (2, 24, 0), LATEST),
        (r"^Ring \d+ : \d+", (2, 3, 0), (2, 6, 99)),
        (r"^cudaDriverVersion", (2, 13, 0), LATEST),
        (r" commId 0x", (2, 16, 0), LATEST),
        (r"- Init START", (2, 18, 3), LATEST),
        (r"via P2P/CUMEM", (2, 18, 1), LATEST),
        (r"^Using non-device net plugin version", (2, 19, 0), LATEST),
        (r"^Init timings: ", (2, 22, 0), (2, 22, 99)),
        (r"^Init timings - |^Bootstrap timings total", (2, 23, 0), LATEST),
        (r"^RAS client listening socket", (2, 24, 0), LATEST),
    )
)


_VERSION_NUMBERS = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version:
    """``(major, minor, patch)`` of a version text; whatever follows the numbers (a vendor build
    suffix such as ``2.4.7nvb1``, ``-1``, ``+cuda10.1``) is not part of it. (0, 0, 0) for no version."""
    m = _VERSION_NUMBERS.match(text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)


#: any of :data:`WORDING`: most messages match none, and one search says so
_ANY_WORDING = re.compile("|".join(f"(?:{rx.pattern})" for rx, _, _ in WORDING))


@lru_cache(maxsize=1 << 14)
def wording_range(msg: str) -> tuple[Version, Version] | None:
    """The release range whose wording ``msg`` is, if it is version-specific (the
    intersection when several clues match)."""
    if not _ANY_WORDING.search(msg):
        return None
    out: tuple[Version, Version] | None = None
    for rx, lo, hi in WORDING:
        if rx.search(msg):
            out = (lo, hi) if out is None else (max(out[0], lo), min(out[1], hi))
    return out
