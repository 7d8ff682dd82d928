"""The admin pages (SPEC 10): where the site owner lives.

One WSGI app, routed on PATH_INFO, the same under ``admin/index.py`` (CGI) and
``/admin/`` under ``vykhukhol serve``. Every page but the login needs a
session; every POST needs the session's CSRF token. Forms are checked as a
whole before anything is written: a page with an error shows the values the
person typed and changes nothing.

What is where:

- ``core``: the :class:`~core.Admin` request view, the router, and :func:`app`
  (session and CSRF checks before any page);
- ``login``: login, logout, the admin password;
- ``status``: the status page, the mode switch, warnings, the chart, recent runs;
- ``settings``: the settings page, its save, the test letter (``send_now``);
- ``services``: services and DBs, the subscribe form snippet;
- ``series``: a service's letters: editor, preview, test, move and delete;
- ``subscribers``: list, add, delete, import, CSV export;
- ``newsletters``: letters to all users;
- ``outbox`` and ``bounces``: what went out, and what came back.

A page module registers its routes when imported; they are imported here, in
the order their routes were always matched.
"""

# In the order the routes were always matched (no two patterns overlap, but
# the order stays by construction).
from vykhukhol.web.admin import (  # noqa: F401, I001 - imported for their routes
    login,
    status,
    settings,
    services,
    series,
    subscribers,
    newsletters,
    outbox,
    bounces,
)
from vykhukhol.web.admin.core import app
from vykhukhol.web.admin.settings import SETTINGS_SHOWN
from vykhukhol.web.admin.status import recent_runs

__all__ = ["SETTINGS_SHOWN", "app", "recent_runs"]
