#!/usr/bin/env python3
"""Writes lib/vykhukhol/bounces/patterns.py from a go-sisimai checkout (a development tool).

    python3 tests/data/sisimai/make_patterns.py /path/to/go-sisimai.git

It reads ``reason/why-*.go`` (each ``IncludedIn``'s ``index``, ``pairs`` and
``isnot`` lists) and ``lhost/via-*.go`` (each ``messagesof`` table) of the
checkout's HEAD with ``git show`` and writes them as Python tuples, with
Sisimai's BSD 2-Clause notice. Phrases that match anything alone ("<",
"received", "unable to") and ``onhold`` are left out.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ORDER = ["mailboxfull", "mesgtoobig", "exceedlimit", "suspend", "hasmoved", "norelaying",
         "authfailure", "userunknown", "filtered", "requireptr", "notcompliantrfc",
         "badreputation", "contenterror", "rejected", "hostunknown", "spamdetected", "speeding",
         "toomanyconn", "blocked",
         "virusdetected", "policyviolation", "systemerror", "networkerror", "systemfull",
         "notaccept", "expired", "failedstarttls", "securityerror", "mailererror"]
TOO_SHORT = {"<", "received", "unable to"}
OUT = Path(__file__).resolve().parents[3] / "lib" / "vykhukhol" / "bounces" / "patterns.py"


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
    lit = lambda text: json.dumps(text, ensure_ascii=False)  # noqa: E731
    notice = Path(__file__).with_name("patterns-header.txt").read_text(encoding="utf-8")
    out = [notice.replace("{commit}", commit).rstrip("\n")]
    out.append("ORDER: tuple[str, ...] = (\n" + "\n".join(textwrap.wrap(
        ", ".join(lit(n) for n in ORDER), 94, initial_indent="    ",
        subsequent_indent="    ")) + ",\n)\n")
    out.append("FIRST = ORDER[:19]  # ClassOrder[0]\n")
    for var in ("index", "pairs", "isnot"):
        out.append(f"\n{var.upper()}: dict[str, tuple] = {{")
        for name in ORDER:
            values = reasons.get(name, {}).get(var)
            if not values:
                continue
            out.append(f"    {lit(name)}: (")
            for value in values:
                out.append("        (" + ", ".join(lit(x) for x in value) + "),"
                           if var == "pairs" else f"        {lit(value)},")
            out.append("    ),")
        out.append("}\n")
    out += ["# The phrases each mail system's own report uses (lhost/via-*.go, ``messagesof``),",
            "# tried when the patterns above and the status code said nothing (without the",
            '# three that match anything alone: "<", "received", "unable to").',
            "FORMATS: dict[str, tuple[str, ...]] = {"]
    for name in sorted(formats):
        if not formats[name]:
            continue
        out.append(f"    {lit(name)}: (")
        out += [f"        {lit(phrase)}," for phrase in formats[name]]
        out.append("    ),")
    out.append("}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main(sys.argv[1])
