"""``vykhukhol cron`` read without the parser (docs/design/startup.md#startup).

A host runs ``vykhukhol [--data DIR] cron`` every minute, and building the
whole command line costs more than an idle run: the few spellings of that one
command are read here by hand. Every other command line is the parser's.
"""

from __future__ import annotations

import argparse

from vykhukhol.cli.site import cmd_cron


def cron_args(words: list[str]) -> argparse.Namespace | None:
    """``[--data DIR] cron`` read as the parser reads it, without building the
    parser: its forty-odd commands cost ~25 ms, and a host runs this one every
    minute. Any other spelling gives None: the parser reads it (a test holds
    the two to the same answer)."""
    if words == ["cron"]:
        data = None
    elif len(words) == 3 and words[0] == "--data" and words[2] == "cron" \
            and not words[1].startswith("-"):
        data = words[1]
    elif len(words) == 2 and words[0].startswith("--data=") and words[1] == "cron":
        data = words[0][len("--data="):]
    else:
        return None
    return argparse.Namespace(data=data, command="cron", func=cmd_cron)
