"""What the mail settings become for the transports: the SMTP greeting's name
(the host of site_url or mail.helo_name, never a bare address:
docs/reference/transports.md#transports)."""

from __future__ import annotations

import pytest

from vykhukhol.errors import BadInput
from vykhukhol.mail.config import greeting_name
from vykhukhol.settings import Settings, check


@pytest.mark.parametrize("raw, name", [
    ({"site_url": "https://Lists.Example.org/news"}, "lists.example.org"),
    ({"site_url": "https://lists.example.org", "mail.helo_name": "mx.example.net"},
     "mx.example.net"),
    ({"site_url": "http://127.0.0.1:8080", "mail.from_email": "news@example.org"}, "example.org"),
    ({"site_url": "http://[::1]:8080", "mail.from_email": "news@example.org"}, "example.org"),
    ({"site_url": "http://localhost:8080", "mail.from_email": "news@example.org"}, "example.org"),
])
def test_the_greeting_names_a_host_never_an_address(raw, name):
    assert greeting_name(Settings(raw)) == name


@pytest.mark.parametrize("value", ["[127.0.0.1]", "127.0.0.1", "mail example", "a\r\nRCPT TO:<x>",
                                   "-bad.example.org"])
def test_a_helo_name_that_is_not_a_domain_is_refused(value):
    with pytest.raises(BadInput, match="mail.helo_name"):
        check("mail.helo_name", value)
