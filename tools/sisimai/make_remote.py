#!/usr/bin/env python3
"""Writes lib/vykhukhol/bounces/reading/remote.json from a go-sisimai checkout (a development tool).

    python3 tools/sisimai/make_remote.py /path/to/go-sisimai.git

It reads ``rhost/lib.go`` (which host names belong to which provider:
``RhostClass``) and each ``rhost/for-*.go`` (the provider's own phrasings,
one list per reason: ``messagesof``, where a row of codes and a phrase keeps
the phrase and its status code; and its table of error labels, ``errorcodes``: Facebook's
``RCP-P2``, GoDaddy's ``IB607``, Orange's ``LPN007_416`` number, Cox's
``CXBL``, i.ua's error number) of the checkout's HEAD with ``git show``, and
writes them as one JSON table that lib/vykhukhol/bounces/reading/remote.py reads
(it carries Sisimai's BSD 2-Clause notice and the commit).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "lib" / "vykhukhol" / "bounces" / "reading" / "remote.json"
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# Sisimai's own typos in reason names ("spandetected", "blokced").
FIXED = {"spandetected": "spamdetected", "blokced": "blocked"}


def main(git_dir: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True,
                              text=True, check=True).stdout

    commit = git("rev-parse", "HEAD").strip()
    lib = git("show", "HEAD:rhost/lib.go")
    hosts = {name.lower(): [h.lower() for h in STRING.findall(body)] for name, body in
             re.findall(r'"(\w+)":\s*\[\]string\{([^}]*)\}', lib.split("RhostClass", 1)[1])}
    providers = {}
    for path in git("ls-tree", "--name-only", "HEAD", "rhost/").split():
        if not path.rsplit("/", 1)[-1].startswith("for-"):
            continue
        # A comment is "//" with no quote after it (a URL inside a string keeps its own).
        source = re.sub(r'//[^"\n]*$', "", git("show", f"HEAD:{path}"), flags=re.M)
        name = re.search(r'ReturnedBy\["(\w+)"\]', source).group(1).lower()
        phrases: dict[str, list[str]] = {}
        found = re.search(r"messagesof := map\[string\](.*?)\n\t\t\}\n", source, re.S)
        if found:
            for reason, body in re.findall(r'\n\t\t\t"(\w+)":\s*(.*?)(?=\n\t\t\t"\w+":|\Z)',
                                           found.group(1), re.S):
                reason = FIXED.get(reason, reason)
                if "[][" not in body[:8]:  # a plain list: every string is a phrase
                    phrases.setdefault(reason, []).extend(
                        t.lower() for t in STRING.findall(body) if t.strip())
                    continue
                # Rows of codes and a phrase: the phrase counts only with its status code
                # (Google: reply, status, phrase; Microsoft: status or "5.7." and a range).
                for row in re.findall(r"\{([^{}]*)\}", body):
                    values = STRING.findall(row)
                    if not values or not values[-1].strip():
                        continue
                    status = next((v for v in values if re.fullmatch(r"\d\.\d+\.\d*", v)), "")
                    low, high = (values[1:3] if len(values) == 4 else ("", ""))
                    if status.endswith(".") and low:
                        status += f"{low}-{high or low}"
                    phrases.setdefault(reason, []).append([status, values[-1].lower()])
        codes = {}
        table = re.search(r"errorcodes := (?:map\[string\](?:\[\])?string|\[\]\[3\]string)\{(.*?)\n\t\t\}",
                          source, re.S)
        if table:
            for label, reason in re.findall(r'"([\w-]+)":\s*"(\w*)"', table.group(1)):
                codes[label] = FIXED.get(reason, reason)
            for row in re.findall(r"\{([^{}]*)\}", table.group(1)):
                first, last, reason = (STRING.findall(row) + ["", "", ""])[:3]
                if first.isdigit():
                    codes[f"{first}-{last or first}"] = FIXED.get(reason, reason)
            for reason, labels in re.findall(r'"(\w+)":\s*\[\]string\{(.*?)\}', table.group(1),
                                             re.S):
                for label in STRING.findall(labels):
                    codes[label] = FIXED.get(reason, reason)
        providers[name] = {"hosts": hosts.get(name, []), "phrases": phrases, "codes": codes}
    OUT.write_text(json.dumps({"commit": commit, "providers": providers}, indent=1,
                              ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
