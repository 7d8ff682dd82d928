"""The pieces of the subscriber's own page that are pure logic: a pause on a
subscriber line (what the sender and the due index read), which lines name
an address, and the name check."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vykhukhol.errors import BadInput
from vykhukhol.members import personal
from vykhukhol.sender import dueindex
from vykhukhol.services import subscribers as subs
from vykhukhol.services.rules import LETTER, REMIND, Rules, next_action
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

RULES = Rules((0, 86400), 3 * 86400, 2, False)


def _active(**kw) -> subs.Subscriber:
    moment = now() - timedelta(days=3)
    return subs.Subscriber("anna@example.org", "Anna", SubscriberState.ACTIVE, moment, moment, **kw)


def test_a_pause_rides_on_the_line_and_reads_back():
    until = now().replace(microsecond=0) + timedelta(days=5)
    sub = _active(extra=["kept by hand"]).paused(until)
    line = sub.to_line()
    assert line.endswith(f"\tkept by hand\tpaused={until.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    again = subs.parse_line(line)
    assert again.paused_until == until and again.extra[0] == "kept by hand"
    assert again.paused(None).extra == ["kept by hand"]
    assert subs.parse_line(line.replace("paused=2", "paused=x2")).paused_until is None


def test_a_pause_holds_letters_and_reminders_and_the_index_agrees():
    until = now().replace(microsecond=0) + timedelta(days=5)
    letter = _active()
    assert next_action(letter, RULES).due < now()
    held = next_action(letter.paused(until), RULES)
    assert (held.kind, held.due, held.number) == (LETTER, until, 1)
    new = subs.Subscriber("b@example.org", "", SubscriberState.NEW, now() - timedelta(days=9))
    assert next_action(new, RULES).kind == REMIND
    assert next_action(new.paused(until), RULES).due == until
    # A pause that is over changes nothing.
    assert next_action(letter.paused(now() - timedelta(days=30)), RULES) == next_action(letter, RULES)
    # The due index's quick reader leaves a paused line to parse_line, which reads the pause.
    line = letter.paused(until).to_line()
    assert dueindex.quick_due(line, RULES) is False
    assert dueindex.classify(subs.parse_line(line), RULES) == (dueindex.SEND, until.timestamp())
    assert dueindex.quick_due(letter.to_line(), RULES) == dueindex.classify(letter, RULES)


@pytest.mark.parametrize(("line", "names"), [
    ("sent to anna@example.org", True),
    ("sent to ANNA@Example.ORG.", True),
    ("anna@example.org\tAnna", True),
    ("<anna@example.org>", True),
    ("sent to jimanna@example.org", False),
    ("sent to anna@example.org.uk", False),
    ("sent to anna@example.organic", False),
    ("sent to x.anna@example.org", False),
])
def test_a_line_names_the_address_only_as_a_whole(line, names):
    assert bool(personal._pattern("anna@example.org").search(line)) is names


def test_a_name_with_control_characters_is_refused_not_changed():
    assert personal.check_name("  Anna   Petrova ") == "Anna Petrova"
    for bad in ("Anna\nPetrova", "Anna\tP", "A\x00", "A\x1b[31m"):
        with pytest.raises(BadInput):
            personal.check_name(bad)
    with pytest.raises(BadInput):
        personal.check_name("x" * 101)


def test_a_pause_must_be_ahead_and_not_too_far():
    moment = now()
    with pytest.raises(BadInput):
        personal.check_pause(moment - timedelta(seconds=1), moment)
    with pytest.raises(BadInput):
        personal.check_pause(moment + timedelta(days=400), moment)
    assert personal.check_pause(moment + timedelta(days=1), moment) == moment + timedelta(days=1)
