"""Every sentence a person reads on a page, in Russian and English.

The code speaks English; the Russian lives in a gettext catalog,
``locale/ru/LC_MESSAGES/vykhukhol.po`` (msgid: the English text), compiled to
the ``.mo`` beside it, which :class:`Catalog` reads at run time as stdlib
:mod:`gettext` would — once per process and language, and only when a page
is drawn (the cron script
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

import os

# Every public page loads this module: collections, functools and pathlib
# are not imported for it (docs/design/startup.md#startup-fastpath).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

LOCALE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "locale")
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
        "If {email} is not subscribed to “{service}” yet, a letter with a "
        "confirmation link is on its way. Open it to start receiving the "
        "letters."
    ),
    "fields.optional": "(optional)",
    "fields.yes": "Yes",
    "fields.no": "No",
    "fields.date_hint": "YYYY-MM-DD",
    "subscribe.closed_title": "This list is closed",
    "subscribe.closed_text": "“{service}” takes no new subscribers now.",
    "confirm.title": "Confirm your subscription",
    "confirm.text": "Confirm the subscription of {email} to “{service}”.",
    "confirm.button": "Confirm my subscription",
    "confirm.done_title": "Subscription confirmed",
    "confirm.done_text": "Thank you! {email} is subscribed to “{service}”.",
    "link.invalid_title": "This link is not valid",
    "link.invalid_text": "This link is not valid or has expired. Subscribe again if you wish.",
    "unsubscribe.title": "Unsubscribe",
    "unsubscribe.text": "Unsubscribe {email} from “{service}”?",
    "unsubscribe.button": "Unsubscribe",
    "unsubscribe.manage": "All your lists, a pause, your data",
    "unsubscribe.done_title": "You are unsubscribed",
    "unsubscribe.done_text": "This address will receive no more letters from this list.",
    "test_link.title": "A test letter's link",
    "test_link.text": "This link came from a test letter sent from the admin: it changes nothing. "
                      "A subscriber's letter carries a link of their own.",
    "page.home": "Back to the site",
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
    "subscribe.language": "Language of the letters",
    "language.name": "English",  # each language's name in itself: «Русский» in Russian
    "click.invalid_text": (
        "This link leads nowhere: it was changed on its way, or it does not come "
        "from one of our letters."
    ),
}


#: The languages a page, a letter and a reader may have (the setting ``language``'s choices).
LANGUAGES = ("ru", "en")
MAX_ACCEPT = 512  # characters of an Accept-Language header read; the rest is not
MAX_RANGES = 16   # language ranges of it weighed at most


def known_language(value: object) -> str | None:
    """``value`` if it is a language the site speaks, else None (docs/using/languages.md#reader-language)."""
    return value if value in LANGUAGES else None


def accepted_language(header: str) -> str | None:
    """The language the site speaks that an ``Accept-Language`` header
    (RFC 9110 12.5.4) prefers, or None: ``ru-RU`` counts as ``ru``, the
    highest ``q`` wins, the first of equals; ``q=0``, ``*``, a malformed
    weight and any other language count for nothing. Only the header's
    first :data:`MAX_ACCEPT` characters and :data:`MAX_RANGES` ranges are
    read, by plain string steps: a page of the start-up budget calls it."""
    best, best_weight = None, 0
    for part in header[:MAX_ACCEPT].split(",")[:MAX_RANGES]:
        tag, _, params = part.partition(";")
        primary = tag.strip().lower().partition("-")[0]
        if primary not in LANGUAGES:
            continue
        weight = _weight(params)
        if weight > best_weight:
            best, best_weight = primary, weight
    return best


def _weight(params: str) -> int:
    """A range's ``q`` in thousandths (1000 without one; 0 when malformed)."""
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() != "q":
            continue
        whole, _, fraction = value.strip().partition(".")
        if whole not in ("0", "1") or len(fraction) > 3 \
                or fraction and not (fraction.isascii() and fraction.isdigit()):
            return 0
        weight = int(whole) * 1000 + int(fraction.ljust(3, "0"))
        return weight if weight <= 1000 else 0
    return 1000


def reader_language(chosen: object, accept: str) -> str | None:
    """A reader's own language from a form: ``chosen`` if the site speaks it,
    else the best of the browser's ``Accept-Language``, else None (the site's
    language then speaks to them)."""
    return known_language(chosen) or accepted_language(accept)


_CATALOGS: dict[str, Catalog | None] = {}


def catalog(lang: str) -> Catalog | None:
    """The translations of ``lang``, or None (English, or no catalog: the msgid
    is the text). A language is "ru" or "en" (the settings' choice). Read once."""
    if lang not in _CATALOGS:
        if len(_CATALOGS) >= 4:
            _CATALOGS.clear()
        _CATALOGS[lang] = _read_catalog(lang)
    return _CATALOGS[lang]


def _read_catalog(lang: str) -> Catalog | None:
    if not (lang.isascii() and lang.isalpha()):
        return None
    try:
        with open(os.path.join(LOCALE, lang, "LC_MESSAGES", f"{DOMAIN}.mo"), "rb") as compiled:
            return Catalog(compiled.read())
    except FileNotFoundError:
        return None


class Catalog:
    """A compiled catalog (``.mo``) answering as :class:`gettext.GNUTranslations`
    does, but read lazily: a CGI page looks up a dozen of its ~1,300 texts, and
    gettext decodes every one of them first (2-15 ms a process), where reading
    them all into a table still cost 3 ms (docs/design/startup.md#startup).
    Here a text is found by a binary search over the file's keys, which are in
    their bytes' order (as GNU msgfmt writes them, and as tools/i18n.py
    writes ours), decoded when it is asked for, and the plural rule compiled
    when a count is first shown. tests/unit/test_i18n.py holds every entry
    equal to gettext's answer, and the file to that order."""

    __slots__ = ("_data", "_big", "_count", "_keys", "_values", "_charset", "_plural_forms",
                 "_rule")

    def __init__(self, data: bytes) -> None:
        if data[:4] not in (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde") or len(data) < 20:
            raise OSError("not a gettext catalog")
        self._data = data
        self._big = data[:4] == b"\x95\x04\x12\xde"
        self._count, self._keys, self._values = (self._number(at) for at in (8, 12, 16))
        self._charset = "utf-8"
        self._plural_forms = "n != 1"  # the catalog's expression, compiled when first needed
        self._rule: Callable[[int], int] | None = None
        for line in self._raw(self._find(b"")).decode("ascii", "replace").splitlines():
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-type" and "charset=" in value:
                self._charset = value.split("charset=")[1].strip()
            elif name == "plural-forms" and "plural=" in value:
                self._plural_forms = value.split(";")[1].split("plural=")[1]

    def _number(self, at: int) -> int:
        return int.from_bytes(self._data[at:at + 4], "big" if self._big else "little")

    def _key(self, index: int) -> bytes:
        at = self._keys + 8 * index
        length, offset = self._number(at), self._number(at + 4)
        return self._data[offset:offset + length]

    def _find(self, key: bytes, plural: bool = False) -> tuple[int, int] | None:
        """Where the translation of ``key`` lies (offset, length), or None; with
        ``plural``, of the plural entry whose singular is ``key`` (its key is
        ``singular\0plural``, next after ``singular`` in the keys' order)."""
        wanted = key + b"\0" if plural else key
        low, high = 0, self._count
        while low < high:
            middle = (low + high) // 2
            if self._key(middle) < wanted:
                low = middle + 1
            else:
                high = middle
        if low >= self._count:
            return None
        found = self._key(low)
        if found != wanted and not (plural and found.startswith(wanted)):
            return None
        at = self._values + 8 * low
        offset, length = self._number(at + 4), self._number(at)
        if offset + length > len(self._data):  # a file cut short: the English, not a blank
            return None
        return offset, length

    def _raw(self, where: tuple[int, int] | None) -> bytes:
        return b"" if where is None else self._data[where[0]:where[0] + where[1]]

    def gettext(self, message: str) -> str:
        where = self._find(message.encode(self._charset))
        return message if where is None else self._raw(where).decode(self._charset)

    def pgettext(self, context: str, message: str) -> str:
        where = self._find(f"{context}\x04{message}".encode(self._charset))
        return message if where is None else self._raw(where).decode(self._charset)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        where = self._find(singular.encode(self._charset), plural=True)
        forms = [] if where is None else self._raw(where).split(b"\0")
        index = self._plural_index(n)
        if index >= len(forms):
            return singular if n == 1 else plural
        return forms[index].decode(self._charset)

    def _plural_index(self, n: int) -> int:
        if self._rule is None:
            import gettext

            self._rule = gettext.c2py(self._plural_forms)
        return self._rule(n)


#: Keys whose English is another key's too, but not their Russian: each has a msgctxt.
CONTEXTS: dict[str, str] = {"unsubscribe.button": "button",  # «Отписаться», not «Отписка…»
                            "language.name": "the language's own name"}  # «Русский»


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
    found = catalog(lang) if lang != "en" else None
    out = found.gettext(text) if found else text
    return out.format(**values) if values else out


def ptr(lang: str, context: str, text: str, /, **values: object) -> str:
    """:func:`tr` of a text whose English means two things (msgctxt ``context``)."""
    found = catalog(lang) if lang != "en" else None
    out = found.pgettext(context, text) if found else text
    return out.format(**values) if values else out


def ntr(lang: str, singular: str, plural: str, n: int, /, **values: object) -> str:
    """A count with its noun in ``lang``: ``ntr("ru", "{n} subscriber", "{n} subscribers", 21)``
    is «21 подписчик»; Russian has three forms (1, 2–4, 5–20 and so on)."""
    found = catalog(lang)
    out = found.ngettext(singular, plural, n) if found else (singular if n == 1 else plural)
    return out.format(n=n, **values)


def duration(lang: str, seconds: int) -> str:
    """A duration as a person reads it in ``lang`` («30 с», «3 дня», "2 hours"),
    not as a setting is typed (30s, 3d): the largest unit that measures it
    exactly, else its two largest parts (a lock's age, 1 day 2 hours)."""
    rest = max(int(seconds), 0)
    parts: list[str] = []
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        count, rest = divmod(rest, size)
        if count and len(parts) < 2:
            parts.append(_unit(lang, unit, count))
        if parts and not rest:
            break
    return " ".join(parts) or _unit(lang, "s", 0)


def _unit(lang: str, unit: str, n: int) -> str:
    if unit == "d":
        return ntr(lang, "{n} day", "{n} days", n)
    if unit == "h":
        return ntr(lang, "{n} hour", "{n} hours", n)
    if unit == "m":
        return ntr(lang, "{n} min", "{n} min", n)
    return ntr(lang, "{n} s", "{n} s", n)


def spoken(lang: str, typed: str) -> str:
    """A duration written as a setting is (``30s``, ``3d``) in words (:func:`duration`);
    anything else as it is."""
    import re

    found = re.fullmatch(r"(\d{1,9})([smhd])", typed.strip())
    if not found:
        return typed
    return duration(lang, int(found.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)])


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
    "bounce_limit": "Soft bounces before deletion",
    "complaint_brake": "Complaints that brake a list, %",
    "bounce_brake": "Addresses gone that brake a list, %",
    "bounce_reset": "Soft bounce count resets after",
    "timezone": "Time zone",
    "language": "Language",
    "hourly_limit": "Letters per hour at most",
    "daily_limit": "Letters per day at most",
    "cron_allow": "Who may call the cron script",
    "trusted_proxies": "Trusted reverse proxies",
    "postal_address": "Postal address (in the letters' footer)",
    "subscribe_hourly_limit": "Subscriptions per client and hour",
    "subscribe_address_daily_limit": "Confirmation requests per address and day",
    "subscribe_alarm": "Sign-ups an hour that hold confirmations (0: never)",
    "subscribe_challenge": "Proof-of-work puzzle on the public forms",
    "archive_dir": "Public archive folder",
    "mail.transport": "How mail leaves",
    "mail.from_email": "Sender address",
    "mail.smtp_host": "SMTP server",
    "mail.smtp_port": "SMTP port",
    "mail.smtp_security": "SMTP encryption",
    "mail.smtp_user": "SMTP login",
    "mail.smtp_password": "SMTP password",
    "mail.smtp_connections": "SMTP connections",
    "mail.helo_name": "SMTP greeting name",
    "mail.sendmail_path": "sendmail program",
    "mail.dev_redirect": "Send everything to (trial)",
    "mail.verp_separator": "Bounce tag separator",
    "mail.bounce_address": "Bounce address",
    "mail.bounce_mailbox": "Bounce mailbox",
    "mail.dkim_domain": "DKIM domain",
    "mail.dkim_selector": "DKIM selector",
    "mail.dkim_key_file": "DKIM key file",
    "mail.relay_ip": "Relay's sending address (for SPF)",
    "dns.resolver": "DNS server for the deliverability check",
    "mail.bounce_cafile": "Bounce mailbox CA file",
    "security.secret": "Link-signing secret",
    "security.admin_password": "Admin password",
    "security.admin_totp": "Admin's two-factor secret",
    "security.admin_recovery": "Admin's recovery codes",
    "hooks.key": "Callback key of the mail providers",
    "hooks.generic_secret": "Signing secret of the generic callback",
    "hooks.mailgun_signing_key": "Mailgun webhook signing key",
    "hooks.sendgrid_public_key": "SendGrid verification key",
    "hooks.postmark_user": "Postmark webhook user",
    "hooks.postmark_password": "Postmark webhook password",
}
