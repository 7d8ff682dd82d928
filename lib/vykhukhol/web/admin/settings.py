"""The settings page, its save, and the test letter (``send_now`` also sends
the series' and newsletters' test letters)."""

from __future__ import annotations

import vykhukhol.web.admin.footer as footer
from vykhukhol import mail
from vykhukhol import settings as settings_mod
from vykhukhol.archive import pages
from vykhukhol.errors import BadInput, Forbidden
from vykhukhol.i18n import SETTING_LABELS, spoken
from vykhukhol.mail.dkim import verify_settings
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response

SETTINGS_SHOWN = [k for k, spec in settings_mod.KEYS.items() if spec.web and k not in (
    "mode", "security.secret", "security.admin_password", "security.admin_totp",
    "security.admin_recovery")]
# What names a program or a path on the host: shown, never changed from the web
# (docs/using/settings.md#settings-host).
SETTINGS_HOST_ONLY = [k for k, spec in settings_mod.KEYS.items() if not spec.web]

def _(text: str) -> str:
    """Marks a title for the catalog (tools/i18n.py); the page translates it."""
    return text


#: The page's groups: (id, title, the fields shown, the rarely changed ones
#: folded away under <details>). A shown setting no group names (a new one)
#: joins the first group, so none is ever left off the page.
GROUPS = [
    ("site", _("The site"), ["admin_email", "site_url", "language", "timezone"], []),
    ("sending", _("Sending and limits"),
     ["news_per_run", "serial_per_run", "hourly_limit", "daily_limit", "reminder_period",
      "reminder_count"],
     ["time_limit", "subscribe_hourly_limit", "subscribe_address_daily_limit",
      "subscribe_alarm", "subscribe_challenge", "cron_allow", "trusted_proxies"]),
    ("server", _("The mail server"),
     ["mail.transport", "mail.from_email", "mail.smtp_host", "mail.smtp_port",
      "mail.smtp_security", "mail.smtp_user", "mail.smtp_password"],
     ["mail.helo_name", "mail.smtp_connections", "mail.dev_redirect", "mail.relay_ip"]),
    ("bounces", _("Bounces"), ["bounce_limit", "bounce_reset", "mail.bounce_address",
                            "mail.bounce_mailbox"],
     ["complaint_brake", "bounce_brake", "mail.verp_separator"]),
    ("dkim", _("DKIM"), [], ["mail.dkim_domain", "mail.dkim_selector", "dns.resolver"]),
    ("providers", _("Providers (bounce and complaint callbacks)"), [],
     ["hooks.key", "hooks.mailgun_signing_key", "hooks.sendgrid_public_key",
      "hooks.postmark_user", "hooks.postmark_password"]),
]


def groups(errors: dict[str, str]) -> list[dict]:
    """The groups of the page, each with its shown and folded keys (only keys
    the page shows); a fold holding a field with an error is open."""
    named = {key for _, _, shown, folded in GROUPS for key in shown + folded}
    result = []
    for number, (ident, title, shown, folded) in enumerate(GROUPS):
        extra = [key for key in SETTINGS_SHOWN if key not in named] if number == 0 else []
        main = [key for key in shown if key in SETTINGS_SHOWN] + extra
        rare = [key for key in folded if key in SETTINGS_SHOWN]
        result.append({"id": ident, "title": title, "shown": main, "folded": rare,
                       "open": any(key in errors for key in rare)})
    return result


def _settings_values(admin: Admin) -> dict[str, str]:
    return {k: admin.settings.raw.get(k, settings_mod.KEYS[k].default)
            for k in SETTINGS_SHOWN + SETTINGS_HOST_ONLY}


def settings_page(admin: Admin, args: dict) -> Response:
    from vykhukhol.members import held

    return admin.page("settings.html", keys=settings_mod.KEYS, groups=groups({}),
                      host_only=SETTINGS_HOST_ONLY, values=_settings_values(admin), errors={},
                      labels=SETTING_LABELS, footer_form=footer.shown(admin),
                      spoken=lambda text: spoken(admin.lang, text),
                      holding=held.holding(admin.data))


def settings_save(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    before = admin.lang
    # The form has no such field: a POST that has one was made by hand. Refuse it
    # whole (nothing saved), rather than save the rest as if all were well.
    for key in SETTINGS_HOST_ONLY:
        if key in form:
            raise Forbidden(admin._("{key} is changed only with the command line (`vykhukhol settings set`) or in settings.ini, never from the web; nothing was saved.", key=key))
    values, errors = {}, {}
    for key in SETTINGS_SHOWN:
        spec = settings_mod.KEYS[key]
        value = form.get(key, "")
        if spec.secret and value == "":
            continue  # an empty password field keeps the stored password
        values[key] = value
        try:
            settings_mod.check(key, value)
        except BadInput as exc:
            errors[key] = exc.text(admin.lang)
    if not errors:
        try:
            saved = settings_mod.update(admin.data.settings, values, verify_settings)
            admin.lang = saved["language"]
        except BadInput as exc:  # values fine one by one; the DKIM key they name is not
            errors["mail.dkim_domain"] = exc.text(admin.lang)
    if errors:
        shown = _settings_values(admin)
        shown.update(values)
        return admin.page("settings.html", 400, keys=settings_mod.KEYS, groups=groups(errors),
                          host_only=SETTINGS_HOST_ONLY, values=shown, errors=errors,
                          labels=SETTING_LABELS, footer_form=footer.shown(admin),
                      spoken=lambda text: spoken(admin.lang, text))
    if admin.lang != before:  # the public archive speaks the site's language at once
        pages.follow_language(admin.data, saved)
    return admin.done("/settings", admin._("Settings saved."))


def settings_test(admin: Admin, args: dict) -> Response:
    to = admin.settings["admin_email"]
    if not to:
        return admin.done("/settings", admin._("Set admin_email first."))
    message = mail.build_message(
        from_name="Vykhukhol", from_email=admin.settings["mail.from_email"] or to, to_email=to,
        subject=admin._("Vykhukhol test letter"),
        text=admin._("If you read this, the mail settings work."), run_id="admin-test")
    return admin.done("/settings", send_now(admin, message, to))


def send_now(admin: Admin, message, to: str) -> str:
    try:
        with mail.open_transport(mail.config_from_settings(admin.settings, admin.data.outbox)) as transport:
            transport.send(message, to)
    except mail.DeliveryError as exc:
        return admin._("The letter could not be sent: {detail}", detail=exc.detail)
    except BadInput as exc:  # the mail settings themselves (a sendmail_path that cannot run)
        return admin._("The letter could not be sent: {detail}", detail=exc.text(admin.lang))
    if admin.settings["mail.transport"] == "outbox":
        # Nothing leaves the host: say where the letter is, not where it would go.
        return admin._("The transport is outbox: the test letter to {to} was not sent, "
                       "it is on the Outbox page.", to=to)
    return admin._("A test letter went to {to}.", to=to)
