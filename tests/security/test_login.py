"""The login lock-out turned against the owner.

Each attack runs against a real ``vykhukhol serve`` (and the admin CGI script
where the client address matters): cross-site posts that locked the owner
out, 40 parallel guesses that got more checks than the limit, a logins file
that grew without bound, and a reverse proxy that made every client one.
"""

from __future__ import annotations

import threading
import time

from support import webkit
from support.servetools import PASSWORD
from support.webkit import Browser, run_cgi
from vykhukhol.files import kv

served = webkit.served  # the fixture: a real `vykhukhol serve`

LIMIT = 5  # web/session.MAX_FAILURES, as docs/using/admin.md#admin-login states it


def wrong(browser: Browser, n: int = 1, **kw) -> list[int]:
    """``n`` wrong passwords through the real form; their statuses."""
    return [browser.log_in(f"wrong-password-{i}", **kw).status for i in range(n)]


def test_cross_site_login_posts_are_refused_uncounted_and_the_owner_still_logs_in(site, served):
    """A page on another site makes the owner's browser post wrong passwords
    (the browser says so: Sec-Fetch-Site, or Origin in an older one): each is
    refused before any password check and counts nothing; the owner then logs
    in at once from the same address."""
    ways = [{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
            {"Origin": "https://evil.example"},                      # no Sec-Fetch-Site
            {"Origin": "https://blog.example.org", "Sec-Fetch-Site": "same-site"},
            {"Origin": "null", "Sec-Fetch-Site": "cross-site"}]      # a sandboxed frame
    answers = [Browser(served.port, way).post("/admin/login", {"password": f"guess-{n}"})
               for n in range(3) for way in ways]
    owner = Browser(served.port)
    assert owner.log_in().status == 303
    assert {a.status for a in answers} == {403}, [a.status for a in answers]
    assert all("Log in from this site&#39;s own login page." in a.body
               or "Log in from this site's own login page." in a.body for a in answers), answers[0]
    assert not any(k.startswith("ip ") for k in kv.read_kv(site.data.state / "logins"))


def test_a_browser_on_the_site_itself_may_log_in_with_or_without_those_headers(site, served):
    """Same-origin posts, and clients that send no such headers at all, are
    counted and checked as ever (a script can only lock out its own address)."""
    same = Browser(served.port, {"Origin": f"http://127.0.0.1:{served.port}"})  # no Sec-Fetch-Site
    assert same.post("/admin/login", {"password": "wrong-one"}).status == 403
    bare = Browser(served.port)
    assert bare.post("/admin/login", {"password": "wrong-two"}).status == 403
    assert kv.read_kv(site.data.state / "logins")["ip 127.0.0.1"].startswith("2 ")
    assert bare.post("/admin/login", {"password": PASSWORD}).status == 303


def test_forty_parallel_wrong_passwords_get_at_most_the_limit_of_checks(site, served):
    """40 simultaneous guesses from one address: at most five are checked
    (403), the rest are refused unchecked (429)."""
    attacker = Browser(served.port)
    statuses: list[int] = []
    start = threading.Barrier(40)

    def guess(n: int) -> None:
        start.wait()
        statuses.append(attacker.post("/admin/login", {"password": f"guess-{n}"}).status)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(statuses)) == [403, 429], statuses
    assert statuses.count(403) <= LIMIT, f"{statuses.count(403)} passwords checked: {statuses}"
    counted = kv.read_kv(site.data.state / "logins")["ip 127.0.0.1"]
    assert counted.split()[0] == str(statuses.count(403)), counted


def test_a_strangers_failures_do_not_lock_out_the_owners_known_browser(site, served):
    """The owner logged in before from this browser; a stranger at the same
    address (a shared NAT, or a proxy) locks the address; the owner's browser
    still logs in with the right password, and a forged known-browser cookie
    does not get the stranger past the lock."""
    owner = Browser(served.port)
    assert owner.log_in().status == 303
    owner.post("/admin/logout", {"csrf": owner.csrf()})
    assert "vykhukhol_browser" in owner.jar

    stranger = Browser(served.port)
    assert wrong(stranger, LIMIT) == [403] * LIMIT
    assert wrong(stranger) == [429]
    assert stranger.log_in().status == 429  # the right password too: the address is locked

    forger = Browser(served.port)
    forger.jar["vykhukhol_browser"] = owner.jar["vykhukhol_browser"].split(".")[0] + "." + "0" * 32
    assert forger.log_in().status == 429

    assert owner.log_in().status == 303
    assert owner.get("/admin/").status == 200


def test_a_known_browser_has_its_own_tighter_count(site, served):
    """A known browser that guesses wrong three times is locked by itself (the
    right password then waits too); the address's count is untouched."""
    owner = Browser(served.port)
    assert owner.log_in().status == 303
    assert wrong(owner, 3) == [403] * 3
    assert owner.log_in().status == 429
    assert not any(k.startswith("ip ") for k in kv.read_kv(site.data.state / "logins"))
    assert Browser(served.port).log_in().status == 303  # another browser, same address


def test_the_logins_file_stays_bounded_and_quick(site, served):
    """A logins file grown to 200,000 entries (as many addresses tried once) is
    cut back on the next check: expired entries go, and at most 2,000 stay."""
    path = site.data.state / "logins"
    now = time.time()
    values = {f"ip 10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}": f"1 {now - 3600:.0f}"
              for n in range(195_000)}
    values.update({f"ip 11.0.{n >> 8}.{n & 255}": f"1 {now - 60:.0f}" for n in range(5_000)})
    kv.write_kv(path, values)
    began = time.monotonic()
    assert wrong(Browser(served.port)) == [403]
    assert time.monotonic() - began < 5
    kept = kv.read_kv(path)
    assert len(kept) <= 2000, len(kept)
    assert kept["ip 127.0.0.1"].startswith("1 ")
    assert not any(k.startswith("ip 10.") for k in kept)


def test_behind_a_trusted_proxy_each_client_has_its_own_count(site, served):
    """With trusted_proxies naming the proxy, X-Forwarded-For names the client
    (its right-most untrusted hop): one client's lock-out is not another's.
    Without it, X-Forwarded-For is ignored: a stranger cannot dodge the count."""
    site.set(trusted_proxies="127.0.0.1")
    stranger = Browser(served.port, {"X-Forwarded-For": "203.0.113.5"})
    assert wrong(stranger, LIMIT) == [403] * LIMIT
    assert wrong(stranger) == [429]
    # A hop the stranger wrote himself, left of what the proxy saw, changes nothing.
    spoofing = Browser(served.port, {"X-Forwarded-For": "198.51.100.7, 203.0.113.5"})
    assert wrong(spoofing) == [429]
    owner = Browser(served.port, {"X-Forwarded-For": "203.0.113.6"})
    assert owner.log_in().status == 303
    assert "ip 203.0.113.5" in kv.read_kv(site.data.state / "logins")

    site.set(trusted_proxies="")
    for n in range(LIMIT):
        Browser(served.port, {"X-Forwarded-For": f"192.0.2.{n}"}).log_in(f"wrong-{n}")
    assert Browser(served.port, {"X-Forwarded-For": "192.0.2.200"}).log_in().status == 429


def test_the_admin_cgi_script_counts_the_client_behind_a_trusted_proxy(site):
    """The same under CGI: the login of admin/index.py counts the address that
    X-Forwarded-For names only when REMOTE_ADDR is a trusted proxy."""
    site.set(language="en", trusted_proxies="10.0.0.1")

    def attempt(password: str, remote: str, forwarded: str) -> int:
        return run_cgi(site, "admin/index.py", "POST", body=f"password={password}".encode(),
                       path_info="/login", remote=remote, HTTP_X_FORWARDED_FOR=forwarded).status

    assert [attempt(f"wrong-{n}", "10.0.0.1", "203.0.113.9") for n in range(LIMIT + 1)] \
        == [403] * LIMIT + [429]
    assert attempt(PASSWORD, "10.0.0.1", "203.0.113.10") == 303
    # An untrusted peer's X-Forwarded-For is its own text: counted by its own address.
    assert attempt("wrong", "10.0.0.2", "203.0.113.10") == 403
    assert "ip 10.0.0.2" in kv.read_kv(site.data.state / "logins")
