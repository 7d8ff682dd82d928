"""Alerts to the admin (docs/using/alerts.md#alerts): the original's five literal
subjects and ours for a letter template over its bounds or with a mistake. The subjects stay as
the original has them, whatever the language; the bodies follow ``language``
(English here, the Russian in the catalog).

Every alert is written to the run log and shown on the admin status page; it
is mailed to ``admin_email`` at most once an hour per subject (the time of the
last mailing is kept in ``data/state/alerts``). Alerts do not count against
the hourly and daily sending limits.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from vykhukhol import mail
from vykhukhol.datadir import DataDir
from vykhukhol.files import kv
from vykhukhol.i18n import spoken, tr
from vykhukhol.timeutil import format_time, seconds_between

if TYPE_CHECKING:
    from vykhukhol.mail.transport import HandsOver

THROTTLE = 3600  # seconds between two mailings of one subject

SCRIPT_OFF = "Script is off"
ALL_OFF = "all dispatchs is off"
DOWN_BY_HOSTER = "script is down by hoster"
CANNOT_LAUNCH = "not can launch the sender"
CANNOT_TERMINATE = "not can terminate sender"
CANNOT_RENDER = "not can render the letter"  # ours, in the original's style: docs/using/services.md#template-bounds
SENDER_REFUSED = "mail servers refuse the sender"  # ours: docs/deliverability/bounces.md#returned-message
CRON_SILENT = "cron is silent"  # ours: no run has started for too long (watch/cronwatch.py)
CANNOT_MAKE = "not can make the letter"  # ours: a template with a mistake (docs/using/services.md#broken-letter)
BRAKED = "dispatch is braked"  # ours: a service's complaints or addresses gone past a brake (watch/brakes.py)
NEWS_BRAKED = "newsletter is braked"  # ours: the same of a newsletter
WEBHOOK_OFF = "webhook is off"  # ours: an endpoint that failed for three days (vykhukhol.webhooks)
SIGNUP_WAVE = "sign-ups come in a wave"  # ours: past subscribe_alarm (web/bots.py)


def _(text: str) -> str:
    """Marks a text for the catalog (tools/i18n.py extract); the caller translates it."""
    return text

#: Each alert's body: (first line, the rest), in English; the Russian is in the
#: catalog (i18n). The first line is the run log's and the status page's, so it
#: is a text of its own, translated alone.
BODIES: dict[str, tuple[str, str]] = {
    SCRIPT_OFF: (
        "Vykhukhol cannot start sending: the script is in debug mode.",
        "While it is in this mode, no letter is sent.\n"
        "Go to the admin and switch the script to working mode.",
    ),
    ALL_OFF: (
        "All serial services are switched off, so no series letters and reminders are sent.",
        "Letters to all subscribers do not depend on this.\n"
        "Switch on the services you need in the admin, on the services page.",
    ),
    DOWN_BY_HOSTER: (
        "The previous sender run was interrupted, by the hoster or something else, midway.",
        "So as not to send letters twice, the sender has blocked itself and sends nothing.\n"
        "To resume sending:\n"
        "  - go to the admin;\n"
        "  - switch the script to debug mode;\n"
        "  - switch it back to working mode.\n"
        "This lifts the block.\n\n"
        "Most likely the script's time limit (time_limit) is set wrong: it is {time_limit} now, "
        "and the interrupted run had been going for {age} when it was checked.\n"
        "Ask the hoster for the real limit and set a value no greater than it.",
    ),
    CANNOT_LAUNCH: (
        "Sending cannot start: the lock file could not be renamed ({detail}).",
        "The access rights of the data files may be broken.\n"
        "It may also be that SEVERAL crons are pointed at one DB at once: check the list of "
        "cron jobs.",
    ),
    CANNOT_TERMINATE: (
        "The sender cannot finish properly: the lock file could not be made free again "
        "({detail}).",
        "The sender is stopped. Check the access rights of the data folder and the list of cron "
        "jobs.",
    ),
    CANNOT_RENDER: (
        "A letter was not made: its template goes beyond its bounds ({detail}).",
        "A template gets no more than 0.5 seconds per letter and no more than a million "
        "characters in each part (the manual, docs/using/services.md, Template bounds). The admin does not let such a template "
        "be saved; most likely it was changed by FTP.\n"
        "The letter is skipped; the other letters go as usual. No subscriber is lost or moved "
        "along the series: every later run tries this letter again and skips it again, and "
        "this alert comes no more than once an hour.\n"
        "Fix the template in the admin (or in the letter's file): the letter goes with the "
        "next run.",
    ),
    CANNOT_MAKE: (
        "A letter was not made: its template has a mistake ({detail}).",
        "Most likely the letter's file was changed by FTP: a tag left open, a brace missing.\n"
        "The letter is skipped; the other letters go as usual. No subscriber is lost or moved "
        "along the series: every later run tries this letter again and skips it again, and "
        "this alert comes no more than once an hour. The admin's Status page shows the "
        "mistake until it is fixed.\n"
        "Fix the template in the admin (or in the letter's file): the letter goes with the "
        "next run.",
    ),
    SENDER_REFUSED: (
        "Mail servers refused {refused} of the {letters} letters of one run ({detail}) for "
        "reasons that are about the sender, not about the subscribers: {reasons}.",
        "Nothing was counted against the subscribers and nobody was deleted.\n"
        "What to check: {advice}\n"
        "The reason of each refusal is in data/log/bounces.log and on the Bounces page. "
        "This alert comes at most once an hour.",
    ),
    CRON_SILENT: (
        "No sender run has started for {silence} (the last one at {last}): the cron job that "
        "calls the cron script seems to have stopped.",
        "Vykhukhol sends letters only when its cron script is called, so until the cron runs "
        "again nothing is sent: no series letters, no newsletters, no reminders.\n"
        "Check the cron job in the hosting panel (the line to paste is on the Status page of "
        "the admin) and open the cron URL once by hand: its answer says what is wrong.\n"
        "This alert comes when no run has started for {every} and at most once every 6 hours.",
    ),
    BRAKED: (
        "Service {name} is braked: in the last 30 days, of its {letters} letters, complaints: "
        "{complaints} ({complaint_share} %, the brake at {complaint_line} %), addresses gone: "
        "{gone} ({gone_share} %, the brake at {bounce_line} %).",
        "No more of its letters and reminders are sent until you resume it, so that the mailbox "
        "providers do not start refusing the whole site's mail. The other services and the "
        "newsletters go on.\n"
        "Look at what its letters say and to whom they go (the Bounces page names the "
        "complaints and the addresses gone), then resume it: the button on the Services page "
        "of the admin, or `vykhukhol service resume {name}`. Resuming forgets the complaints "
        "and addresses gone so far.",
    ),
    NEWS_BRAKED: (
        "Newsletter {name} is braked: in the last 30 days, of its {letters} letters, "
        "complaints: {complaints} ({complaint_share} %, the brake at {complaint_line} %), "
        "addresses gone: {gone} ({gone_share} %, the brake at {bounce_line} %).",
        "No more of its letters are sent until you resume it, so that the mailbox providers do "
        "not start refusing the whole site's mail. The services and the other newsletters go "
        "on.\n"
        "Look at what it says and to whom it goes (the Bounces page names the complaints and "
        "the addresses gone), then resume it: the button on the Newsletters page of the admin, "
        "or `vykhukhol newsletter resume {name}`; or cancel it. Resuming forgets the complaints "
        "and addresses gone so far.",
    ),
    WEBHOOK_OFF: (
        "Webhook {name} is switched off: every delivery to it has failed for three days.",
        "The events since then were not delivered to it and are not kept for it. Check the "
        "receiver (its recent deliveries are on the Webhooks page of the admin and in "
        "`vykhukhol webhook log {name}`), then switch it back on: `vykhukhol webhook enable {name}`.",
    ),
    SIGNUP_WAVE: (
        "More than {alarm} sign-ups came within an hour: their confirmation requests are held.",
        "The new subscribers are stored, but nobody is asked to confirm until you look, so that "
        "a bot cannot make the site mail strangers by the hundred.\n"
        "If they are people (your list was mentioned somewhere), release the requests: they go "
        "with the next run. If they are a bot's, drop them, and turn on the puzzle of the "
        "public forms (subscribe_challenge = on; paste the subscribe form on your site anew).\n"
        "Both are buttons on the admin's Held confirmation requests page (the Settings page "
        "links to it), or `vykhukhol held release` and `vykhukhol held drop`. Until then every "
        "new request is held too.",
    ),
}

#: What to check for each reason of a sender refused (sender.tell_refusals).
ADVICE = {
    "authfailure": _("the DNS records of the sending domain: SPF, DKIM (mail.dkim_domain and "
                     "the published key) and DMARC;"),
    "requireptr": _("the reverse DNS (PTR) record of the sending IP;"),
    "blocked": _("whether the sending IP is on a block list; ask the host or the relay;"),
    "badreputation": _("whether the sending IP is on a block list; ask the host or the relay;"),
    "norelaying": _("the relay settings: mail.smtp_host, the login, who may relay;"),
    "spamdetected": _("the letter itself: its text and links were taken for spam;"),
    "speeding": _("the sending rate: set hourly_limit and daily_limit lower;"),
    "toomanyconn": _("the sending rate: set hourly_limit and daily_limit lower;"),
}
DEFAULT_ADVICE = _("the DNS records (SPF, DKIM, DMARC, PTR), the relay and whether the "
                   "sending IP is on a block list.")

#: A placeholder no caller filled is left empty.
BLANK = {"detail": "", "time_limit": "", "age": "", "refused": "", "letters": "", "reasons": "",
         "advice": "", "silence": "", "last": "", "every": "",
         "name": "", "complaints": "", "gone": "", "complaint_share": "", "gone_share": "",
         "complaint_line": "", "bounce_line": "", "alarm": ""}


def body(subject: str, lang: str, **details: str) -> str:
    """An alert's body in ``lang`` (docs/using/alerts.md#alerts-languages: the subject stays
    literal, the body follows ``language``)."""
    first, rest = BODIES[subject]
    values = {**BLANK, **details}
    for name in ("time_limit", "age"):  # 30s, 3d as words of the letter's language
        values[name] = spoken(lang, values[name])
    return tr(lang, first, **values) + "\n" + tr(lang, rest, **values)


def shown(message: str, lang: str) -> str:
    """An alert line of the run log (``subject: first line``, in English) as the
    status page shows it in ``lang``; a line it does not recognise (one written
    by an older version, in Russian) as it is."""
    import re

    subject, sep, rest = message.partition(": ")
    if not sep or subject not in BODIES:
        return message
    first = BODIES[subject][0]
    names = re.findall(r"\{(\w+)\}", first)
    pattern = "".join(f"(?P<{part}>.*)" if index % 2 else re.escape(part)
                      for index, part in enumerate(re.split(r"\{(\w+)\}", first)))
    found = re.fullmatch(pattern, rest, re.S)
    if found is None:
        return message
    return f"{subject}: " + tr(lang, first, **{**BLANK, **{n: found.group(n) for n in names}})


class AlertLog(Protocol):
    """Where an alert's line goes: a run's log, or a page's (the web server's error log)."""

    lease: str

    def alert(self, message: str) -> None: ...

    def error(self, message: str) -> None: ...


def raise_alert(data: DataDir, settings, log: AlertLog, subject: str, moment: datetime,
                transport: HandsOver | None = None, **details: str) -> bool:
    """Log the alert; mail it unless the same subject went out in the last hour.

    Returns True when a letter was sent.
    """
    # A detail is one line of the body: nothing in it (a file name, an error) can end a line.
    details = {key: " ".join(str(value).split()) for key, value in details.items()}
    # The log speaks English (the status page shows the line in its own language:
    # shown()); the letter speaks the site's language.
    log.alert(f"{subject}: " + body(subject, "en", **details).split("\n", 1)[0])
    admin = settings["admin_email"]
    if not admin:
        return False
    path = data.state / "alerts"
    due = True

    def claim(values: dict[str, str]) -> None:
        nonlocal due
        last = kv.time_of(values, subject)
        if last is not None and 0 <= seconds_between(moment, last) < THROTTLE:
            due = False
        else:
            values[subject] = format_time(moment)

    kv.change_kv(path, claim)
    if not due:
        return False

    message = mail.build_message(
        from_name="Vykhukhol", from_email=settings["mail.from_email"] or admin,
        to_email=admin, subject=subject, text=body(subject, settings["language"], **details),
        run_id=log.lease,
    )
    own = transport is None
    transport = transport or mail.open_transport(mail.config_from_settings(settings, data.outbox))
    try:
        transport.send(message, admin)
    except mail.DeliveryError as exc:
        log.error(f"alert {subject!r} could not be mailed: {exc.detail}")
        return False
    finally:
        if own:
            transport.close()
    return True

