"""What the owner should fix: the warnings of the admin status page and of
``vykhukhol status``, made in one place so both say the same.

Each warning is an English sentence passed through ``translate`` (the admin
page gives its ``tr`` for the configured language; the CLI keeps English).
Nothing here changes anything.

A local data directory (``vykhukhol serve`` on this computer: site_url plain
http on a loopback address, see demo.py) is not a site: the warnings about
hosting (the cron script's name, data inside the web folder, https, compiled
bytecode, nothing reading bounces) do not apply to it, and it gets one note
instead, that its links work only here.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

from vykhukhol import services as svc
from vykhukhol.bounces import record as bounce_record
from vykhukhol.bounces.providers import TITLES
from vykhukhol.bounces.providers.quiet import quiet_provider
from vykhukhol.datadir import CHECKOUT, DataDir
from vykhukhol.errors import BadInput, VykhukholError
from vykhukhol.newsletters import feeds
from vykhukhol.services import demo
from vykhukhol.services import subscribers as subs
from vykhukhol.settings import Settings
from vykhukhol.timeutil import now
from vykhukhol.watch import brakes, cronwatch, receivers

Translate = Callable[..., str]

# Modules every cron tick or page loads: if their bytecode is missing or stale
# for the interpreter running now, the others are too (compileall does all).
KEY_MODULES = ("vykhukhol/__init__.py", "vykhukhol/sender/idle.py", "vykhukhol/files/__init__.py",
               "vykhukhol/sender/__init__.py", "vykhukhol/web/http.py")
LIB = Path(__file__).resolve().parents[2]  # lib/


def bytecode_missing(lib: Path = LIB) -> list[str]:
    """The key modules whose compiled file for this interpreter is missing or
    stale (its header names another source time or size). A process that cannot
    write __pycache__ (CGI as www-data, files owned by the FTP user) compiles
    every module on every request, about 70 ms each time."""
    missing = []
    for name in KEY_MODULES:
        source = lib / name
        try:
            info = os.stat(source)
            with open(importlib.util.cache_from_source(str(source)), "rb") as compiled:
                header = compiled.read(16)
        except (OSError, NotImplementedError):
            missing.append(name)
            continue
        flags = int.from_bytes(header[4:8], "little")
        if header[:4] != importlib.util.MAGIC_NUMBER:
            missing.append(name)
        elif flags == 0:  # timestamp-based: the source's time and size as compiled
            if int.from_bytes(header[8:12], "little") != int(info.st_mtime) & 0xFFFFFFFF \
                    or int.from_bytes(header[12:16], "little") != info.st_size & 0xFFFFFFFF:
                missing.append(name)
        elif flags & 0b10:  # checked hash (survives an upload's new file times)
            with open(source, "rb") as text:
                if importlib.util.source_hash(text.read()) != header[8:16]:
                    missing.append(name)
    return missing


NO_SECRET = ("security.secret is missing or shorter than 32 characters: the subscriber pages, the "
             "links in letters and the sender refuse to work until it is set with "
             "`vykhukhol settings set security.secret --generate` or in settings.ini.")


def _english(text: str, /, **values: object) -> str:
    return text.format(**values) if values else text


def _english_plural(singular: str, plural: str, n: int, /, **values: object) -> str:
    return (singular if n == 1 else plural).format(n=n, **values)


def warnings(data: DataDir, settings: Settings, cgi_dir: Path,
             translate: Translate = _english, plural: Translate = _english_plural,
             explain: Callable[[VykhukholError], str] = str) -> list[str]:
    """Every warning that applies now, most important first; ``plural`` says
    a count with its noun (``ngettext``), ``explain`` an error (its ``text(lang)``)."""
    _, _n = translate, plural
    found = []
    quiet = cronwatch.silence(str(data.root))
    if quiet is not None:
        found.append(_("No sender run has started for {hours} h: the cron job that calls the cron script seems to have stopped, and nothing is sent until it runs again. Check it in the hosting panel (the line to paste is on the Status page) and open the cron URL once by hand.",
                       hours=int(quiet // 3600)))
    for brake in brakes.status(data, settings, now()).values():
        found.append(brakes.said(brake, _))
    hosted = not demo.is_local(settings["site_url"])
    if not hosted:
        found.append(_("This is a local trial: site_url is {url}, on this computer, so the links in letters work only here. Put it on a host (the manual, docs/deploying/index.md) before inviting anyone.",
                       url=settings["site_url"]))
    if hosted and (cgi_dir / "cron.py").exists():
        found.append(_("The cron script still has its shipped name cgi/cron.py: run `vykhukhol init` or rename it to something hard to guess."))
    try:
        data.root.relative_to(CHECKOUT)
        inside = True
    except ValueError:
        inside = False
    if hosted and inside and not (data.root / ".htaccess").exists():
        found.append(_("The data directory is inside the web folder without its .htaccess: it may be readable from the web."))
    if settings["mail.transport"] == "outbox":
        found.append(_("Mail is not configured: letters are written to the outbox and nobody receives them."))
    if hosted and not settings["site_url"].startswith("https://"):
        found.append(_("site_url is not https: mail services want an https unsubscribe link (RFC 8058)."))
    if settings["mail.dkim_domain"]:
        from vykhukhol.mail import compose, dkim  # Jinja2: only when DKIM is on

        try:
            dkim.check_key(data.root, settings)
        except dkim.DkimKeyError as exc:
            found.append(_("DKIM signing is on, but its key cannot be used, so no letter is sent: {problem}",
                           problem=exc.message))
        signer = settings["mail.dkim_domain"]
        for name, domain in dkim.misaligned(signer, compose.senders(data, settings)):
            found.append(_("Service {service} sends from {domain}, which the DKIM signature of {signer} does not align with for DMARC: make a key for {domain}.",
                           service=name, domain=domain, signer=signer))
    busiest = receivers.busiest_gmail_day(data)
    if busiest is not None:
        found.append(_n("{n} letter went to Gmail addresses on {day}. From {bulk} a day Gmail counts the site as a bulk sender for good, and then demands SPF and DKIM, a DMARC record with the From domain aligned, one-click unsubscribe honoured within two days and complaints under 0.3%: check the Deliverability page (`vykhukhol doctor`) now.",
                        "{n} letters went to Gmail addresses on {day}. From {bulk} a day Gmail counts the site as a bulk sender for good, and then demands SPF and DKIM, a DMARC record with the From domain aligned, one-click unsubscribe honoured within two days and complaints under 0.3%: check the Deliverability page (`vykhukhol doctor`) now.",
                        busiest[1], day=busiest[0], bulk=receivers.BULK_LINE))
    stale = bytecode_missing() if hosted else []
    if stale:
        found.append(_("Compiled bytecode is missing or out of date for this Python ({count} of the key modules, e.g. {module}): every request compiles the code again (about 70 ms). Compile it as step 1 of the manual's docs/deploying/apache.md says (`python3 -m compileall -q --invalidation-mode checked-hash lib`) and upload it with each new version.",
                       count=len(stale), module=stale[0]))
    if not settings["admin_email"]:
        found.append(_("admin_email is empty: alerts and reports are only logged."))
    if not settings["postal_address"].strip():
        found.append(_("postal_address is empty: the law of many countries (CAN-SPAM in the USA, for one) wants the sender's postal address in the footer of every list letter. Set it on the Settings page or with `vykhukhol settings set postal_address \"…\"`."))
    if hosted and bounce_record.no_source(data, settings):
        found.append(_("Nothing reads the bounces: set mail.bounce_mailbox, or have the mail server pipe the bounce address to `vykhukhol bounce` (the manual, docs/deliverability/bounces.md). Until then dead addresses keep getting letters."))
    silent = quiet_provider(data, settings)
    if silent:
        found.append(_("Letters go through {provider}, but none of its callbacks has arrived in 7 days: its bounces and complaints may be lost. Check its webhook against `vykhukhol hooks` (the manual, docs/deliverability/providers.md).",
                       provider=TITLES[silent]))
    for name, url, why in feeds.problems(data):
        found.append(_("The feed of {service} ({url}) could not be read at its last try: {problem}. Its new items wait until it can.",
                       service=name, url=url, problem=explain(why)))
    for name, item in feeds.dropped(data, now()):
        found.append(_n("The feed of {service}: the item “{title}” could not become a letter in {n} try and was dropped: {problem}.",
                        "The feed of {service}: the item “{title}” could not become a letter in {n} tries and was dropped: {problem}.",
                        feeds.MAX_TRIES, service=name, title=item.title, problem=explain(item.why)))
    if settings.secret_problem:
        found.append(_(NO_SECRET))
    for problem in settings.problems:
        if problem != settings.secret_problem:
            found.append(problem if isinstance(problem, str) else explain(problem))
    found.extend(broken_letters(data, settings, translate, explain))
    for service in svc.load_services(data):
        bad = subs.malformed(service.subscribers_path)
        if bad:
            found.append(_n("{service}: {n} malformed subscriber line (line {line}); it is kept and skipped.",
                            "{service}: {n} malformed subscriber lines (first: line {line}); they are kept and skipped.",
                            len(bad), service=service.name, line=bad[0].lineno))
    return found


def broken_letters(data: DataDir, settings: Settings, translate: Translate = _english,
                   explain: Callable[[VykhukholError], str] = str) -> list[str]:
    """A warning for each letter and footer a run cannot make as its files are now
    (the run skips it and alerts: docs/using/services.md#broken-letter); gone once the file is fixed."""
    from vykhukhol.render import checkup  # Jinja2: only when letters are checked

    _ = translate  # the name tools/i18n.py extracts texts by
    found, lang = [], settings["language"]
    problem = checkup.footer_problem(None, data.root, lang)
    if problem:
        found.append(_("The site's footer (data/footer.txt or footer.html) cannot be made, so no list letter goes out: {problem}",
                       problem=explain(problem)))
    for service in svc.load_services(data):
        try:
            letters = svc.load_letters(service)
        except BadInput as exc:
            found.append(_("{service}: its letters cannot be read, so none is sent: {problem}",
                           service=service.name, problem=explain(exc)))
            continue
        own = any((service.folder / name).exists() for name in ("footer.txt", "footer.html"))
        problem = checkup.footer_problem(service.folder, data.root, lang) if own else None
        if problem:
            found.append(_("{service}: its own footer cannot be made, so none of its letters is sent: {problem}",
                           service=service.name, problem=explain(problem)))
        for letter in letters:
            try:  # a Markdown letter made too long by FTP has no parts
                problem = checkup.letter_problem(letter.subject, *letter.parts())
            except BadInput as exc:
                problem = exc
            if problem:
                found.append(_("{service}: letter {number} cannot be made, so it is skipped until it is fixed: {problem}",
                               service=service.name, number=letter.number,
                               problem=explain(problem)))
    return found
