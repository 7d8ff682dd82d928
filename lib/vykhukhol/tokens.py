"""Signed links: HMAC-SHA256 over (service, lower-cased email, purpose), and
over (lower-cased email, purpose) for the subscriber's own page, which is
about an address in every service (docs/using/own-page.md#own-page), and over (letter, link number)
for a counted link of a letter (``cgi/go.py``, :mod:`vykhukhol.newsletters.clicks`).

Tokens are compared in constant time. The HMAC is computed here on the
interpreter's own SHA-256 rather than by :mod:`hmac`: hmac and hashlib load
OpenSSL's ``_hashlib``, about 2 ms of every link page's start-up
(docs/design/startup.md#startup-rules); a test holds the two equal. They carry no expiry: a subscriber may
confirm or leave from an old letter, and the secret can be changed to void
every link at once.
"""

from __future__ import annotations

from _operator import _compare_digest as _equal  # hmac.compare_digest without OpenSSL's

TYPE_CHECKING = False  # typing itself is not imported: a link page pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _own_sha256() -> Callable[[bytes], Any]:
    """The interpreter's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` from
    3.12), or hashlib's where the interpreter was built without it."""
    for name in ("_sha256", "_sha2"):
        try:
            return __import__(name).sha256
        except ImportError:
            pass
    from hashlib import sha256

    return sha256


_sha256 = _own_sha256()

#: The sample subscriber's address in the admin's previews and test letters: a
#: reserved name (RFC 2606) that no subscriber can have, so the links of a test
#: letter belong to nobody and the pages they open say so and change nothing.
TEST_ADDRESS = "ivan@test.invalid"

PURPOSES = ("confirm", "unsubscribe", "view")
ADDRESS_PURPOSES = ("manage",)  # signed by address alone: a page about every service
TOKEN_LENGTH = 32  # hex characters kept: 128 bits

_BLOCK = 64  # bytes: SHA-256's block, the HMAC key's length (RFC 2104)
_INNER = bytes(byte ^ 0x36 for byte in range(256))
_OUTER = bytes(byte ^ 0x5C for byte in range(256))


def mac(secret: bytes, message: bytes) -> bytes:
    """HMAC-SHA256 of ``message`` under ``secret``, its 32 bytes:
    ``hmac.new(secret, message, hashlib.sha256).digest()``."""
    key = _sha256(secret).digest() if len(secret) > _BLOCK else bytes(secret)
    key = key.ljust(_BLOCK, b"\0")
    inner = _sha256(key.translate(_INNER))
    inner.update(message)
    outer = _sha256(key.translate(_OUTER))
    outer.update(inner.digest())
    return outer.digest()


def sign(secret: bytes, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` under ``secret`` in hex, cut to
    :data:`TOKEN_LENGTH`: ``hmac.new(secret, message, hashlib.sha256)``."""
    return mac(secret, message).hex()[:TOKEN_LENGTH]


TYPE_CHECKING = False  # a form's stamp signs with this module on the page's fast path: no re there
if TYPE_CHECKING:
    import re

_UNSAFE: list[re.Pattern[str]] = []  # what urllib's quote_plus keeps is all the rest, compiled at first use


def _unsafe() -> re.Pattern[str]:
    if not _UNSAFE:
        import re

        _UNSAFE.append(re.compile(r"[^A-Za-z0-9_.~-]"))
    return _UNSAFE[0]


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return "+" if char == " " else "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def query(fields: dict[str, str]) -> str:
    """``urllib.parse.urlencode(fields)``, byte for byte (a test holds them
    together), at a quarter of its cost: three links a letter."""
    unsafe = _unsafe()
    return "&".join(f"{unsafe.sub(_escaped, key)}={unsafe.sub(_escaped, value)}"
                    for key, value in fields.items())


def make(secret: bytes, service: str, email: str, purpose: str) -> str:
    if purpose not in PURPOSES:
        raise ValueError(f"unknown token purpose {purpose!r}")
    message = "\n".join((service, email.strip().lower(), purpose)).encode("utf-8")
    return sign(secret, message)


def check(secret: bytes, service: str, email: str, purpose: str, token: str) -> bool:
    if not isinstance(token, str) or len(token) != TOKEN_LENGTH or not token.isascii():
        return False  # compare_digest refuses non-ASCII text; such a token is forged anyway
    return _equal(make(secret, service, email, purpose), token)


def link(site_url: str, script: str, secret: bytes, service: str, email: str, purpose: str,
         job: str | None = None, *, language: str | None = None) -> str:
    """The full URL of a confirm or unsubscribe page for one subscriber; ``job``
    (a newsletter's) only says which letter the link came from, for the
    newsletters' history, and ``language`` (``hl``) the reader's own, for the
    page's words (docs/using/languages.md#reader-language): neither is signed,
    and neither grants anything."""
    fields = {"s": service, "e": email, "t": make(secret, service, email, purpose)}
    if job:
        fields["n"] = job
    if language:
        fields["hl"] = language
    return f"{site_url.rstrip('/')}/cgi/{script}?{query(fields)}"


def unsubscribe_link(site_url: str, secret: bytes, service: str, email: str,
                     job: str | None = None, *, language: str | None = None) -> str:
    return link(site_url, "unsubscribe.py", secret, service, email, "unsubscribe", job,
                language=language)


def confirm_link(site_url: str, secret: bytes, service: str, email: str, *,
                 language: str | None = None) -> str:
    return link(site_url, "confirm.py", secret, service, email, "confirm", language=language)


def view_token(secret: bytes, service: str, email: str, item: str) -> str:
    """The token of a recipient's own copy of one letter: ``item`` is a series
    letter's number or a newsletter job's name (neither holds a ':', nor does
    a service name, so no two letters share a signed text)."""
    return make(secret, f"{service}:{item}", email, "view")


def view_link(site_url: str, secret: bytes, service: str, email: str, item: str, *,
              language: str | None = None) -> str:
    """``{{ web_url }}`` of a letter that is not in a public archive: the
    recipient's own copy, rendered for them (cgi/view.py); ``language``
    (``hl``, unsigned) the letter's version to show and the page's words."""
    made = {"s": service, "l": item, "e": email, "t": view_token(secret, service, email, item)}
    if language:
        made["hl"] = language
    return f"{site_url.rstrip('/')}/cgi/view.py?{query(made)}"


def make_for_address(secret: bytes, email: str, purpose: str) -> str:
    """The token over (address, purpose). Two parts where a service's token has
    three, and an address always holds an @ that no service name does, so no
    service token is ever an address token."""
    if purpose not in ADDRESS_PURPOSES:
        raise ValueError(f"unknown token purpose {purpose!r}")
    message = "\n".join((email.strip().lower(), purpose)).encode("utf-8")
    return sign(secret, message)


def check_for_address(secret: bytes, email: str, purpose: str, token: str) -> bool:
    if not isinstance(token, str) or len(token) != TOKEN_LENGTH or not token.isascii():
        return False
    if not isinstance(email, str) or "@" not in email:
        return False
    return _equal(make_for_address(secret, email, purpose), token)


def manage_link(site_url: str, secret: bytes, email: str, *, language: str | None = None) -> str:
    """The full URL of the subscriber's own page for ``email``; ``language``
    (``hl``, unsigned) only says in which language to draw it."""
    made = {"e": email, "t": make_for_address(secret, email, "manage")}
    if language:
        made["hl"] = language
    fields = query(made)
    return f"{site_url.rstrip('/')}/cgi/manage.py?{fields}"


def click_token(secret: bytes, letter: str, number: int) -> str:
    """The token of link ``number`` of ``letter`` (a letter id of
    :mod:`vykhukhol.newsletters.clicks`). Two parts, the first with a ':' that
    no address holds and the second digits, never a purpose: no other token
    signs the same text."""
    message = f"go:{letter}\n{number}".encode()
    return sign(secret, message)


def check_click(secret: bytes, letter: str, number: int, token: str) -> bool:
    if not isinstance(token, str) or len(token) != TOKEN_LENGTH or not token.isascii():
        return False
    return _equal(click_token(secret, letter, number), token)


def click_link(site_url: str, secret: bytes, letter: str, number: int) -> str:
    """The counted form of a letter's link: ``cgi/go.py`` with the letter, the
    link's number and their token (the target itself is not in it)."""
    token = click_token(secret, letter, number)
    return f"{site_url.rstrip('/')}/cgi/go.py?l={letter}&n={number}&t={token}"
