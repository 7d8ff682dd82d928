#!/usr/bin/env python3
"""Writes lib/vykhukhol/bounces/reading/patterns.json from a go-sisimai checkout (a development tool).

    python3 tools/sisimai/make_patterns.py /path/to/go-sisimai.git

It reads ``reason/why-*.go`` (each ``IncludedIn``'s ``index``, ``pairs`` and
``isnot`` lists) and ``lhost/via-*.go`` (each ``messagesof`` table) of the
checkout's HEAD with ``git show`` and writes them as one JSON table
(lib/vykhukhol/bounces/reading/patterns.py, which reads it, carries Sisimai's BSD
2-Clause notice and the commit). Phrases that match anything alone ("<",
"received", "unable to") and ``onhold`` are left out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ORDER = ["mailboxfull", "mesgtoobig", "exceedlimit", "suspend", "hasmoved", "norelaying",
         "authfailure", "userunknown", "filtered", "requireptr", "notcompliantrfc",
         "badreputation", "contenterror", "rejected", "hostunknown", "spamdetected", "speeding",
         "toomanyconn", "blocked",
         "virusdetected", "policyviolation", "systemerror", "networkerror", "systemfull",
         "notaccept", "expired", "failedstarttls", "securityerror", "mailererror"]
TOO_SHORT = {"<", "received", "unable to"}
OUT = Path(__file__).resolve().parents[2] / "lib" / "vykhukhol" / "bounces" / "reading" / "patterns.json"


def main(git_dir: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True,
                              text=True, check=True).stdout

    commit = git("rev-parse", "HEAD").strip()
    reasons: dict[str, dict[str, list]] = {}
    for path in git("ls-tree", "--name-only", "HEAD", "reason/").split():
        if "why-" not in path:
            continue
        found = re.search(r'IncludedIn\["(\w+)"\]\s*=\s*func\(argv1 string\) bool \{(.*?)\n\t\}',
                          git("show", f"HEAD:{path}"), re.S)
        if not found:
            continue
        lists = reasons.setdefault(found.group(1).lower(), {})
        for var in ("index", "pairs", "isnot"):
            body = re.search(var + r' := \[\](\[\])?string\{(.*?)\n\t\t\}', found.group(2), re.S) \
                or re.search(var + r' := \[\](\[\])?string\{(.*?)\}\n', found.group(2), re.S)
            if not body:
                continue
            if body.group(1):
                lists[var] = [re.findall(r'"((?:[^"\\]|\\.)*)"', x)
                              for x in re.findall(r'\{([^{}]*)\}', body.group(2))]
            else:
                lists[var] = re.findall(r'"((?:[^"\\]|\\.)*)"', body.group(2))
    formats: dict[str, list[str]] = {}
    for path in git("ls-tree", "--name-only", "HEAD", "lhost/").split():
        if not path.endswith(".go") or "_test" in path:
            continue
        table = re.search(r'messagesof\s*:?=\s*map\[string\]\[\]string\{(.*?)\n\t\t\}',
                          git("show", f"HEAD:{path}"), re.S)
        if not table:
            continue
        body = re.sub(r'//[^\n]*', '', table.group(1))
        for entry in re.finditer(r'"(\w+)"\s*:\s*\[\]string\{(.*?)\}', body, re.S):
            for phrase in re.findall(r'"((?:[^"\\]|\\.)*)"', entry.group(2)):
                phrase = phrase.lower()
                if phrase not in TOO_SHORT and phrase not in formats.setdefault(entry.group(1), []):
                    formats[entry.group(1)].append(phrase)
    formats.pop("onhold", None)
    OUT.write_text(render(commit, reasons, formats), encoding="utf-8")


def render(commit: str, reasons: dict, formats: dict) -> str:
    """The table patterns.py reads (the notice and the commit stay in its docstring)."""
    table = {"order": list(ORDER), "first": 19,  # ClassOrder[0] is the first 19
             **{var: {name: reasons[name][var] for name in ORDER
                      if reasons.get(name, {}).get(var)} for var in ("index", "pairs", "isnot")},
             "formats": {name: formats[name] for name in sorted(formats) if formats[name]}}
    print(f"patterns of go-sisimai {commit}: check the commit named in patterns.py's docstring")
    return json.dumps(table, ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    main(sys.argv[1])
