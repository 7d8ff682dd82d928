"""E-mail address and display-name checks shared by forms, CLI and imports."""

from __future__ import annotations

import unicodedata

from vykhukhol.errors import BadInput

MAX_EMAIL = 254  # RFC 5321 path limit
MAX_NAME = 100   # SPEC 3: a subscriber's name, at most 100 characters


def check_email(address: str) -> str:
    """The address with its domain lower-cased, or BadInput saying why not."""
    from email_validator import EmailNotValidError, validate_email

    address = (address or "").strip()
    if not address:
        raise BadInput("an e-mail address is required")
    if len(address) > MAX_EMAIL or any(ch in address for ch in "\r\n\t\0 "):
        raise BadInput("this e-mail address is not valid")
    try:
        result = validate_email(address, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError as exc:
        raise BadInput(f"this e-mail address is not valid: {exc}") from None
    local, _, domain = address.rpartition("@")
    # Keep the local part as given (SPEC 3) but the domain in the validator's lower-case form.
    return f"{local}@{(result.ascii_domain or result.domain).lower()}"


def email_key(address: str) -> str:
    """What makes two addresses the same subscriber: the whole address lower-cased."""
    return address.strip().lower()


def clean_name(name: str) -> str:
    """A display name: control characters (tabs, line breaks) removed, length capped."""
    text = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in (name or ""))
    return " ".join(text.split())[:MAX_NAME]
