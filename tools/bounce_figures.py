#!/usr/bin/env python3
"""How the bounce reader reads collections of real bounces (a development tool).

    python3 tools/bounce_figures.py --corpus DIR [DIR ...] [--misses]

Each DIR is one collection, one message a file. Sisimai's set (a folder
with ``expected.csv`` and ``maildir/``, tests/support/corpora.py) is
labelled from Sisimai's own reading of each recipient, but where our own
table tools/bounce_labels/sisimai.csv reads the words otherwise; any other collection
by a table in tools/bounce_labels/ (``file,label,basis``: the file's path
inside the collection, what the message says of the address, and where the
label comes from), found by the file names it lists. A label is one of

- ``gone``: the address is dead (no such user or mailbox, no such domain or
  mail host, an account disabled or closed for good);
- ``other``: any other refusal or delay (mailbox full, policy, spam, a
  block list, too big, a relay refused, a temporary failure, a warning);
- ``none``: not a report of a failed delivery (an automatic reply, spam,
  a challenge), counted apart: it must never read as gone;
- ``skip``: a report that says nothing of why (held to nothing).

For each collection the table says how many dead addresses read as gone and
how many other refusals (and non-reports) read as gone, how many of those
only in doubt (they leave at a second letter: docs/design/bounces.md#bounces-doubt),
and whether some rule of the reader was written with that collection in
view ("shaped") or it is held out. docs/design/bounces.md#bounces-held-out
shows the figures.
Fetched collections are never committed: they lie beside the checkout or in
/tmp, wherever their folder is given.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
from vykhukhol.bounces.reading import classify as kinds  # noqa: E402
from vykhukhol.bounces.reading.reasons import CLASS_OF, Cause  # noqa: E402

LABELS = ROOT / "tools" / "bounce_labels"
SISIMAI_LABELS = LABELS / "sisimai.csv"  # ours, over Sisimai's own reason, where they differ
LABEL_NAMES = ("gone", "other", "none", "skip")
# Collections whose messages some rule of the reader was written against:
# their figures are development figures, not a prediction. Sisimai's shaped
# every table; the others were measured held out first, then a miss each
# showed was fixed in general terms (docs/design/bounces.md#bounces-held-out).
SHAPED = {"sisimai", "bounceparser", "flufl_bounce", "bounce_email", "php_bounce_handler",
          "email_bounce_parser", "emailengine", "phpmailer_bmh", "mimekit", "bounce_parser_java",
          "dada_mail", "mailbouncedetector"}
OTHER_CLASSES = {Cause.SOFT.value, Cause.SENDER.value, Cause.DELAY.value}


def read_table(path: Path) -> dict[str, tuple[str, str]]:
    """A labels table: the file's path -> (its label, where the label comes from)."""
    with open(path, newline="", encoding="utf-8") as table:
        rows = {row["file"]: (row["label"], row["basis"])
                for row in csv.DictReader(line for line in table if not line.startswith("#"))}
    bad = {name: label for name, (label, _) in rows.items() if label not in LABEL_NAMES}
    if bad:
        raise SystemExit(f"{path}: unknown labels {bad}")
    return rows


def sisimai_labels(folder: Path) -> dict[str, tuple[str, str]]:
    """Sisimai's set: gone where every recipient is a hard "gone" reason,
    other where every recipient is soft, sender refused or delay; the rest
    (mixed, complaints, automatic replies) is not counted here. Our own
    label (tools/bounce_labels/sisimai.csv) replaces Sisimai's class where
    the words say otherwise: a "user unknown" Sisimai calls filtered is gone."""
    classes: dict[str, set[str]] = {}
    with open(folder / "expected.csv", newline="", encoding="utf-8") as table:
        for row in csv.DictReader(table):
            if row["reason"] in ("delivered", "feedback", "vacation"):
                classes.setdefault(row["file"], set()).add("none")
                continue
            cause = CLASS_OF[row["reason"]]
            gone = cause is Cause.GONE and row["hard_bounce"] == "true"
            classes.setdefault(row["file"], set()).add(
                "gone" if gone else "other")
    labels = {}
    for name, found in classes.items():
        label = next(iter(found)) if len(found) == 1 else "skip"
        labels["maildir/" + name] = (label, "Sisimai's reason " + "/".join(sorted(found)))
    return labels | {name: (label, "by hand: " + basis)
                     for name, (label, basis) in read_table(SISIMAI_LABELS).items()}


def table_labels(folder: Path) -> tuple[str, dict[str, tuple[str, str]]]:
    """The labels table of tools/bounce_labels/ whose files lie in ``folder``."""
    best: tuple[int, str, dict[str, tuple[str, str]]] = (0, "", {})
    for path in sorted(LABELS.glob("*.csv")):
        if path == SISIMAI_LABELS:
            continue
        rows = read_table(path)
        present = sum((folder / name).is_file() for name in rows)
        if present > best[0]:
            best = (present, path.stem, rows)
    if not best[0]:
        raise SystemExit(f"{folder}: no table in {LABELS} names its files")
    return best[1], best[2]


# A report's text with no header of its own (email-bounce-parser's fixtures
# are the bodies of reports) is read inside the headers a mail system's
# report of a failure would carry.
_HEADER = re.compile(rb"\s*(?:>?From |[A-Za-z][A-Za-z0-9-]*:)")
_ENVELOPE = (b"From: Mail Delivery System <MAILER-DAEMON@mx.example.net>\n"
             b"To: list-bounces@example.org\n"
             b"Subject: Undelivered Mail Returned to Sender\n"
             b"MIME-Version: 1.0\n"
             b"Content-Type: text/plain; charset=utf-8\n\n")


def message(path: Path) -> bytes:
    """The message in ``path``: as it is, or inside a report's headers when it has none."""
    raw = path.read_bytes()
    return raw if _HEADER.match(raw) else _ENVELOPE + raw


def read_as(verdict: kinds.Verdict) -> str:
    return verdict.cause.value if verdict.cause else verdict.kind


def measure(folder: Path) -> tuple[str, dict[str, Counter], list[str]]:
    """(the collection's name, label -> what the reader read, the misses)."""
    if (folder / "expected.csv").is_file():
        name, labels = "sisimai", sisimai_labels(folder)
    else:
        name, labels = table_labels(folder)
    unlabelled = [str(path.relative_to(folder)) for path in sorted(folder.rglob("*"))
                  if path.is_file() and str(path.relative_to(folder)) not in labels
                  and path.name not in ("expected.csv", "LICENSE")
                  and not path.name.startswith("LICENSE")]
    if unlabelled and name != "sisimai":
        print(f"{name}: {len(unlabelled)} files without a label, not counted: "
              + ", ".join(unlabelled[:5]) + (" …" if len(unlabelled) > 5 else ""),
              file=sys.stderr)
    counts: dict[str, Counter] = {label: Counter() for label in LABEL_NAMES}
    misses = []
    for file, (label, basis) in sorted(labels.items()):
        path = folder / file
        if not path.is_file():
            print(f"{name}: {file} is labelled but absent", file=sys.stderr)
            continue
        verdict = kinds.classify(message(path), "+")
        got = read_as(verdict)
        counts[label][got] += 1
        if got == Cause.GONE.value and not any(
                r.sure for r in verdict.readings.values() if r.cause is Cause.GONE):
            counts[label]["in doubt"] += 1
        wrong = (label == "gone") != (got == Cause.GONE.value)
        if wrong and label != "skip":
            why = "; ".join(f"{r.reason} by {r.rule_text() or 'nothing'}"
                            for r in verdict.readings.values())
            misses.append(f"  {file}: labelled {label} ({basis}), read {got}"
                          + (f" ({why})" if why else ""))
    return name, counts, misses


def total(counts: Counter) -> int:
    """Messages counted (the "in doubt" tally is a part of "address gone")."""
    return sum(n for got, n in counts.items() if got != "in doubt")


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "—"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", nargs="+", type=Path, required=True, metavar="DIR")
    parser.add_argument("--misses", action="store_true", help="list every message read wrong")
    args = parser.parse_args(argv)
    rows, missed = [], []
    for folder in args.corpus:
        name, counts, misses = measure(folder)
        gone, other, none = counts["gone"], counts["other"], counts["none"]
        rows.append((name, "shaped" if name in SHAPED else "held out",
                     share(gone[Cause.GONE.value], total(gone)), str(gone["in doubt"]),
                     share(other[Cause.GONE.value], total(other)), str(other["in doubt"]),
                     share(none[Cause.GONE.value], total(none)),
                     str(total(counts["skip"]))))
        missed += [f"{name}:"] + misses if misses else []
    head = ("collection", "rules", "dead read as gone", "in doubt", "others read as gone",
            "in doubt", "not reports read as gone", "not counted")
    widths = [max(len(row[i]) for row in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if args.misses and missed:
        print("\n" + "\n".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
