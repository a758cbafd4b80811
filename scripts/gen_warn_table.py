"""Generate ``parsers/nccl/warn_formats.tsv``, the table the NCCL WARN classifier matches against.

The source is the reference catalogue of every WARN call site (and failure-reporting INFO line)
of NCCL 2.3-2.30 and the aws-ofi-nccl plugin, ``../shared/docs/nccl-warn-catalogue.tsv``, which
stays outside this repository. The table keeps what the classifier needs, one row per distinct
message: the format string as a regular expression, the releases that print it, the class, whether
NCCL carries on after it (benign), and whether it is a consequence of an earlier error (a result
chain, a job or proxy-service wrapper). Framework texts (PyTorch, Horovod) are read by
:mod:`parsers.nccl.joblog` instead.

Where this project classifies a message differently from the catalogue's suggestion, the row says
why (:data:`POLICY`); ``tests/parsers/nccl/test_warn_catalogue.py`` renders every catalogue row into a
log line, classifies it, and accepts a difference only when the table gives its reason.

Usage: ``python scripts/gen_warn_table.py [CATALOGUE] [--check]``.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT.parent / "shared" / "docs" / "nccl-warn-catalogue.tsv"
TABLE = ROOT / "parsers" / "nccl" / "warn_formats.tsv"
HEADER = ("pattern", "level", "first", "last", "class", "benign", "role", "source", "why")

#: a printf conversion: flags, width, precision, length, conversion
_CONVERSION = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcspn%])")
_NUMERIC = "diouxX"

#: Messages that are another error's consequence whatever their class (catalogue rule 1).
CONSEQUENCES = re.compile(
    r"^ncclAsyncJobComplete: |^\[Proxy Service %d\] Failed to execute operation |"
    r"^\[Service thread\] Error encountered progressing operation=%s, res=%d"
)

#: Where this project's class differs from the catalogue's suggestion, and why.
POLICY: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
    (
        re.compile(r"Connection closed by remote peer|Call to (?:recv|%s) |Call to %s %s failed|closed before magic"),
        "remote_process_exited",
        "socket_error",
        "a TCP connection its peer closed or reset is a socket_error here, as the experts of the real-log corpus "
        "class it; its remediation says the peer went away and that its log holds the cause",
    ),
    (
        re.compile(r"is neither AF_INET"),
        "config_error",
        "collective_mismatch",
        "a garbage address family is a connect handle another plugin or release wrote: the ranks disagree on "
        "their NCCL build or net plugin (the corpus expert's reading, NVIDIA/nccl#1267)",
    ),
)


#: Where this project reads a text as no failure though the catalogue marks it one, and why (the source's own words).
BENIGN_POLICY: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"Got async error event: %s|unknown event type \(%d\)"),
        "NCCL 2.23-2.28 print as 'async error event' only the HCA events their code lists as non-fatal (a comment "
        "says so; the fatal ones print 'async fatal event on QP/CQ'), and only log an event they do not list: "
        "hca_events.hca_news reads them as news, a port that went down judged by what followed",
    ),
)


_C_ESCAPE = re.compile(r"\\([\\\"'nt])")


def c_text(fmt: str) -> str:
    """A C string literal's text as printed: ``\\n`` a line break, ``\\"`` a quote."""
    return _C_ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), fmt)


def to_pattern(fmt: str) -> str:
    """The regular expression of a printf format string: literal text escaped, numbers as
    numbers, strings and the rest as a lazy run of anything (a message may embed spaces)."""
    out, pos = [], 0
    text = c_text(fmt).strip().split("\n")[0]  # the WARN record's own line
    for m in _CONVERSION.finditer(text):
        out.append(re.escape(text[pos : m.start()]))
        kind = m.group(1)
        out.append("%" if kind == "%" else r"-?(?:0x)?[0-9a-fA-F]+" if kind in _NUMERIC else r".*?")
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return "".join(out).replace(r"\ ", " ").strip()


def _level(notes: str) -> str:
    if notes.startswith("[INFO]"):
        return "INFO"
    return "WARN+INFO" if notes.startswith("[WARN ") else "WARN"


def table_row(r: dict[str, str]) -> tuple[str, ...] | None:
    """The table row of one catalogue row (None: a framework text, or no text to match)."""
    source, fmt = r["source_file"], r["format_string"]
    if source.startswith(("pytorch:", "horovod:")):
        return None
    pattern = to_pattern(fmt)
    if not pattern.replace(".*?", "").strip():
        return None
    cls, why = r["suggested_class"], ""
    for rx, was, now, reason in POLICY:
        if cls == was and rx.search(fmt):
            cls, why = now, reason
    role = "consequence" if not r["suggested_class"] or CONSEQUENCES.search(fmt) else "cause"
    benign = r["benign"] if r["benign"] in ("yes", "no") else "no"
    for rx, reason in BENIGN_POLICY:
        if benign == "no" and rx.search(fmt):
            benign, why = "yes", reason
    return (pattern, _level(r["notes"]), r["first_version"], r["last_version"], cls, benign, role, source, why)


def rows(catalogue: Path) -> list[tuple[str, ...]]:
    """The table: one row per text and verdict; a text printed by several files with one verdict
    lists them all, a text whose verdict depends on the file (``Call to read failed``) has a row
    per verdict, and the record header's FILE picks among them."""
    seen: dict[tuple[str, ...], list[str]] = {}
    with open(catalogue, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            row = table_row(r)
            if row is None:
                continue
            key = (row[0], *row[4:7], row[8])
            if key in seen:
                if row[7] not in seen[key][7].split(","):
                    seen[key][7] += f",{row[7]}"
            else:
                seen[key] = list(row)
    return sorted((tuple(r) for r in seen.values()), key=lambda row: (row[0], row[4], row[7]))


def render(table: list[tuple[str, ...]]) -> str:
    return "\n".join("\t".join(row) for row in [HEADER, *table]) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    catalogue = Path(args[0]) if args else CATALOGUE
    if not catalogue.is_file():
        print(f"gen_warn_table: no catalogue at {catalogue}; pass its path as the first argument", file=sys.stderr)
        return 2
    text = render(rows(catalogue))
    if check:
        if TABLE.read_text(encoding="utf-8") != text:
            print(f"{TABLE.relative_to(ROOT)} is out of date: run python scripts/gen_warn_table.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)} ({len(text.splitlines()) - 1} formats)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
