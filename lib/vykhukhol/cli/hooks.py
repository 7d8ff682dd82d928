"""``vykhukhol hooks [--new-key]``: each provider's callback URL and the steps
to paste it into that provider's console (README §17 says the same at length).

The URL carries ``hooks.key``, so it is printed only to the owner at the
terminal; ``--new-key`` makes a fresh key (the old URLs stop working at once).
"""

from __future__ import annotations

import re

from vykhukhol import settings as settings_mod
from vykhukhol.bounces.providers import PROVIDERS

STEPS = {
    "ses": ("Amazon SES through SNS",
            "SNS console: Topics > Create topic (Standard); Subscriptions > Create subscription: "
            "protocol HTTPS, endpoint the URL above; leave raw message delivery off. It confirms "
            "itself at the first request.",
            "SES console: Verified identities > your domain > Notifications: Bounce and Complaint "
            "feedback to that topic (tick \"Include original headers\")."),
    "postmark": ("Postmark",
                 "Servers > your server > the message stream > Webhooks > Add webhook: "
                 "the URL above; tick Bounce and Spam Complaint.",
                 "Optional: set HTTP Auth there and the same in hooks.postmark_user and "
                 "hooks.postmark_password."),
    "mailgun": ("Mailgun",
                "Sending > Webhooks (your domain): add the URL above for Permanent Failure, "
                "Temporary Failure, Spam Complaints and Unsubscribes.",
                "Copy the HTTP webhook signing key shown there into hooks.mailgun_signing_key "
                "(`vykhukhol settings set hooks.mailgun_signing_key`)."),
    "sendgrid": ("SendGrid",
                 "Settings > Mail Settings > Event Webhooks > Create new webhook: the URL above; "
                 "tick Bounced, Dropped, Spam Reports, Unsubscribes and Group Unsubscribes.",
                 "Turn on Signed Event Webhook there and copy its verification key into "
                 "hooks.sendgrid_public_key."),
    "generic": ("Any other provider or script",
                "POST a JSON object (or an array of them) to the URL above: "
                "{\"address\": …, \"kind\": \"permanent\"|\"temporary\"|\"complaint\"|"
                "\"unsubscribe\", \"diagnostic\": …, \"id\": …}.",),
}


# The SMTP hosts of the providers above: sending through one, the bounces come by callback.
PROVIDER_HOSTS = {"ses": re.compile(r"email-smtp\.[a-z0-9-]+\.amazonaws\.com"),
                  "postmark": re.compile(r"smtp(-broadcasts)?\.postmarkapp\.com"),
                  "mailgun": re.compile(r"smtp(\.eu)?\.mailgun\.org"),
                  "sendgrid": re.compile(r"smtp\.sendgrid\.net")}
QUIET_DAYS = 7  # a provider's callbacks silent this long: the status page asks to check them


def provider_of(smtp_host: str) -> str | None:
    """The provider whose SMTP host this is, or None."""
    host = smtp_host.strip().lower().rstrip(".")
    return next((name for name, pattern in PROVIDER_HOSTS.items() if pattern.fullmatch(host)), None)


def quiet_provider(data, settings) -> str | None:
    """The provider letters go through when none of the providers' callbacks
    has come in :data:`QUIET_DAYS` days (a refused one does not count), else None."""
    from datetime import timedelta

    from vykhukhol import files
    from vykhukhol.bounces import record
    from vykhukhol.timeutil import now, parse_time

    provider = provider_of(settings["mail.smtp_host"]) if settings["mail.transport"] == "smtp" else None
    if provider is None:
        return None
    since = now() - timedelta(days=QUIET_DAYS)
    log = record.log_path(data)
    for path in (log, log.with_name(log.name + ".1")):
        for line in files.read_lines(path):
            parts = line.split("\t")
            if len(parts) == 7 and parts[5] in PROVIDERS and parts[2] != "callback refused":
                try:
                    if parse_time(parts[0]) >= since:
                        return None
                except Exception:  # noqa: BLE001 - a torn line
                    continue
    return provider


def url(site_url: str, provider: str, key: str) -> str:
    return f"{site_url.rstrip('/')}/cgi/hook.py/{provider}?key={key}"


def new_key(settings_path) -> str:
    """A fresh hooks.key, written to settings.ini; returns it."""
    key = settings_mod.new_secret()
    settings_mod.update(settings_path, {"hooks.key": key})
    return key


def text(settings: settings_mod.Settings, key: str | None = None) -> str:
    """What ``vykhukhol hooks`` prints."""
    key = key if key is not None else settings["hooks.key"]
    if not key:
        return ("hooks.key is not set, so every callback is refused: "
                "run `vykhukhol hooks --new-key`.\n")
    lines = []
    if not settings["site_url"].startswith("https://"):
        lines.append("note: site_url is not https; providers want an https URL, and the key "
                     "travels in it.\n")
    for provider in PROVIDERS:
        title, *steps = STEPS[provider]
        lines.append(f"{title}:\n  {url(settings['site_url'], provider, key)}\n")
        lines += [f"  {number}. {step}\n" for number, step in enumerate(steps, start=1)]
        lines.append("\n")
    lines.append("README §17 tells more. `vykhukhol hooks --new-key` makes a new key "
                 "(the URLs above then stop working).\n")
    return "".join(lines)


def command(ctx, args) -> None:
    """The ``hooks`` command (registered in the CLI)."""
    settings = ctx.settings()
    key = new_key(ctx.data.settings) if args.new_key else None
    if key:
        print("a new hooks.key is set; paste the new URLs into each provider's console.")
    print(text(settings, key), end="")


def register(sub) -> None:
    p = sub.add_parser("hooks", help="the mail providers' callback URLs and how to set them up")
    p.add_argument("--new-key", action="store_true", help="make a new key first (old URLs stop working)")
    p.set_defaults(func=command)
