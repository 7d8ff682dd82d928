"""The brakes (docs/deliverability/reputation.md#brakes): a service or a newsletter
whose complaints or addresses gone reach their line stops itself, alerts the
admin, and goes on only when resumed.

Letters go out through a real SMTP server (aiosmtpd); complaints come back
as ARF reports piped into a real ``vykhukhol bounce``, or as a provider's
signed callback to a real ``vykhukhol serve``; the runs are real
``vykhukhol cron`` processes.
"""

from __future__ import annotations

from support.bouncekit import ARF, tagged_sender
from support.hookkit import mailgun_body
from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber

LESSON = [("Lesson 1", "0s", "Hello {{ name }}.")]


def people(service: str, count: int) -> list[str]:
    return [f"{service}{i}@example.net" for i in range(count)]


def complain(site, received, kind: str, name: str, address: str) -> None:
    """An ARF report about our letter to ``address``, piped as a mail server does."""
    sender = tagged_sender(site, received, kind, name, address)
    raw = ARF.replace(b"<somespammer@example.net>", f"<{sender}>".encode()).replace(
        b"user@example.com", address.encode())
    done = site.cli("bounce", input=raw.decode("latin-1"), check=False)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr


def letter_to(server, address: str):
    found = [r for r in server.handler.received if address in r.rcpt_tos]
    assert found, f"no letter reached {address}"
    return found[-1]


def warned(done) -> str:
    """The warnings of `vykhukhol status` (the log lines it also prints are apart)."""
    return "\n".join(line for line in done.stdout.splitlines() if line.startswith("warning: "))


def alerts_to_admin(server, subject: str) -> list:
    return [r.message for r in server.handler.received if r.message["Subject"] == subject]


def test_complaints_at_the_line_brake_a_service_below_it_not(site, smtp_server):
    """3 complaints in 30 letters is 10 %: at a complaint_brake of 10 the
    service brakes; 3 in 31 (9.7 %) do not. The braked service sends nothing
    more and the admin gets "dispatch is braked" with the figures; the other
    goes on."""
    site.use_smtp(smtp_server.port)
    site.set(serial_per_run=200, complaint_brake=10)
    site.service("hot", letters=LESSON)
    site.service("mild", letters=LESSON)
    for service, count in (("hot", 30), ("mild", 31)):
        for address in people(service, count):
            site.subscriber(service, address)
    # both: the other services of the DB follow the first (docs/design/run.md#run-steps, step 4)
    site.cli("cron")
    assert all(letter_to(smtp_server, a) for a in people("hot", 30) + people("mild", 31))

    for service in ("hot", "mild"):
        for address in people(service, 3):
            complain(site, letter_to(smtp_server, address), "s", service, address)
    assert alerts_to_admin(smtp_server, "dispatch is braked") == []  # a run decides, not the pipe

    site.subscriber("hot", "late-hot@example.net")
    site.subscriber("mild", "late-mild@example.net")
    site.cli("cron")
    received = {a for r in smtp_server.handler.received for a in r.rcpt_tos}
    assert "late-hot@example.net" not in received
    assert "late-mild@example.net" in received
    [alert] = alerts_to_admin(smtp_server, "dispatch is braked")
    body = alert.get_content()
    assert "hot" in body and "30" in body and "10.00" in body, body  # Russian: the site's language
    assert "mild" not in body
    status = warned(site.cli("status", check=False))
    assert "Service hot is braked" in status and "complaints: 3 (10.00 %" in status, status
    assert "Service mild" not in status

    # Resumed: it goes on, and the complaints that braked it brake it no more.
    assert site.cli("service", "resume", "hot").returncode == 0
    site.cli("cron")
    assert "late-hot@example.net" in {a for r in smtp_server.handler.received for a in r.rcpt_tos}
    assert "Service hot is braked" not in warned(site.cli("status", check=False))
    again = site.cli("service", "resume", "hot", check=False)
    assert again.returncode == 1 and "not braked" in again.stderr and "Traceback" not in again.stderr


def test_addresses_gone_at_hand_over_brake_at_the_line_and_not_below(site, smtp_server):
    """bounce_brake 10: 10 refusals "no such user" in 100 letters brake the
    service, 10 in 101 do not."""
    site.use_smtp(smtp_server.port)
    site.set(serial_per_run=300, bounce_brake=10)
    site.service("old", letters=LESSON)
    site.service("fresh", letters=LESSON)
    for service, count in (("old", 100), ("fresh", 101)):
        for address in people(service, count):
            site.subscriber(service, address)
        for address in people(service, 10):
            smtp_server.handler.rcpt_responses[address] = "550 5.1.1 <x>: no such user here"
    site.cli("cron")
    site.subscriber("old", "late-old@example.net")
    site.subscriber("fresh", "late-fresh@example.net")
    site.cli("cron")
    received = {a for r in smtp_server.handler.received for a in r.rcpt_tos}
    assert "late-fresh@example.net" in received and "late-old@example.net" not in received
    status = warned(site.cli("status", check=False))
    assert "Service old is braked" in status and "addresses gone: 10 (10.00 %" in status, status


def test_a_braked_newsletter_stops_and_resumes_by_the_command_line(site, smtp_server):
    """A newsletter's complaints count for the newsletter (not its service):
    it stops midway, the series goes on, `newsletter resume` lets it finish."""
    site.use_smtp(smtp_server.port)
    site.set(news_per_run=30, complaint_brake=10)
    site.service("news")
    for address in people("news", 60):
        site.subscriber("news", address)
    job = site.cli("newsletter", "create", "--services", "news", "--subject", "Big news",
                   "--body", "Hello.").stdout.strip()
    site.cli("cron")
    first = [a for r in smtp_server.handler.received for a in r.rcpt_tos]
    assert len(first) == 30
    for address in first[:3]:
        complain(site, letter_to(smtp_server, address), "n", job, address)
    site.cli("cron")
    assert len([r for r in smtp_server.handler.received if r.message["Subject"] == "Big news"]) == 30
    assert len(alerts_to_admin(smtp_server, "newsletter is braked")) == 1
    assert f"Newsletter {job} is braked" in warned(site.cli("status", check=False))
    assert newsletters.read_job(site.data, job)  # waiting, not deleted
    assert "news" in {s.name for s in svc.load_services(site.data) if s.enabled}

    site.cli("newsletter", "resume", job)
    site.cli("cron")
    assert len([r for r in smtp_server.handler.received if r.message["Subject"] == "Big news"]) == 60


def test_complaints_by_a_providers_callback_brake_the_service(hooked, smtp_server):  # noqa: F811
    """Mailgun's signed "complained" callbacks to `vykhukhol serve`, about our
    letters (found by the tag in the envelope sender), count like ARF mail."""
    import subprocess
    import sys

    from support.servetools import subprocess_env
    from vykhukhol import settings as settings_mod
    from vykhukhol.timeutil import now

    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(hooked.data.root),
                               *args], capture_output=True, text=True, env=subprocess_env(),
                              timeout=120)
        assert not check or done.returncode == 0, done.stderr
        return done

    settings_mod.update(hooked.data.settings, {
        "mail.transport": "smtp", "mail.smtp_host": "127.0.0.1",
        "mail.smtp_port": str(smtp_server.port), "complaint_brake": "10", "serial_per_run": "100"})
    svc.add_service(hooked.data, "loud", "main", {"title": "Loud"})
    service = svc.find_service(hooked.data, "loud")
    svc.add_letter(service, "Loud 1", "0s", "Hi.")
    svc.edit_service(hooked.data, "loud", {"enabled": "yes"})
    from vykhukhol.states import SubscriberState

    def add(address: str) -> None:
        subs.add(service.subscribers_path, Subscriber(
            email=address, name="", state=SubscriberState("active"), subscribed=now(),
            confirmed=now(), sent=0, last_sent=None, reminders=0, last_reminder=None,
            failures=0, ip="127.0.0.1"))

    for address in people("loud", 30):
        add(address)
    cli("cron")
    for i, address in enumerate(people("loud", 3)):
        sender = letter_to(smtp_server, address).mail_from
        body = mailgun_body("mailgun_complained.json", address, f"mg-brake-{i}", sender=sender)
        assert hooked.post("mailgun", body)[0] == 200
    add("late-loud@example.net")
    cli("cron")
    assert "late-loud@example.net" not in {a for r in smtp_server.handler.received
                                           for a in r.rcpt_tos}
    assert "Service loud is braked" in warned(cli("status", check=False))
    cli("service", "resume", "loud")
    cli("cron")
    assert "late-loud@example.net" in {a for r in smtp_server.handler.received for a in r.rcpt_tos}


def test_a_brake_out_of_range_is_refused_and_nothing_is_written(site):
    before = site.data.settings.read_bytes()
    for value in ("101", "-1", "0.125", "lots", "1e1", "nan"):
        for key in ("complaint_brake", "bounce_brake"):
            code, _, err = site.call("settings", "set", key, value)
            assert code != 0 and key in err and "Traceback" not in err, (value, err)
    assert site.data.settings.read_bytes() == before
    assert site.call("settings", "set", "complaint_brake", "0.3%")[0] == 0
    assert site.settings()["complaint_brake"] == 0.3
