"""Tests that must run alone while the suite runs on two workers.

pyproject's ``addopts`` runs the suite in two processes (pytest-xdist, one a
core). A test that holds a bound in seconds, or loads the machine on
purpose, would measure its neighbour as well as itself, so it runs alone:
every other test holds a shared lock on one file from its set-up to its
tear-down, and a test named in ``ALONE`` holds it exclusively, so the other
worker waits between two of its tests. Both kinds pass a second lock, the
turnstile, on the way in; a test waiting to run alone holds it, so a stream
of shared holders cannot starve it.

With ``-n 0`` (one process) nothing runs beside anything and nothing is locked.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

# Node ids (a file, or a file and a test); a file's parametrised tests too.
ALONE = (
    # load on purpose
    "tests/security/test_slow_clients.py",
    "tests/faults/test_subscribe_load.py",
    # a bound in seconds on what the test measures
    "tests/security/test_template_budget.py",
    "tests/security/test_hostile_lines.py::test_newsletter_creation_reads_a_file_of_hostile_lines_in_linear_time",
    "tests/security/test_subscribe_abuse.py::test_serve_answers_a_new_address_before_the_mail_server_does",
    "tests/security/test_subscribe_abuse.py::test_the_cgi_script_writes_its_answer_before_mailing",
    "tests/integration/test_sender_processes.py::"
    "test_a_run_against_a_slow_server_ends_inside_time_limit_and_the_next_run_goes_on",
    "tests/integration/test_sender_processes.py::"
    "test_a_server_that_never_answers_data_costs_one_letter_in_doubt_not_the_run",
    "tests/integration/test_smtp_lanes.py::test_several_connections_start_no_letter_after_time_limit",
    "tests/unit/test_render.py::test_a_slow_template_stops_when_its_half_second_is_spent",
    "tests/unit/test_bounce_reasons.py::test_the_corpus_is_read_in_milliseconds_a_message",
)


def runs_alone(nodeid: str) -> bool:
    return any(nodeid == name or nodeid.startswith((f"{name}::", f"{name}["))
               for name in ALONE)


@contextlib.contextmanager
def lane(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the lane shared, or alone, until the block ends (closing a file
    releases its lock)."""
    with open(folder / "turnstile", "ab") as turnstile, open(folder / "lane", "ab") as held:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(held, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
