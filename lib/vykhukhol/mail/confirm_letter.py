"""The confirmation request a subscribe post sends, written without Jinja2.

A subscribe post's CGI process writes its letter after the answer; with
Jinja2 (about 60 ms to import) that letter cost more than the whole page. So
when the service keeps the default subject and text (``mail/texts.py``), they
are drawn by their plain-Python form, :mod:`.plain_letters`, generated from
those texts by ``tools/plain_letters.py``; the letter is otherwise the one
:func:`.compose.confirmation` writes, byte for byte
(tests/unit/test_plain_letters.py holds the two together). A service with its
own ``confirm_subject`` or ``confirm_body``, a reminder (it has the footer)
and a sender's run go through :mod:`.compose` and Jinja2's sandbox as before.

With the outbox or sendmail transport, and neither DKIM signing nor
``dev_redirect`` (which load the e-mail package anyway), the default request
is also written without the e-mail package (:func:`hand_over`,
:mod:`.quick_letter`) and handed over by the transport's own steps
(:mod:`.outbox_files`, :mod:`.sendmail_pipe`): the e-mail package was about
half of what the post's process did after its answer.
"""

from __future__ import annotations

from datetime import datetime

from vykhukhol import mail, returntag, tokens
from vykhukhol.errors import BadInput, StorageError
from vykhukhol.i18n import known_language
from vykhukhol.mail import outbox_files, plain_letters, quick_letter, texts
from vykhukhol.mail.failures import DeliveryError
from vykhukhol.mail.header_values import check_address
from vykhukhol.mail.senders import bounce_address, sender_of

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:
    from pathlib import Path

    from vykhukhol.services import Service
    from vykhukhol.settings import Settings

#: What :func:`vykhukhol.render.one_line_values` makes a space (Unicode's Cc,
#: Zl and Zp), as a table for ``str.translate`` (no pattern to compile); the
#: render package imports Jinja2, so the rule is spelled here too, and
#: tests/unit/test_plain_letters.py holds the two to each other.
LINE_ENDS = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029], " ")


def plain(service: Service, lang: str) -> bool:
    """Whether the request of ``service`` in ``lang`` is drawn without Jinja2:
    the default texts, as the generated functions were made from them."""
    if service.confirm_subject or service.confirm_body:
        return False
    made = [plain_letters.CONFIRM.get((lang, part)) for part in ("subject", "body")]
    return made[0] is not None and made[1] is not None \
        and made[0][1] == texts.CONFIRM_SUBJECT.get(lang) and made[1][1] == texts.CONFIRM_BODY.get(lang)


def confirmation(service: Service, settings: Settings, email: str, name: str, run_id: str,
                 moment: datetime, date: datetime | None = None,
                 message_id: str | None = None, fields: dict[str, str] | None = None, *,
                 language: str | None = None) -> mail.Outgoing:
    """The confirmation request to ``email``, as :func:`.compose.confirmation`
    writes it (``date`` and ``message_id`` as :func:`.message.build_message` takes
    them; ``fields``, the reader's values, only a service's own text reads),
    in the reader's own ``language`` when the site speaks it, else the site's."""
    language = known_language(language)
    if not plain(service, language or settings["language"]):
        from vykhukhol.mail import compose

        return compose.confirmation(service, settings, email, name, run_id, moment,
                                    fields=fields, language=language)
    fields, bounce = _fields(service, settings, email, name, run_id, moment, language)
    message = mail.build_message(**fields, list_id=None, html=None, unsubscribe_url=None,
                                 unsubscribe_mailto=None, tag=None, date=date,
                                 message_id=message_id)
    return mail.Outgoing(message.as_bytes(policy=mail.POLICY),
                         mail.check_address(fields["from_email"]), bounce)


def quick_bytes(service: Service, settings: Settings, email: str, name: str, run_id: str,
                moment: datetime, date: datetime | None = None,
                message_id: str | None = None, *,
                language: str | None = None) -> tuple[bytes, str] | None:
    """The bytes of :func:`confirmation` and its envelope sender, written
    without the e-mail package (:mod:`.quick_letter`); None when that cannot
    be done (a service's own text, a header the package would fold)."""
    language = known_language(language)
    if not plain(service, language or settings["language"]):
        return None
    fields, bounce = _fields(service, settings, email, name, run_id, moment, language)
    data = quick_letter.letter(**fields, date=date, message_id=message_id)
    return None if data is None else (data, bounce)


def hand_over(outbox: Path, service: Service, settings: Settings, email: str, name: str,
              run_id: str, moment: datetime, *, language: str | None = None) -> bool | None:
    """Write the request and hand it over as the outbox or sendmail transport
    would (the same file, the same program run), when nothing else needs the
    e-mail package: neither DKIM signing nor ``dev_redirect``, the default
    texts. True: handed over; False: the transport's failure (a disk or a
    sendmail that refused it); None: not done, for the caller to send it
    through the transport (which also raises what a bad address deserves)."""
    transport = settings["mail.transport"]
    if transport not in ("outbox", "sendmail") or settings["mail.dkim_domain"] \
            or settings["mail.dev_redirect"]:
        return None
    try:
        if settings["mail.from_email"]:
            check_address(settings["mail.from_email"], "sender address")
        made = quick_bytes(service, settings, email, name, run_id, moment, language=language)
        if made is None:
            return None
        recipient = check_address(email, "recipient address")
        envelope = check_address(made[1], "envelope sender")
    except BadInput:
        return None
    if transport == "sendmail":
        from vykhukhol.mail import sendmail_pipe
        from vykhukhol.mail.config import config_from_settings

        config = config_from_settings(settings, outbox)
        try:
            refused = sendmail_pipe.refusal(config.sendmail_path, envelope, recipient)
            if refused is not None:
                raise refused
            sendmail_pipe.pipe(config.sendmail_path, config.timeout,
                               made[0].replace(b"\r\n", b"\n"), envelope, recipient)
        except DeliveryError:
            return False
        return True
    try:
        outbox_files.put(outbox, recipient, envelope, made[0].decode("ascii"))
    except StorageError:
        return False
    return True


def _fields(service: Service, settings: Settings, email: str, name: str, run_id: str,
            moment: datetime, language: str | None) -> tuple[dict[str, str], str]:
    """The letter's fields for the message writers, and its envelope sender;
    ``language``, the reader's own (None: the site's), as known_language left it."""
    lang = language or settings["language"]
    site_url, secret = settings["site_url"], settings.secret
    ctx = {key: value.translate(LINE_ENDS) for key, value in {
        "name": name, "email": email, "service": service.title,
        "unsubscribe_url": tokens.unsubscribe_link(site_url, secret, service.name, email, None,
                                                   language=language),
        "manage_url": tokens.manage_link(site_url, secret, email, language=language),
        "web_url": "", "date": moment.date().isoformat()}.items()}
    ctx["confirm_url"] = tokens.confirm_link(site_url, secret, service.name, email,
                                             language=language)
    bounce = bounce_address(service, settings, returntag.SERVICE, service.name, email)
    from_name, from_email = sender_of(service, settings)
    return {"from_name": from_name, "from_email": from_email, "run_id": run_id,
            "to_email": email, "to_name": name,
            "subject": plain_letters.CONFIRM[(lang, "subject")][0](ctx),
            "text": plain_letters.CONFIRM[(lang, "body")][0](ctx)}, bounce
