"""What is due for one subscriber of a series, and the clean-up rules.

Pure functions over a :class:`Subscriber`; the sender streams a service's file
through :func:`next_action` to choose its work, and through :func:`clean_up`
(in the same rewrite that records the letters sent) to apply step 5 of
docs/design/run.md#run-steps.
"""

from __future__ import annotations

from datetime import datetime

from vykhukhol import services as svc
from vykhukhol.records import NamedTuple
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import UTC, after

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:
    from vykhukhol.settings import Settings

MAX_FAILURES = 3  # bounce_limit's default: soft failures of different letters before deletion
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

LETTER, REMIND, EXPIRE, FINISH, FAILING, NOTHING = (
    "letter", "remind", "expire", "finish", "failing", "nothing")


class Rules(NamedTuple):  # not a dataclass: a subscribe post need not import dataclasses
    delays: tuple[int, ...]
    reminder_period: int
    reminder_count: int
    delete_finished: bool
    bounce_limit: int = MAX_FAILURES

    def fingerprint(self) -> str:
        """Changes whenever a rule that moves due times changes (letters, settings)."""
        text = f"{self.delays}|{self.reminder_period}|{self.reminder_count}|{self.delete_finished}"
        if self.bounce_limit != MAX_FAILURES:  # indexes made before the setting stay good
            text += f"|{self.bounce_limit}"
        import hashlib  # a run's: a subscribe post needs no fingerprint

        return hashlib.sha256(text.encode()).hexdigest()[:16]


def rules_of(settings: Settings, service: svc.Service) -> Rules:
    """The service's rules under these settings (BadInput: its letters'
    delays cannot be read)."""
    return Rules(tuple(svc.letter_delays(service)), settings["reminder_period"],
                 settings["reminder_count"], service.delete_finished,
                 settings["bounce_limit"])


class Action(NamedTuple):
    kind: str
    due: datetime | None  # None: nothing will ever be due
    number: int = 0       # the letter's number for LETTER


def next_action(sub: Subscriber, rules: Rules) -> Action:
    """What is due next and when; a letter or reminder (and an expiry, which
    follows the reminders) waits for the end of the subscriber's pause."""
    action = _next_action(sub, rules)
    if action.kind in (LETTER, REMIND, EXPIRE) and action.due is not None:
        until = sub.paused_until
        if until is not None and until > action.due:
            return Action(action.kind, until, action.number)
    return action


def _next_action(sub: Subscriber, rules: Rules) -> Action:
    if sub.failures >= rules.bounce_limit:
        return Action(FAILING, EPOCH)
    if sub.state is SubscriberState.NEW:
        base = sub.last_reminder or sub.subscribed or EPOCH
        due = after(base, rules.reminder_period)
        return Action(REMIND if sub.reminders < rules.reminder_count else EXPIRE, due)
    number = sub.sent + 1
    if number <= len(rules.delays):
        base = (sub.last_sent if sub.sent else sub.confirmed) or sub.last_sent or sub.confirmed \
            or sub.subscribed or EPOCH
        return Action(LETTER, after(base, rules.delays[number - 1]), number)
    if sub.state is SubscriberState.ACTIVE and rules.delays:
        return Action(FINISH, EPOCH)  # a plain news list has no series to finish
    return Action(NOTHING, None)


def clean_up(sub: Subscriber, rules: Rules, moment: datetime
             ) -> tuple[Subscriber | None, str, Action | None]:
    """Step 5's rules for one subscriber: the subscriber (None if deleted), why,
    and what is next due for the one kept (:func:`next_action` of it, so that
    a fold asks once a line)."""
    action = next_action(sub, rules)
    if action.kind == FAILING:
        return None, f"{rules.bounce_limit} soft failures of different letters", None
    if action.kind == EXPIRE and action.due is not None and action.due <= moment:
        return None, "never confirmed", None
    if action.kind == FINISH:
        if rules.delete_finished:
            return None, "received the whole series", None
        done = sub.replace(state=SubscriberState.DONE)
        return done, "", next_action(done, rules)
    return sub, "", action
