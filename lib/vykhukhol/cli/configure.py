"""The settings and how the letters look to receivers: ``settings get|set``,
``dkim keygen`` and ``doctor``."""

from __future__ import annotations

import json
import sys

from vykhukhol import settings as settings_mod
from vykhukhol.cli.common import (
    VALUE_ENV,
    Context,
    Parser,
    actions,
    add_command,
    note_if_visible,
    read_secret,
    warn_http,
)
from vykhukhol.errors import BadInput
from vykhukhol.mail import doctor

KEY_HELP = "news_per_run, or mail.smtp_port, security.secret …"


def settings_arguments(p: Parser) -> None:
    what = actions(p)
    add_command(what, "list", "every setting with its value and default, a header row first "
                              "(a secret one as (set))", "vykhukhol settings list")
    a = add_command(what, "get", "print a value (a secret one as (set))",
                    "vykhukhol settings get mail.smtp_host")
    a.add_argument("key", help=KEY_HELP)
    a.add_argument("--show", action="store_true", help="print a secret value instead of (set)")
    a = add_command(what, "set", "check and store a value",
                    "vykhukhol settings set news_per_run 100",
                    "vykhukhol settings set mail.smtp_password      # asks for it",
                    "vykhukhol settings set security.secret --generate")
    a.add_argument("key", help=KEY_HELP)
    a.add_argument("value", nargs="?",
                   help="e.g. 100, or 30s, 2h, 3d for durations; a secret key's value may be "
                        f"left out (asked for, or ${VALUE_ENV}) or - (read from standard input)")
    a.add_argument("--generate", action="store_true", help="a new random security.secret")


def cmd_settings(ctx: Context, args) -> None:
    current = ctx.settings()
    if args.action == "list":
        print("#key\tvalue\tdefault")
        for spec in settings_mod.KEYS.values():
            value = current.raw.get(spec.full, spec.default)
            if spec.secret:
                value = "(set)" if value else "(not set)"
            print(f"{spec.full}\t{value}\t{spec.default}")
        return
    spec = settings_mod.key(args.key)
    if args.action == "get":
        value = current.raw.get(spec.full, spec.default)
        if spec.secret and not args.show:
            value = "(set)" if value else "(not set)"
        print(value)
        return
    if spec.full == "security.admin_password":
        raise BadInput("set the admin password with `vykhukhol password`")
    if spec.full in ("security.admin_totp", "security.admin_recovery"):
        raise BadInput("turn two factors on with `vykhukhol password --totp`, off with --reset-totp")
    if spec.full == "mode":
        raise BadInput("switch the mode with `vykhukhol mode debug|working`")
    if args.generate:
        if spec.full != "security.secret":
            raise BadInput("--generate makes only security.secret")
        if args.value is not None:
            raise BadInput("give either a value or --generate, not both")
        value = settings_mod.new_secret()
    elif spec.secret:
        value = read_secret(args.value, spec.full, VALUE_ENV)
    elif args.value is None:
        raise BadInput(f"{spec.full}: give the value")
    else:
        value = args.value
    settings_mod.check(spec.full, value)
    settings_mod.check_on_host(spec.full, value)
    from vykhukhol.mail.dkim import verify_settings  # off the command line's start

    before = settings_mod.load(ctx.data.settings)["language"]
    saved = settings_mod.update(ctx.data.settings, {spec.full: value}, verify_settings)
    if saved["language"] != before:  # the public archive speaks the site's language at once
        from vykhukhol.archive import pages  # off the command line's start

        pages.follow_language(ctx.data, saved)
    # A secret is never echoed: not to the terminal, its scroll-back or a log of the session.
    print(f"{spec.full} {'set' if value else 'cleared'}" if spec.secret else f"{spec.full} = {value.strip()}")
    if spec.full == "security.secret":
        print("every confirm and unsubscribe link sent before now stops working", file=sys.stderr)
    if spec.secret:
        note_if_visible(args.value, VALUE_ENV)
    if spec.full == "site_url":
        warn_http(value.strip())


def dkim_arguments(p: Parser) -> None:
    a = add_command(actions(p), "keygen", "make a key, turn signing on, print the DNS record",
                    "vykhukhol dkim keygen --domain example.org --selector mail2026")
    a.add_argument("--domain", required=True, help="the From domain of your letters, e.g. example.org")
    a.add_argument("--selector", default=settings_mod.KEYS["mail.dkim_selector"].default,
                   help="the DNS name's first part (default vykhukhol), e.g. mail2026")


def cmd_dkim(ctx: Context, args) -> None:
    """``dkim keygen``: a new key in data/dkim/, the settings pointed at it, the
    DNS record to publish."""
    from vykhukhol.mail import dkim  # off the command line's start

    before = ctx.settings()
    domain = settings_mod.check("mail.dkim_domain", args.domain)
    selector = settings_mod.check("mail.dkim_selector", args.selector)
    if not domain:
        raise BadInput("--domain is empty")
    path, record = dkim.keygen(ctx.data.root, domain, selector)
    settings_mod.update(ctx.data.settings, {"mail.dkim_domain": domain,
                                            "mail.dkim_selector": selector,
                                            "mail.dkim_key_file": ""}, dkim.verify_settings)
    print(f"wrote the private key {path} (only its owner may read it)")
    print(f"set mail.dkim_domain = {domain}")
    print(f"set mail.dkim_selector = {selector}")
    if before["mail.dkim_key_file"]:
        print(f"set mail.dkim_key_file = (empty: the new key; it was {before['mail.dkim_key_file']})")
    print("publish this DNS TXT record; letters are signed from now on, and receivers "
          "verify them once the record is visible:")
    print(record)


def doctor_arguments(p: Parser) -> None:
    p.add_argument("--json", action="store_true", help="the findings as JSON")


def cmd_doctor(ctx: Context, args) -> int:
    """The deliverability preflight (:mod:`vykhukhol.mail.doctor`), one line
    per check and its fix below it. Exits 1 when a check is wrong, so a
    monitor can run it; unknown (the resolver did not answer) and warnings
    exit 0."""
    findings = doctor.examine(ctx.data, ctx.settings())
    if args.json:
        print(json.dumps([f.as_json() for f in findings], ensure_ascii=False, indent=1))
    else:
        for f in findings:
            print(f"{f.verdict.value:<8} {f.check:<9} {f.subject}: {f.found}")
            if f.fix:
                print(f"{'':<8} fix: {f.fix}")
    return 1 if doctor.worst(findings) is doctor.Verdict.WRONG else 0
