"""The admin's route table: every URL, its method and its page, in one list
read top to bottom (the first rule that matches wins, as in Werkzeug's
``Map([Rule(...)])``), and :func:`app`, the admin app over it.

The pages are plain functions in their modules and register nothing; a URL
exists because it is written here. ``public=True`` marks the only pages open
without a session (the login); every other page needs one, and every POST
the session's CSRF token (:func:`.core.serve`). The pages that create or send
are wrapped in :func:`.once.once_only`: their form's one-time token makes a
second press (Back and the button again) show what the first one did.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import vykhukhol.web.admin.apitokens as apitokens
import vykhukhol.web.admin.bounces as bounces
import vykhukhol.web.admin.dashboard as dashboard
import vykhukhol.web.admin.deliverability as deliverability
import vykhukhol.web.admin.fields as fields
import vykhukhol.web.admin.footer as footer
import vykhukhol.web.admin.held as held
import vykhukhol.web.admin.intake as intake
import vykhukhol.web.admin.login as login
import vykhukhol.web.admin.newsletters as newsletters
import vykhukhol.web.admin.outbox as outbox
import vykhukhol.web.admin.removed as removed
import vykhukhol.web.admin.series as series
import vykhukhol.web.admin.services as services
import vykhukhol.web.admin.settings as settings
import vykhukhol.web.admin.subscribers as subscribers
import vykhukhol.web.admin.suppressed as suppressed
import vykhukhol.web.admin.twofactor as twofactor
import vykhukhol.web.admin.webhooks as webhooks
from vykhukhol.datadir import DataDir
from vykhukhol.web.admin.core import Rule, serve
from vykhukhol.web.admin.once import once_only

_SERVICE = "/services/(?P<name>[^/]+)"
_LETTER = _SERVICE + r"/letters/(?P<number>\d{1,3})"
_JOB = "/newsletters/(?P<job>[^/]+)"

ROUTES: list[Rule] = [
    Rule("GET", "/login", login.login_form, public=True),
    Rule("POST", "/login", login.login, public=True),
    Rule("POST", "/login/code", login.login_code, public=True),
    Rule("POST", "/logout", login.logout),
    Rule("GET", "/password", login.password_form),
    Rule("POST", "/password", login.password_change),
    Rule("GET", "/twofactor", twofactor.twofactor_page),
    Rule("POST", "/twofactor", twofactor.twofactor_on),
    Rule("POST", "/twofactor/off", twofactor.twofactor_off),

    Rule("GET", "/", dashboard.status),
    Rule("POST", "/mode", dashboard.change_mode),

    Rule("GET", "/settings", settings.settings_page),
    Rule("POST", "/settings", settings.settings_save),
    Rule("POST", "/settings/test", once_only(settings.settings_test)),
    Rule("POST", "/settings/footer", footer.footer_save),

    Rule("GET", "/fields", fields.fields_page),
    Rule("POST", "/fields", fields.fields_add),
    Rule("POST", "/fields/remove", fields.fields_remove),

    Rule("GET", "/services", services.services_page),
    Rule("POST", "/dbs", once_only(services.db_add)),
    Rule("POST", "/services", once_only(services.service_add)),
    Rule("GET", _SERVICE, services.service_page),
    Rule("POST", _SERVICE, services.service_edit),
    Rule("POST", _SERVICE + "/(?P<action>enable|disable)", services.service_toggle),
    Rule("POST", _SERVICE + "/(?P<action>close|open)", services.service_signups),
    Rule("POST", _SERVICE + "/archive/(?P<action>on|off)", services.service_archive),
    Rule("POST", _SERVICE + "/resume", services.service_resume),
    Rule("POST", _SERVICE + "/feed", intake.feed_save),
    Rule("POST", _SERVICE + "/feed/off", intake.feed_off),
    Rule("GET", _SERVICE + "/delete", services.service_delete_form),
    Rule("POST", _SERVICE + "/delete", services.service_delete),

    Rule("POST", _SERVICE + "/letters", once_only(series.letter_add)),
    Rule("GET", _SERVICE + "/letters/new", series.letter_new),
    Rule("GET", _LETTER, series.letter_page),
    Rule("POST", _LETTER, once_only(series.letter_save)),
    Rule("POST", _LETTER + "/(?P<action>up|down|delete)", series.letter_move),

    Rule("GET", _SERVICE + "/subscribers", subscribers.subscribers_page),
    Rule("POST", _SERVICE + "/subscribers", once_only(subscribers.subscriber_add)),
    Rule("POST", _SERVICE + "/subscribers/delete", subscribers.subscriber_delete),
    Rule("POST", _SERVICE + "/import", once_only(subscribers.subscribers_import)),
    Rule("POST", _SERVICE + "/import-from", intake.import_from),
    Rule("GET", _SERVICE + "/export.csv", subscribers.subscribers_export),

    Rule("GET", "/newsletters/new", newsletters.newsletter_form),
    Rule("POST", "/newsletters/new", once_only(newsletters.newsletter_create)),
    Rule("GET", "/newsletters", newsletters.newsletters_page),
    Rule("GET", _JOB + "/edit", newsletters.newsletter_edit_form),
    Rule("POST", _JOB + "/edit", once_only(newsletters.newsletter_edit)),
    Rule("POST", _JOB + "/cancel", newsletters.newsletter_cancel),
    Rule("POST", _JOB + "/start", newsletters.newsletter_start),
    Rule("POST", _JOB + "/resume", newsletters.newsletter_resume),
    Rule("GET", _JOB + "/failed", newsletters.newsletter_failed),
    Rule("POST", _JOB + "/resend", once_only(newsletters.newsletter_resend)),

    Rule("GET", "/outbox", outbox.outbox_page),
    Rule("GET", r"/outbox/(?P<file>[A-Za-z0-9@._+-]{1,300}\.eml)", outbox.outbox_letter),

    Rule("GET", "/bounces", bounces.bounces_page),
    Rule("GET", r"/bounces/kept/(?P<file>[0-9]{8}-[0-9]{6}-[0-9a-f]{16}\.eml)", bounces.bounce_kept),

    Rule("GET", "/deliverability", deliverability.deliverability_page),

    Rule("GET", "/suppressed", suppressed.suppressed_page),
    Rule("POST", "/suppressed", once_only(suppressed.suppressed_add)),
    Rule("POST", "/suppressed/remove", suppressed.suppressed_remove),
    Rule("POST", "/suppressed/import", once_only(suppressed.suppressed_import)),
    Rule("GET", "/suppressed.csv", suppressed.suppressed_export),
    Rule("GET", "/tokens", apitokens.tokens_page),
    Rule("POST", "/tokens", apitokens.tokens_add),
    Rule("POST", "/tokens/revoke", apitokens.tokens_revoke),
    Rule("GET", "/webhooks", webhooks.webhooks_page),
    Rule("POST", "/webhooks", webhooks.webhooks_add),
    Rule("POST", "/webhooks/test", once_only(webhooks.webhooks_test)),
    Rule("POST", "/webhooks/switch", webhooks.webhooks_switch),
    Rule("POST", "/webhooks/remove", webhooks.webhooks_remove),

    Rule("GET", "/held", held.held_page),
    Rule("POST", "/held/release", held.held_release),
    Rule("POST", "/held/drop", held.held_drop),
    Rule("GET", "/removed", removed.removed_page),
    Rule("POST", "/removed/restore", removed.removed_restore),
]


def app(data: DataDir, cgi_dir: Path | None = None) -> Callable:
    """The admin app; ``cgi_dir`` is where the cron script lives (for its URL)."""
    return serve(data, ROUTES, cgi_dir)
