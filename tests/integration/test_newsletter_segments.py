"""A newsletter to part of its services (docs/using/newsletters.md#newsletter-segments):
``newsletter count`` and ``newsletter create --where`` as real subprocesses,
the letter reaching only the chosen subscribers through a real run into the
outbox, the history keeping the condition and its count, a condition that
chooses nobody or names an unknown field refused before anything is made,
and the admin's form counting (CSRF, nothing made) and creating over a real
``vykhukhol serve``.

Each test fails on the code before segments: ``--where``, ``count`` and the
form's Count button were unknown, and a newsletter went to every confirmed
subscriber."""

from __future__ import annotations

import json
from datetime import timedelta

from support import webkit
from support.clikit import refused, snapshot
from support.webkit import Browser
from vykhukhol import services as svc
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.settings import fields
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

served = webkit.served  # the fixture: a real `vykhukhol serve`

TVER = 'city = "тверь" and joined > 2026-01-01'
PEOPLE = [  # email, city, days since they joined, language
    ("anna@example.org", "Тверь", 10, "ru"),
    ("boris@example.org", "ТВЕРЬ", 20, None),
    ("vera@example.org", "Москва", 10, "en"),
    ("gleb@example.org", None, 10, None),
]


def segment_site(site) -> None:
    site.service("news", enabled=False)
    site.service("offers", enabled=False)
    fields.add(site.data.root, fields.Field("city", labels={"ru": "Город", "en": "City"}))
    fields.add(site.data.root, fields.Field("age", "number"))
    moment = now()
    for email, city, days, lang in PEOPLE:
        joined = moment - timedelta(days=days)
        sub = Subscriber(email, email.split("@")[0].title(), SubscriberState.ACTIVE, joined,
                         joined, ip="127.0.0.1")
        sub = sub.with_language(lang).with_fields({"city": city})
        subs.add(svc.find_service(site.data, "news").subscribers_path, sub)
    # a subscriber of another service: not among news' recipients
    site.subscriber("offers", "olga@example.org")
    site.subscriber("news", "nina@example.org", state="new")  # not confirmed


def write_body(tmp_path) -> str:
    body = tmp_path / "body.txt"
    body.write_text("Здравствуйте, {{ name }}! Новости Твери.\n", encoding="utf-8")
    return str(body)


def ledger(site, job: str) -> list[str]:
    lines = site.data.job(job, "list").read_text(encoding="utf-8").splitlines()
    return sorted(line.split("\t")[0] for line in lines if not line.startswith("#"))


def test_the_count_and_the_newsletter_reach_only_those_the_condition_chooses(site, tmp_path):
    segment_site(site)
    counted = site.cli("newsletter", "count", "--services", "news", "--where", TVER)
    assert counted.stdout == "2\n", counted
    assert site.cli("newsletter", "count", "--services", "news,offers").stdout == "5\n"
    assert site.cli("newsletter", "count", "--services", "news,offers", "--where",
                    'language = "ru" and city is empty').stdout == "2\n"  # gleb, olga

    made = site.cli("newsletter", "create", "--services", "news", "--subject", "Тверь",
                    "--body-file", write_body(tmp_path), "--where", TVER)
    job = made.stdout.strip()
    assert '2 subscribers chosen by: city = "тверь" and joined > 2026-01-01' in made.stderr
    assert ledger(site, job) == ["anna@example.org", "boris@example.org"]

    site.cli("cron")
    got = sorted(str(m["To"]) for m in site.outbox() if "admin@" not in str(m["To"]))
    assert got == ["Anna <anna@example.org>", "Boris <boris@example.org>"]

    [entry] = json.loads(site.cli("newsletter", "history", "--json").stdout)
    assert entry["where"] == 'city = "тверь" and joined > 2026-01-01'
    assert entry["matched"] == 2
    plain = site.cli("newsletter", "history").stdout.splitlines()
    assert plain[0].endswith("\twhere\tmatched")
    assert plain[1].endswith('\tcity = "тверь" and joined > 2026-01-01\t2')


def test_a_condition_that_chooses_nobody_or_does_not_read_is_refused_before_anything_is_made(
        site, tmp_path):
    segment_site(site)
    body = write_body(tmp_path)
    err = refused(site, "newsletter", "create", "--services", "news", "--subject", "S",
                  "--body-file", body, "--where", 'city = "Тула"')
    assert "no subscriber matches the condition city = \"Тула\"" in err
    err = refused(site, "newsletter", "count", "--services", "news", "--where", 'age > 1 and cty = "x"')
    assert 'column 13: unknown field "cty" (fields: city, age, language' in err
    before = snapshot(site.root)
    done = site.cli("newsletter", "create", "--services", "news", "--subject", "S",
                    "--body-file", body, "--where", "joined > 2026-02-30", check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().endswith("--where: column 10: a date such as 2026-01-01")
    assert "Traceback" not in done.stderr
    assert snapshot(site.root) == before


def test_the_admin_counts_without_making_anything_and_creates_to_the_segment(site, served):
    segment_site(site)
    admin = Browser(served.port)
    admin.log_in()

    def post(form: webkit.Answer | None = None, **values: str) -> webkit.Answer:
        form = form or admin.get("/admin/newsletters/new")
        assert form.status == 200 and 'id="count-newsletter"' in form.body, form
        return admin.post("/admin/newsletters/new", {
            "csrf": form.field("csrf"), "once": form.field("once"), "svc_news": "1",
            "subject": "Тверь", "text": "Здравствуйте, {{ name }}!", "at": "", **values})

    page = post(action="count", where=TVER)
    assert page.status == 200, page
    assert "The condition chooses 2 subscribers." in page.body
    assert "value=\"city = &#34;тверь&#34; and joined &gt; 2026-01-01\"" in page.body \
        or 'value="city = &quot;тверь&quot; and joined &gt; 2026-01-01"' in page.body
    assert not list(site.data.newsletters.glob("*.job"))

    page = post(action="count", where='cty = "x"')
    assert page.status == 400 and 'column 1: unknown field "cty"' in page.body.replace("&#34;", '"')
    page = post(action="count", where='city = "Тула"')
    assert "No subscriber matches the condition: a newsletter would go to nobody." in page.body

    stale = admin.post("/admin/newsletters/new", {"csrf": "forged", "svc_news": "1",
                                                  "action": "count", "where": TVER})
    assert stale.status in (400, 403) and "chooses 2" not in stale.body

    counted = post(action="count", where=TVER)
    done = post(counted, action="create", where=TVER)  # Create on the page the count drew
    assert done.status == 303, done
    [job] = [p.stem for p in site.data.newsletters.glob("*.job")]
    assert ledger(site, job) == ["anna@example.org", "boris@example.org"]
    shown = admin.get(done.headers["location"])
    assert f"Newsletter {job} created. Recipients: 2." in shown.body
    assert 'only those who match <code translate="no">city = &#34;тверь&#34;' in shown.body \
        or 'only those who match <code translate="no">city = &quot;тверь&quot;' in shown.body
    site.cli("cron")
    history = admin.get("/admin/newsletters").body.replace("&#34;", '"').replace("&quot;", '"')
    row = history[history.index(f'id="history-{job}"'):]
    row = row[:row.index("</tr>")]
    assert 'only those who match <code translate="no">city = "тверь" and joined &gt; 2026-01-01' \
        '</code> (2 chosen)' in row
