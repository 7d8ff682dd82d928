"""The mail package's front door: the names the rest of Vykhukhol uses, re-exported.

Nothing is built or sent in this file; it only gathers, so a caller writes
``from vykhukhol import mail`` and ``mail.build_message(...)``,
``mail.open_transport(mail.config_from_settings(settings, data.outbox))``.
What the package does (docs/reference/transports.md#transports): one letter built
(:func:`build_message`) with the SMTP policy, UTF-8 text in quoted-printable
so Cyrillic travels as 7-bit, an HTML alternative when given, and the list
headers (``List-Id``, ``List-Unsubscribe``, ``List-Unsubscribe-Post``,
``X-Vykhukhol-Run``); delivered to exactly one envelope recipient through a
:class:`Transport` from :func:`open_transport`:

* ``smtp`` — one connection, opened on the first letter and reused for the
  whole run; plain, STARTTLS or SSL; login when a user is set; timeouts; the
  envelope pipelined (RFC 2920) when the server offers it. A run allowed
  several connections (``mail.smtp_connections``) drives them through
  :class:`.lanes.Lanes`, one thread and one transport each.
* ``sendmail`` — ``sendmail -i -f ENVELOPE -- RCPT`` with the letter on stdin.
* ``outbox`` — one ``.eml`` file per letter in a folder, for tests, previews
  and hosts without mail.

Every failure to deliver is a :class:`TemporaryFailure` (stop the run, try
again later) or a :class:`PermanentFailure` (this recipient or letter will
never go through). ``dev_redirect`` sends every letter to one address instead,
and it is applied in :meth:`Transport.send`, so no caller can forget it;
so is the DKIM signature (after the redirect, over the bytes handed over) and
the envelope sender a letter carries (:attr:`Outgoing.envelope_from`, the
tagged bounce address of docs/reference/transports.md#transports-envelope).

Deliberately *not* in this package: choosing recipients, pacing, retries,
bounce counting, journals of what was sent, and rendering templates (see
:mod:`vykhukhol.render`). No header is ever taken from user input: names,
subjects and ids pass :func:`clean_header_text`, names and subjects are then
written by :mod:`.headers` itself (never decoded and refolded by the e-mail
package, whatever its patch level), addresses are checked, and nothing lets
a caller add an arbitrary header.

What is where (the transports build on :mod:`.transport`; :mod:`.opener` sits
above them; nothing imports this file from inside the package):

- :mod:`.config` — :class:`MailConfig` and :func:`config_from_settings`
  (the settings never import mail; mail reads the settings);
- :mod:`.headers` — the policy, and what may stand in a header (names,
  subjects, addresses, list ids, links);
- :mod:`.message` — :func:`build_message` and :class:`Press`;
- :mod:`.transport` — failures and the common hand-over;
- :mod:`.smtp`, :mod:`.sendmail`, :mod:`.outbox` — one transport each
  (:func:`show_outbox`: any outbox file as text for the admin's pages);
- :mod:`.opener` — :func:`open_transport`, which checks the config and
  chooses among the transports;
- :mod:`.lanes` — several SMTP connections at once, for a relay (imported
  only by runs that use them);
- :mod:`.dkim` — the DKIM key, its DNS record and the signer (imported only
  when signing is on, or the key is checked);
- without the e-mail package, for a subscribe post's confirmation request
  (:mod:`.confirm_letter`): :mod:`.header_values` (names, subjects,
  addresses), :mod:`.quick_letter` (a plain-text letter's bytes),
  :mod:`.failures`, :mod:`.outbox_files` and :mod:`.sendmail_pipe` (the
  hand-over, shared with the transports).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:  # each loaded when first named (below)
    from vykhukhol.mail.config import SECURITIES, TRANSPORTS, MailConfig, config_from_settings
    from vykhukhol.mail.headers import POLICY, check_address, clean_header_text
    from vykhukhol.mail.message import Outgoing, Press, build_message
    from vykhukhol.mail.opener import open_transport
    from vykhukhol.mail.outbox import OutboxTransport, list_outbox, read_outbox, show_outbox
    from vykhukhol.mail.sendmail import SendmailTransport
    from vykhukhol.mail.smtp import SmtpTransport
    from vykhukhol.mail.transport import (
        DeliveryError,
        PermanentFailure,
        TemporaryFailure,
        Transport,
    )

__all__ = [
    "POLICY",
    "SECURITIES",
    "TRANSPORTS",
    "DeliveryError",
    "MailConfig",
    "OutboxTransport",
    "Outgoing",
    "PermanentFailure",
    "Press",
    "SendmailTransport",
    "SmtpTransport",
    "TemporaryFailure",
    "Transport",
    "build_message",
    "check_address",
    "clean_header_text",
    "config_from_settings",
    "list_outbox",
    "open_transport",
    "read_outbox",
    "show_outbox",
]

# Every name loads its module when first named: a transport's module only when
# it is chosen (a run over SMTP does not import the outbox's or sendmail's),
# and the e-mail package not at all for the confirmation request a subscribe
# post writes to the outbox (.quick_letter), which imports only what it needs.
_LATER = {"SECURITIES": "config", "TRANSPORTS": "config", "MailConfig": "config",
          "config_from_settings": "config", "POLICY": "headers", "check_address": "headers",
          "clean_header_text": "headers", "Outgoing": "message", "Press": "message",
          "build_message": "message", "open_transport": "opener", "DeliveryError": "transport",
          "PermanentFailure": "transport", "TemporaryFailure": "transport",
          "Transport": "transport", "OutboxTransport": "outbox", "list_outbox": "outbox",
          "read_outbox": "outbox", "show_outbox": "outbox", "SendmailTransport": "sendmail",
          "SmtpTransport": "smtp"}


def __getattr__(name: str) -> object:
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_LATER[name]}"), name)
    globals()[name] = value
    return value
