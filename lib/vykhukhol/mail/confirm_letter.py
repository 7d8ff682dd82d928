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
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

from vykhukhol import mail, returntag, tokens
from vykhukhol.mail import plain_letters, texts
from vykhukhol.mail.senders import bounce_address, sender_of

if TYPE_CHECKING:
    from vykhukhol.services import Service
    from vykhukhol.settings import Settings

#: What :func:`vykhukhol.render.one_line_values` makes a space (Unicode's Cc,
#: Zl and Zp); the render package imports Jinja2, so the rule is spelled here
#: too, and tests/unit/test_plain_letters.py holds the two to each other.
LINE_ENDS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def plain(service: Service, lang: str) -> bool:
    """Whether the request of ``service`` in ``lang`` is drawn without Jinja2:
    the default texts, as the generated functions were made from them."""
    if service.confirm_subject or service.confirm_body:
        return False
    made = [plain_letters.CONFIRM.get((lang, part)) for part in ("subject", "body")]
    return made[0] is not None and made[1] is not None \
        and made[0][1] == texts.CONFIRM_SUBJECT.get(lang) and made[1][1] == texts.CONFIRM_BODY.get(lang)


def confirmation(service: Service, settings: Settings, email: str, name: str, run_id: str,
                 moment: datetime) -> mail.Outgoing:
    """The confirmation request to ``email``, as :func:`.compose.confirmation` writes it."""
    lang = settings["language"]
    if not plain(service, lang):
        from vykhukhol.mail import compose

        return compose.confirmation(service, settings, email, name, run_id, moment)
    site_url, secret = settings["site_url"], settings.secret
    ctx = {key: LINE_ENDS.sub(" ", value) for key, value in {
        "name": name, "email": email, "service": service.title,
        "unsubscribe_url": tokens.unsubscribe_link(site_url, secret, service.name, email, None),
        "manage_url": tokens.manage_link(site_url, secret, email),
        "web_url": "", "date": moment.date().isoformat()}.items()}
    ctx["confirm_url"] = tokens.confirm_link(site_url, secret, service.name, email)
    bounce = bounce_address(service, settings, returntag.SERVICE, service.name, email)
    from_name, from_email = sender_of(service, settings)
    message = mail.build_message(
        from_name=from_name, from_email=from_email, run_id=run_id, list_id=None,
        to_email=email, to_name=name, subject=plain_letters.CONFIRM[(lang, "subject")][0](ctx),
        text=plain_letters.CONFIRM[(lang, "body")][0](ctx), html=None, unsubscribe_url=None,
        unsubscribe_mailto=None, tag=None)
    return mail.Outgoing(message.as_bytes(policy=mail.POLICY), mail.check_address(from_email),
                         bounce)
