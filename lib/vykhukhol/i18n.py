"""Every sentence a person reads on a page, in Russian and English.

The code speaks English; the Russian lives in a gettext catalog,
``locale/ru/LC_MESSAGES/vykhukhol.po`` (msgid: the English text), compiled to
the ``.mo`` beside it, which stdlib :mod:`gettext` reads at run time — once
per process and language, and only when a page is drawn (the cron script
never imports this module). ``tools/i18n.py`` and Babel keep the catalog in
step with the code (README, "Languages"); tests/unit/test_i18n.py fails when
a text has no Russian or the ``.mo`` is older than the ``.po``.

- ``tr(lang, english, **values)``: an admin text (``_()`` in the templates);
- ``ntr(lang, singular, plural, n, **values)``: a count with its noun, by the
  language's plural rule (``_n()`` in the templates; ``{n}`` is the count);
- ``t(lang, key, **values)``: a public page's text by its key (MESSAGES gives
  its English), so a service's own page templates keep working.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

LOCALE = Path(__file__).resolve().parent / "locale"
DOMAIN = "vykhukhol"

#: The public pages' texts by key: the English msgid of each.
MESSAGES: dict[str, str] = {
    "subscribe.title": "Subscribe: {service}",
    "subscribe.email": "E-mail address",
    "subscribe.name": "Name (optional)",
    "subscribe.button": "Subscribe",
    "subscribe.honeypot": "Leave this field empty",
    "subscribe.check_title": "Check your mailbox",
    "subscribe.check_text": (
        "If {email} is not subscribed to \"{service}\" yet, a letter with a "
        "confirmation link is on its way. Open it to start receiving the "
        "letters."
    ),
    "confirm.title": "Confirm your subscription",
    "confirm.text": "Confirm the subscription of {email} to \"{service}\".",
    "confirm.button": "Confirm my subscription",
    "confirm.done_title": "Subscription confirmed",
    "confirm.done_text": "Thank you! {email} is subscribed to \"{service}\".",
    "link.invalid_title": "This link is not valid",
    "link.invalid_text": "This link is not valid or has expired. Subscribe again if you wish.",
    "unsubscribe.title": "Unsubscribe",
    "unsubscribe.text": "Unsubscribe {email} from \"{service}\"?",
    "unsubscribe.button": "Unsubscribe",
    "unsubscribe.done_title": "You are unsubscribed",
    "unsubscribe.done_text": "This address will receive no more letters from this list.",
    "error.title": "Error",
    "error.400": "The request was not understood: {detail}",
    "error.403": "Access denied.",
    "error.404": "There is no such page or list.",
    "error.405": "This method is not accepted here.",
    "error.413": "The request is too large.",
    "error.500": "Internal error. The administrator will find it in the log.",
    "error.503": "Not available right now ({detail}); please try again later.",
    "error.no_secret": (
        "links cannot be signed: the administrator has not set the site's "
        "secret key"
    ),
    "form.invalid_email": "This e-mail address is not valid.",
}


@lru_cache(maxsize=4)
def catalog(lang: str):  # -> gettext.NullTranslations
    """The translations of ``lang`` (English: none, the msgid is the text)."""
    import gettext

    # The one file opened directly: gettext.translation's search (locale's
    # alias table) and the copy it returns cost every CGI page two imports
    # more (issue 20). A language is "ru" or "en" (the settings' choice).
    if lang.isascii() and lang.isalpha():
        try:
            with open(LOCALE / lang / "LC_MESSAGES" / f"{DOMAIN}.mo", "rb") as compiled:
                return gettext.GNUTranslations(compiled)
        except FileNotFoundError:
            pass
    return gettext.NullTranslations()


#: Keys whose English is another key's too, but not their Russian: each has a msgctxt.
CONTEXTS: dict[str, str] = {"unsubscribe.button": "button"}  # «Отписаться», not «Отписка…»


def t(lang: str, key: str, /, **values: object) -> str:
    """A public page's text by its key."""
    if key in CONTEXTS:
        return ptr(lang, CONTEXTS[key], MESSAGES[key], **values)
    return tr(lang, MESSAGES[key], **values)


# Translations not yet moved into the catalog: a branch that still adds
# ``"English": "Русский"`` here is merged, then `python3 tools/i18n.py absorb`
# moves them into locale/ru/LC_MESSAGES/vykhukhol.po (a test fails until then).
RU: dict[str, str] = {}


# The parameters are positional-only: a value may be called ``text`` or ``lang``.
def tr(lang: str, text: str, /, **values: object) -> str:
    """An English ``text`` in ``lang``, its ``{placeholders}`` filled from ``values``."""
    out = catalog(lang).gettext(text) if lang != "en" else text
    return out.format(**values) if values else out


def ptr(lang: str, context: str, text: str, /, **values: object) -> str:
    """:func:`tr` of a text whose English means two things (msgctxt ``context``)."""
    out = catalog(lang).pgettext(context, text) if lang != "en" else text
    return out.format(**values) if values else out


def ntr(lang: str, singular: str, plural: str, n: int, /, **values: object) -> str:
    """A count with its noun in ``lang``: ``ntr("ru", "{n} subscriber", "{n} subscribers", 21)``
    is «21 подписчик»; Russian has three forms (1, 2–4, 5–20 and so on)."""
    out = catalog(lang).ngettext(singular, plural, n)
    return out.format(n=n, **values)


#: The settings page's human label of each key (the key itself is shown small beside it).
SETTING_LABELS: dict[str, str] = {
    "mode": "Mode",
    "admin_email": "Administrator's e-mail",
    "site_url": "Site address",
    "news_per_run": "Letters to all subscribers per run",
    "serial_per_run": "Series letters per run",
    "time_limit": "Hoster's time limit",
    "reminder_period": "Reminder period",
    "reminder_count": "Reminders before deletion",
    "timezone": "Time zone",
    "language": "Language",
    "hourly_limit": "Letters per hour at most",
    "daily_limit": "Letters per day at most",
    "cron_allow": "Who may call the cron script",
    "trusted_proxies": "Trusted reverse proxies",
    "subscribe_hourly_limit": "Subscriptions per client and hour",
    "mail.transport": "How mail leaves",
    "mail.from_email": "Sender address",
    "mail.smtp_host": "SMTP server",
    "mail.smtp_port": "SMTP port",
    "mail.smtp_security": "SMTP encryption",
    "mail.smtp_user": "SMTP login",
    "mail.smtp_password": "SMTP password",
    "mail.smtp_connections": "SMTP connections",
    "mail.sendmail_path": "sendmail program",
    "mail.dev_redirect": "Send everything to (trial)",
    "mail.verp_separator": "Bounce tag separator",
    "mail.bounce_address": "Bounce address",
    "mail.bounce_mailbox": "Bounce mailbox",
    "mail.dkim_domain": "DKIM domain",
    "mail.dkim_selector": "DKIM selector",
    "mail.dkim_key_file": "DKIM key file",
    "mail.bounce_cafile": "Bounce mailbox CA file",
    "security.secret": "Link-signing secret",
    "security.admin_password": "Admin password",
    "hooks.key": "Callback key of the mail providers",
    "hooks.mailgun_signing_key": "Mailgun webhook signing key",
    "hooks.sendgrid_public_key": "SendGrid verification key",
    "hooks.postmark_user": "Postmark webhook user",
    "hooks.postmark_password": "Postmark webhook password",
    "hooks.sns_test_host": "SNS certificate host (tests only)",
}
