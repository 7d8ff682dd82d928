"""What ``vykhukhol hooks`` prints: each provider's callback URL and the
steps to paste it into that provider's console
(docs/deliverability/providers.md#provider-callbacks says the same at length).

The URL carries ``hooks.key``, so it is printed only to the owner at the
terminal; ``--new-key`` makes a fresh key (the old URLs stop working at once).
"""

from __future__ import annotations

from vykhukhol import settings as settings_mod
from vykhukhol.bounces.providers import PROVIDERS, TITLES

STEPS = {
    "ses": (TITLES["ses"],
            "SNS console: Topics > Create topic (Standard); Subscriptions > Create subscription: "
            "protocol HTTPS, endpoint the URL above; leave raw message delivery off. It confirms "
            "itself at the first request.",
            "SES console: Verified identities > your domain > Notifications: Bounce and Complaint "
            "feedback to that topic (tick \"Include original headers\")."),
    "postmark": (TITLES["postmark"],
                 "Servers > your server > the message stream > Webhooks > Add webhook: "
                 "the URL above; tick Bounce and Spam Complaint.",
                 "It is off until you set Basic auth credentials there and the same in "
                 "hooks.postmark_user and hooks.postmark_password (`vykhukhol settings set "
                 "hooks.postmark_password`)."),
    "mailgun": (TITLES["mailgun"],
                "Sending > Webhooks (your domain): add the URL above for Permanent Failure, "
                "Temporary Failure, Spam Complaints and Unsubscribes.",
                "Copy the HTTP webhook signing key shown there into hooks.mailgun_signing_key "
                "(`vykhukhol settings set hooks.mailgun_signing_key`)."),
    "sendgrid": (TITLES["sendgrid"],
                 "Settings > Mail Settings > Event Webhooks > Create new webhook: the URL above; "
                 "tick Bounced, Dropped, Spam Reports, Unsubscribes and Group Unsubscribes.",
                 "Turn on Signed Event Webhook there and copy its verification key into "
                 "hooks.sendgrid_public_key."),
    "generic": (TITLES["generic"],
                "POST a JSON object (or an array of them) to the URL above: "
                "{\"address\": …, \"kind\": \"permanent\"|\"temporary\"|\"complaint\"|"
                "\"unsubscribe\", \"diagnostic\": …, \"id\": …}.",
                "It is off until hooks.generic_secret is set (`vykhukhol settings set "
                "hooks.generic_secret`, at least 32 letters, digits, - or _); then sign each body: "
                "header X-Vykhukhol-Signature: sha256= and the hex HMAC-SHA256 of the body under "
                "that secret (the manual, docs/deliverability/providers.md)."),
}


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
    lines.append("The manual, docs/deliverability/providers.md, tells more. "
                 "`vykhukhol hooks --new-key` makes a new key (the URLs above then stop working).\n")
    return "".join(lines)
