"""The pieces of the subscriber's own page that are pure logic: a pause on a
subscriber line (what the sender and the due index read), which lines name
an address, and the name check."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vykhukhol.addresses import email_key
from vykhukhol.errors import BadInput
from vykhukhol.members import personal, traces
from vykhukhol.sender import dueindex
from vykhukhol.services.rules import LETTER, REMIND, Rules, next_action
from vykhukhol.services.subscriber_line import Subscriber, parse_line
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

RULES = Rules((0, 86400), 3 * 86400, 2, False)


def _active(**kw) -> Subscriber:
    moment = now() - timedelta(days=3)
    return Subscriber("anna@example.org", "Anna", SubscriberState.ACTIVE, moment, moment, **kw)


def test_a_pause_rides_on_the_line_and_reads_back():
    until = now().replace(microsecond=0) + timedelta(days=5)
    sub = _active(extra=["kept by hand"]).paused(until)
    line = sub.to_line()
    assert line.endswith(f"\tkept by hand\tpaused={until.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    again = parse_line(line)
    assert again.paused_until == until and again.extra[0] == "kept by hand"
    assert again.paused(None).extra == ["kept by hand"]
    assert parse_line(line.replace("paused=2", "paused=x2")).paused_until is None


def test_a_pause_holds_letters_and_reminders_and_the_index_agrees():
    until = now().replace(microsecond=0) + timedelta(days=5)
    letter = _active()
    assert next_action(letter, RULES).due < now()
    held = next_action(letter.paused(until), RULES)
    assert (held.kind, held.due, held.number) == (LETTER, until, 1)
    new = Subscriber("b@example.org", "", SubscriberState.NEW, now() - timedelta(days=9))
    assert next_action(new, RULES).kind == REMIND
    assert next_action(new.paused(until), RULES).due == until
    # A pause that is over changes nothing.
    assert next_action(letter.paused(now() - timedelta(days=30)), RULES) == next_action(letter, RULES)
    # The due index's quick reader leaves a paused line to parse_line, which reads the pause.
    line = letter.paused(until).to_line()
    assert dueindex.quick_due(line, RULES) is False
    assert dueindex.classify(parse_line(line), RULES) == (dueindex.SEND, until.timestamp())
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
    ("sent to o'anna@example.org", False),
    ("sent to x&anna@example.org", False),
    ("sent to =anna@example.org", False),
    ('To: "anna@example.org" <victim@example.org>', True),  # named, but not the recipient
])
def test_a_line_names_the_address_only_as_a_whole(line, names):
    named = {email_key(a) for a in traces.addresses_in(line)}
    assert ("anna@example.org" in named) is names


@pytest.mark.parametrize(("fmt", "line", "about"), [
    (traces.SOFT, "news|anna@example.org\t2026-12-01T00:00:00Z 1 l1", "anna@example.org"),
    (traces.SOFT, "news|o'anna@example.org\t2026-12-01T00:00:00Z 1 l1", "o'anna@example.org"),
    (traces.TEMPFAIL, "news|a|b@example.org|3\tx - 1", "a|b@example.org"),
    (traces.BOUNCE_LOG, "t\tid\tpermanent\tservice news\tbob@example.org\tpipe\t550 anna@example.org",
     "bob@example.org"),
    (traces.TEXT_LOG, "t\tlease\tinfo\tnews: anna@example.org refused (550): <bob@example.org>",
     "anna@example.org"),
])
def test_each_format_says_whom_a_line_is_about(fmt, line, about):
    assert fmt.subject(line) == about


def test_a_line_about_someone_else_keeps_its_place_with_the_hash():
    line = "t\tid\tpermanent\tservice news\tbob@example.org\tpipe\tforwarded to Anna@example.org"
    assert traces.BOUNCE_LOG.rewrite(line, lambda a: "hmac:x" if email_key(a) == "anna@example.org"
                                     else a).endswith("\tforwarded to hmac:x")
    assert traces.masked(traces.BOUNCE_LOG, line, "anna@example.org").count(traces.MASK) == 1
    journal = 'batch\tb1\t{"gone":["anna@example.org"],"log":["t\\tid\\tk\\t-\\tanna@example.org"]}'
    rewritten = traces.BOUNCE_JOURNAL.rewrite(journal, lambda a: "hmac:x")
    assert "anna" not in rewritten and rewritten.count("hmac:x") == 2, rewritten


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
