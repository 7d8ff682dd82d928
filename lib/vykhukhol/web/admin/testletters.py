"""Test letters of the admin's editors (a series letter, a letter to all
users): of the letter as it stands on the form, saved or not, to the address
typed beside the button (``admin_email`` until one is typed), "[test]" before
its subject, made for the sample subscriber (their name, their address, their
links) so that it reads as a recipient's letter would.

A letter written in the other language as well (docs/using/services.md#letter-languages)
is tested in both: two letters, each subject marked with the language it is
in ("[test: English]"), the second with that language's footer.

Only the ``To`` header and the envelope name the typed address: the letter
itself is the sample's, whose address no subscriber can have
(``tokens.TEST_ADDRESS``), so no real subscriber's links are in it and its
unsubscribe link opens a page that says it came from a test and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from vykhukhol import mail
from vykhukhol.addresses import check_email
from vykhukhol.errors import BadInput
from vykhukhol.i18n import t
from vykhukhol.tokens import TEST_ADDRESS
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.admin.letter_versions import other_language
from vykhukhol.web.admin.settings import send_now

#: Whose variables a preview and a test letter show; the name in the admin's
#: language (:func:`sample_name`).
SAMPLE = {"name": "Ivan", "email": TEST_ADDRESS}


def sample_name(admin: Admin) -> str:
    """The sample subscriber's name as the admin's language writes it (Иван)."""
    return admin._("Ivan")


def mark(admin: Admin, subject: str, language: str | None = None) -> str:
    """The subject of a test letter: the mark, then the letter's own;
    ``language``: the one it is written in, named when the letter has two."""
    if language is None:
        return f"{admin._('[test]')} {subject}"
    return f"{admin._('[test: {language}]', language=t(language, 'language.name'))} {subject}"


def recipient(admin: Admin, typed: str) -> str:
    """The address a test letter goes to: the one typed, else ``admin_email``;
    BadInput when there is none or it is not an address."""
    typed = typed.strip() or admin.settings["admin_email"]
    if not typed:
        raise BadInput("type the address the test letter goes to (or set admin_email)")
    return check_email(typed)


def send_test(admin: Admin, typed: str,
              make: Callable[[str, str], mail.Outgoing],
              other: Callable[[str, str], mail.Outgoing] | None = None) -> str:
    """Make the letter for the sample (``make(email, name)``), address it to
    the typed address and send it at once; returns what to tell the admin.
    ``other``: the letter in the other language, sent after it (each is made
    before either goes, so a version that cannot be made sends nothing).
    BadInput (the address, the letter's templates) is for the form to show."""
    to = recipient(admin, typed)
    made = [each(SAMPLE["email"], sample_name(admin)) for each in (make, other) if each]
    said = []
    for outgoing in made:
        message = outgoing.message()
        del message["To"]
        message["To"] = to
        said.append(send_now(admin, mail.Outgoing(message.as_bytes(policy=mail.POLICY),
                                                  outgoing.from_address, outgoing.envelope_from), to))
    if len(made) == 1:
        return said[0]
    languages = (admin.settings["language"], other_language(admin))
    return " ".join(f"{t(lang, 'language.name')}: {text}" for lang, text in zip(languages, said, strict=True))
