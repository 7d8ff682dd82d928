"""What a refusal at hand-over means (docs/design/run.md#run-failures): the
server's reply read for its cause, with the command it answered; a
temporary one of the recipient (4xx to RCPT) defers that recipient alone
(:mod:`.tempfail`), one of the server stops the run's sending; one that
says the site sends too fast stops it too and halves the pace (:mod:`vykhukhol.watch.pace`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import vykhukhol.sender.journal as journal
from vykhukhol.bounces.reading import reasons
from vykhukhol.sender.tempfail import DEFER_PAUSES, TEMPFAIL_GIVE_UP
from vykhukhol.states import Outcome
from vykhukhol.timeutil import format_duration, seconds_between
from vykhukhol.watch.pace import says_rate

if TYPE_CHECKING:
    from vykhukhol import mail
    from vykhukhol.sender.runtime import Run

_ANSWERED = {"rcpt": "in reply to RCPT TO command", "data": "in reply to end of DATA command"}


def read_refusal(run: Run, exc: mail.DeliveryError, target: str, email: str, item: str
                 ) -> tuple[str, str]:
    """The journal's outcome for a refused letter, and for ``failed`` its
    cause (docs/design/run.md#run-failures): a permanent refusal is read for its reason; a
    temporary one of the recipient (4xx to RCPT) defers that recipient
    alone, one of the server stops the run's sending."""
    if exc.stage == "dkim":  # our settings, not the letter: no letter leaves unsigned
        run.log.error(f"{target}: {exc.detail}; sending stops until the DKIM key is fixed")
        run.stop(Outcome.TEMPFAIL)
        return journal.TEMPFAIL, ""
    if _server_words(exc) and says_rate(exc.code, exc.detail):
        return _too_fast(run, exc, target, email, item)
    if not exc.temporary:
        if exc.code is not None:
            reading = reasons.smtp_reason(exc.code, "", exc.detail, recipient=email)
            # Which command was refused is known here, and it decides what
            # "user unknown" means: to RCPT TO, the address; after DATA, a filter.
            said = _ANSWERED.get(exc.stage)
            if said:
                reading = reasons.read(reading.status, exc.detail, "failed",
                                       str(exc.code), context=said, recipient=email)
        else:  # sendmail's words: read like a report's diagnostic
            reading = reasons.read(text=exc.detail, action="failed")
        if reading.cause is reasons.Cause.DELAY:  # a 5xx never is: read as soft
            reading = reasons.Reading(reasons.Cause.SOFT, reading.reason, reading.status,
                                      reading.code)
        run.log.write(f"{target}: {email} refused ({exc.code or 'no code'}): {exc.detail} "
                       f"[{reading.cause.value}: {reading.log_text()}]")
        run.deferrals.forget(target, email, item)
        if reading.cause is reasons.Cause.SENDER:
            run.refusals.append((run.lease, reading.reason))
        if reading.cause is reasons.Cause.GONE and not reading.sure:
            run.log.write(f"{target}: {email} read as gone with doubt ({reading.rule_text()}): "
                          "counted as a soft failure; it leaves at the second different letter "
                          "refused so")
            return journal.FAILED, journal.GONE_IN_DOUBT
        return journal.FAILED, reading.cause.value
    rcpt = exc.stage == "rcpt" and exc.code != 421  # 421: the server closes, for all
    since, tries = run.deferrals.note(target, email, item, defer=rcpt)
    if seconds_between(run.now(), since) >= TEMPFAIL_GIVE_UP:
        run.log.write(f"{target}: {email} failed temporarily for "
                       f"{format_duration(TEMPFAIL_GIVE_UP)}; marked failed")
        run.deferrals.forget(target, email, item)
        return journal.FAILED, "soft"
    code = f" ({exc.code})" if exc.code else ""
    if rcpt:
        pause = DEFER_PAUSES[min(tries, len(DEFER_PAUSES)) - 1]
        run.log.write(f"{target}: {email} deferred{code}: {exc.detail}; tried again in "
                       f"{format_duration(pause)} at the earliest, the others go on")
        return journal.TEMPFAIL, ""
    run.log.write(f"{target}: temporary failure for {email}{code}: {exc.detail}; "
                   "sending stops, a later run retries")
    run.stop(Outcome.TEMPFAIL)
    return journal.TEMPFAIL, ""


def _server_words(exc: mail.DeliveryError) -> bool:
    """Whether the refusal's text is the server's (a reply code) or
    sendmail's own words, not ours ("Too many open files" is this machine's)."""
    return exc.code is not None or (exc.stage == "local" and " exited with " in exc.detail)


def _too_fast(run: Run, exc: mail.DeliveryError, target: str, email: str, item: str
              ) -> tuple[str, str]:
    """The server says the site sends too fast (whatever the command, even a
    5xx such as cPanel's "max emails per hour"): the letter waits for a
    later run, the run stops, and the pace is half what the server had."""
    code = f" ({exc.code})" if exc.code else ""
    since, _ = run.deferrals.note(target, email, item)
    if seconds_between(run.now(), since) >= TEMPFAIL_GIVE_UP:
        run.log.write(f"{target}: {email} failed temporarily for "
                       f"{format_duration(TEMPFAIL_GIVE_UP)}; marked failed")
        run.deferrals.forget(target, email, item)
        return journal.FAILED, "soft"
    found = run.allowance.pace.learn(run.letters_out)
    if found is None:
        run.log.write(f"{target}: the server says too many{code} for {email}: {exc.detail}; "
                       "sending stops, a later run retries (too few letters went to it "
                       "in the last hour to learn a pace from)")
    else:
        run.log.write(f"{target}: the server says too many{code} for {email}: {exc.detail}; "
                       f"sending stops; {found.seen} letters went to {found.server} in the "
                       f"last hour, from now on at most {found.pace:g} an hour, a tenth "
                       "more each clean hour")
    run.stop(Outcome.TEMPFAIL)
    return journal.TEMPFAIL, ""
