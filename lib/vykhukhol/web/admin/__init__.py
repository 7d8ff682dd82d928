"""The admin pages (docs/using/admin.md#admin): where the site owner lives.

One WSGI app, routed on PATH_INFO, the same under ``admin/index.py`` (CGI) and
``/admin/`` under ``vykhukhol serve``. Every page but the login needs a
session; every POST needs the session's CSRF token. Forms are checked as a
whole before anything is written: a page with an error shows the values the
person typed and changes nothing.

What is where:

- ``core``: the :class:`~core.Admin` request view, the :class:`~core.Rule`
  of a route, and the app that checks the session and CSRF before any page;
- ``routes``: the route table, every URL in one list, and :func:`app`;
- ``login``: login, logout, the admin password;
- ``status``: the status page, the mode switch, warnings, the chart, recent runs;
- ``settings``: the settings page, its save, the test letter (``send_now``);
- ``services``: services and DBs, the subscribe form snippet;
- ``series``: a service's letters: editor, preview, test, move and delete;
- ``subscribers``: list, add, delete, import, CSV export;
- ``newsletters``: letters to all users;
- ``outbox`` and ``bounces``: what went out, and what came back.
- ``once``: the one-time tokens of the forms that create or send;
- ``testletters``: a test of any letter, as it stands, to a typed address;
- ``downloads``: the CSV downloads in the separator the admin chose.

The URLs are one table, :data:`.routes.ROUTES`, read top to bottom; the page
modules register nothing.
"""

from vykhukhol.web.admin.dashboard import recent_runs
from vykhukhol.web.admin.routes import app
from vykhukhol.web.admin.settings import SETTINGS_SHOWN

__all__ = ["SETTINGS_SHOWN", "app", "recent_runs"]
