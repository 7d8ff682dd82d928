"""A hostile line in a subscriber file must not stall the CLI.

The attack: one subscriber line of 20,000 ``@`` made the fast reader of
newsletter creation (``services.confirmed``) backtrack once per ``@``
and again per ``@`` — 5.4 s, and 13 s of ``vykhukhol newsletter create`` on a
line of 30,000; the time grew with the square of the line. A hand edit, an FTP
upload or a bad export puts such a line in ``subscribers.txt``.

Replayed here through the real CLI (``vykhukhol newsletter create`` in a
subprocess) on a file holding a line of 200,000 ``@`` and its near relatives:
the command must finish within ``BOUND`` seconds and list exactly the valid
subscribers. The code before the fix needs about 7 minutes for the one line
(4.2 s at 20k, ×100 at 200k); the subprocess is stopped at ``GIVE_UP``.
"""

from __future__ import annotations

import subprocess
import time

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.services.subscriber_line import HEADER

T = "2026-11-01T10:00:00Z"
TAIL = f"\tName\tactive\t{T}\t{T}\t0\t-\t0\t-\t0\t-"  # every field after the address
AT = 200_000   # @ in the hostile lines
BOUND = 10.0   # seconds the whole command may take (it takes well under one)
GIVE_UP = 30.0  # seconds before the subprocess is stopped (the old code: minutes)

HOSTILE = [
    "@" * AT,                               # the line of the attack
    "@" * AT + "\t",                        # ... cut by a tab
    "a" + "@a" * (AT // 2),                 # @ between letters
    "x@y\t" + "@" * AT + "\tactive",        # a name of @, too few fields
    "@\t" * AT,                             # @ fields one after another
    "a@b" + TAIL[:-1] + "@" * AT + "\udcff",  # a good line up to a bad last field
]


def test_newsletter_creation_reads_a_file_of_hostile_lines_in_linear_time(site):
    site.service("news", enabled=False)
    path = svc.find_service(site.data, "news").subscribers_path
    good = [f"first@example.org{TAIL}", f"last@example.org{TAIL}"]
    text = "\n".join([HEADER, good[0], *HOSTILE, good[1]]) + "\n"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))

    began = time.monotonic()
    try:
        result = site.cli("newsletter", "create", "--services", "news", "--subject", "Hi",
                          "--body", "Hello", timeout=GIVE_UP)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"newsletter create still ran after {GIVE_UP:.0f}s") from None
    took = time.monotonic() - began
    assert took < BOUND, f"newsletter create took {took:.1f}s on hostile lines"

    job = result.stdout.strip()
    rows = [(row.email, row.name) for row in newsletters.read_rows(site.data.job(job, "list"))]
    assert rows == [("first@example.org", "Name"), ("last@example.org", "Name")]
    # The hostile lines stay in the file, untouched: malformed lines are kept.
    assert path.read_bytes() == text.encode("utf-8", "surrogateescape")

