#!/usr/bin/env python3
"""Writes the corpus's expected.csv from go-sisimai's tests (a development tool).

    python3 tools/sisimai/make_expected.py GO_SISIMAI_GIT [MAILDIR] > expected.csv

MAILDIR is the corpus's copy of set-of-emails' ``maildir/bsd``: by default
the ``maildir/`` of the Sisimai corpus beside the checkout, where the tests
find it (tests/support/corpora.py, docs/development/tests.md#dev-tests-corpora).

Each ``fact/*_test.go`` of a mail system (``*-lhost-*``: the sending
system's format; ``*-rhost-*``: the remote provider's own words) or of a
standard format (``90-rfc3464``, ``91-rfc3834``, ``95-arf``) holds a
``publiclist`` table: per sample file
``set-of-emails/maildir/bsd/<lhost-engine|rhost-engine|rfc3464|arf|rfc3834>-<label>.eml``,
one row per recipient with Sisimai's status, reply code, reason and
hard-bounce flag. Rows whose file is not in MAILDIR are
left out (and listed on stderr), as are the files no table names. A row a table
repeats whole (rfc3464 "01") is written once.
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # home of support/
from support import corpora  # noqa: E402

# go-sisimai names two engines differently from their sample files.
RENAMED = {"mailmarshalsmtp": "mailmarshal", "interscanmss": "trendmicro"}
# The standard formats' tables: their sample files carry no "lhost-"/"rhost-".
STANDARD = {"rfc3464", "rfc3834", "arf"}
TABLE = re.compile(r'publiclist := \[\]\[\]IsExpected\{(.*?)\n\t\}[;\s]*'
                   r'EngineTest\(t, "(\w+)", publiclist, true\)', re.S)
ROW = re.compile(r'\{"(\w+)",\s*(\d+),\s*"([^"]*)",\s*"([^"]*)",\s*"(\w*)",\s*(true|false),'
                 r'\s*"([^"]*)"\}')


def main(go_git: str, maildir: Path) -> None:
    def git(git_dir: str, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True,
                              text=True, check=True).stdout

    samples = {path.name for path in maildir.glob("*.eml")}
    if not samples:
        sys.exit(f"no .eml file in {maildir}")
    rows, missing, seen = [], set(), set()
    for path in git(go_git, "ls-tree", "--name-only", "HEAD", "fact/").split():
        kind = next((k for k in ("lhost", "rhost") if f"-{k}-" in path), "")
        table = TABLE.search(git(go_git, "show", f"HEAD:{path}"))
        if table is None:
            continue
        body, engine = table.groups()
        engine = RENAMED.get(engine.lower(), engine.lower())
        if not kind and engine not in STANDARD:
            continue
        prefix = f"{kind}-{engine}" if kind else engine
        for row in ROW.finditer(body):
            label, index, status, code, reason, hard, _ = row.groups()
            name = f"{prefix}-{label}.eml"
            if (name, index, status, code, reason, hard) in seen:
                continue
            seen.add((name, index, status, code, reason, hard))
            if name in samples:
                rows.append((name, index, status, code, reason, hard))
            else:
                missing.add(name)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(("file", "index", "status", "reply_code", "reason", "hard_bounce"))
    writer.writerows(rows)
    named = {row[0] for row in rows}
    print("no such sample:", sorted(missing), file=sys.stderr)
    print("no expectation:", sorted(s for s in samples if s not in named),
          file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        main(sys.argv[1], Path(sys.argv[2]))
    elif corpora.missing("sisimai", "Sisimai's set-of-emails"):
        sys.exit(corpora.missing("sisimai", "Sisimai's set-of-emails"))
    else:
        main(sys.argv[1], corpora.folder("sisimai") / "maildir")
