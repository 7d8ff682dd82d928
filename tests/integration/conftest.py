"""Fixtures the integration tests share, from tests/support: aiosmtpd on
loopback (``smtp_server``, ``closed_port``), the checkout copied as an admin
uploads it (``install``), Apache with mod_cgi over such a copy (``apache``),
and ``vykhukhol serve`` with its delivery callbacks (``hooked``).
"""

from support.apachekit import apache  # noqa: F401 - fixtures
from support.cgikit import install  # noqa: F401
from support.hookkit import hooked  # noqa: F401
from support.smtpkit import closed_port, smtp_server  # noqa: F401
