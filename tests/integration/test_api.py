"""The API (docs/using/api.md#api) through the whole site's WSGI dispatcher
(as ``serve`` and Passenger run it) and through the real CGI script: tokens
with scopes made by the CLI, JSON in and out, every refusal a JSON body with
its status, nothing changed by a refused call, the token never logged."""

from __future__ import annotations

import json

import pytest

from support.servetools import call, environ
from support.webkit import run_cgi
from vykhukhol.members import suppression
from vykhukhol.web.server import dispatcher


def token(site, *args: str) -> str:
    return site.ok("token", "add", *args).splitlines()[-1].strip()


@pytest.fixture
def api(site):
    site.service("news")
    app = dispatcher(site.data, site.cgi_dir)

    def request(method: str, path: str, body: object = None, key: str = "", raw: bytes | None = None,
                via: str = "bearer", remote: str = "127.0.0.1") -> tuple[int, dict, dict]:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if via == "bearer" else {"HTTP_X_API_KEY": key}
        env = environ(method, "/api" + path, "", data, "application/json" if data else "",
                      str(len(data)) if data else "missing", **(headers if key else {}))
        env["REMOTE_ADDR"] = remote
        status, answer_headers, text, _ = call(app, env)
        assert answer_headers["Content-Type"].startswith("application/json"), text[:200]
        return status, answer_headers, json.loads(text)

    return request


def test_subscribe_read_and_manage_with_scoped_tokens(site, api) -> None:
    writer = token(site, "shop", "--scopes", "subscribe")
    reader = token(site, "crm", "--scopes", "read,manage")
    status, _, body = api("POST", "/v1/subscribers", {"service": "news", "email": "anna@example.org",
                                                     "name": "Anna"}, writer)
    assert status == 202 and body == {"accepted": True, "double_opt_in": True}
    letters = site.outbox()
    assert len(letters) == 1 and letters[0]["To"].addresses[0].addr_spec == "anna@example.org"
    again = api("POST", "/v1/subscribers", {"service": "news", "email": "anna@example.org"}, writer)
    assert again[:1] == (202,) and again[2] == body, "a known address answers as a new one"
    status, _, body = api("GET", "/v1/subscribers/news/anna@example.org", key=reader)
    assert status == 200 and body["state"] == "new" and body["name"] == "Anna"
    status, _, body = api("GET", "/v1/subscribers/news/anna@example.org", key=writer)
    assert status == 403 and body["error"]["code"] == "scope"
    status, _, body = api("PATCH", "/v1/subscribers/news/anna@example.org", {"name": "Anna K."}, reader)
    assert status == 200 and body["name"] == "Anna K."
    status, _, body = api("POST", "/v1/subscribers/news/anna@example.org/unsubscribe", key=reader)
    assert status == 200 and body == {"unsubscribed": True}
    assert "anna@example.org" not in site.subscribers("news")
    status, _, body = api("GET", "/v1/services", key=reader, via="x-api-key")
    assert status == 200 and [s["name"] for s in body["services"]] == ["news"]
    log = (site.data.log / "api.log").read_text()
    assert "shop" in log and "crm" in log and writer not in log and reader not in log
    assert writer.split("_", 2)[2] not in (site.data.api / "tokens.txt").read_text(), "only the hash is kept"


def test_every_refusal_is_json_and_changes_nothing(site, api) -> None:
    writer = token(site, "shop", "--scopes", "subscribe", "--rate", "8")
    before = dict(site.subscribers("news"))
    cases = [
        (("POST", "/v1/subscribers", {"service": "news", "email": "a@example.org"}), {}, 401, "token"),
        (("POST", "/v1/subscribers", {"service": "news", "email": "a@example.org"}),
         {"key": writer[:-2] + "xx"}, 401, "token"),
        (("POST", "/v1/subscribers"), {"key": writer, "raw": b"{not json"}, 400, "json"),
        (("POST", "/v1/subscribers"), {"key": writer, "raw": b"[1, 2]"}, 400, "json"),
        (("POST", "/v1/subscribers", {"service": "news", "email": "a@example.org", "admin": True}),
         {"key": writer}, 422, "unknown_field"),
        (("POST", "/v1/subscribers", {"service": "news", "email": 5}), {"key": writer}, 422, "type"),
        (("POST", "/v1/subscribers", {"service": "news"}), {"key": writer}, 422, "missing_field"),
        (("POST", "/v1/subscribers", {"service": "news", "email": "not an address"}),
         {"key": writer}, 422, "invalid"),
        (("POST", "/v1/subscribers", {"service": "nosuch", "email": "a@example.org"}),
         {"key": writer}, 404, "not_found"),
        (("POST", "/v1/subscribers", {"service": "news", "email": "a@example.org", "confirmed": True}),
         {"key": writer}, 403, "scope"),
        (("GET", "/v1/nothing"), {"key": writer}, 404, "path"),
        (("PUT", "/v1/subscribers"), {"key": writer}, 405, "method"),
    ]
    for args, kw, status, code in cases:
        got, headers, body = api(*args, **kw)
        assert (got, body["error"]["code"]) == (status, code), (args, kw, body)
        if status == 401:
            assert headers["WWW-Authenticate"].startswith("Bearer")
    assert dict(site.subscribers("news")) == before
    status, headers, body = api("POST", "/v1/subscribers", {"service": "news", "email": "b@example.org"},
                                writer)
    assert status == 429 and int(headers["Retry-After"]) <= 60 and body["error"]["code"] == "rate"
    status, _, body = api("POST", "/v1/subscribers", key=writer, raw=b"{" + b" " * 300_000 + b"}")
    assert status in (413, 429)


def test_a_suppressed_address_is_refused_saying_so(site, api) -> None:
    writer = token(site, "shop", "--scopes", "subscribe,manage")
    status, _, body = api("POST", "/v1/suppression", {"email": "gone@example.org"}, writer)
    assert status == 201 and body["new"] is True
    status, _, body = api("POST", "/v1/subscribers", {"service": "news", "email": "gone@example.org"},
                          writer)
    assert status == 422 and body["error"]["code"] == "suppressed"
    assert suppression.blocked(site.data, site.settings(), "gone@example.org")


def test_ip_allow_list_expiry_and_revoke(site, api) -> None:
    fenced = token(site, "office", "--scopes", "read", "--ip", "10.0.0.0/8")
    assert api("GET", "/v1/stats", key=fenced, remote="10.1.2.3")[0] == 200
    status, _, body = api("GET", "/v1/stats", key=fenced, remote="192.0.2.1")
    assert status == 403 and body["error"]["code"] == "ip"
    site.ok("token", "revoke", "office")
    assert api("GET", "/v1/stats", key=fenced, remote="10.1.2.3")[0] == 401
    listed = site.ok("token", "list")
    assert "office" not in listed


def test_newsletters_through_the_api(site, api) -> None:
    sender = token(site, "cms", "--scopes", "send,read")
    site.subscriber("news", "anna@example.org", name="Anna")
    status, _, body = api("POST", "/v1/newsletters", {"services": ["news"], "subject": "Hello",
                                                     "text": "Hi {{ name }}", "start": "2099-01-01T09:00:00Z"},
                          sender)
    assert status == 201 and body["recipients"] == 1, body
    job = body["id"]
    status, _, body = api("POST", f"/v1/newsletters/{job}/schedule", {"start": "2099-02-01T09:00:00Z"}, sender)
    assert status == 200 and body["start"] == "2099-02-01T09:00:00Z"
    assert api("GET", "/v1/newsletters", key=sender)[2]["newsletters"][0]["id"] == job
    status, _, body = api("DELETE", f"/v1/newsletters/{job}", key=sender)
    assert status == 200 and api("GET", f"/v1/newsletters/{job}", key=sender)[0] == 404


def test_the_cgi_script_answers_json(site) -> None:
    site.service("news")
    reader = token(site, "crm", "--scopes", "read")
    answer = run_cgi(site, "cgi/api.py", "GET", path_info="/v1/services", HTTP_X_API_KEY=reader)
    assert answer.status == 200 and json.loads(answer.body)["services"][0]["name"] == "news"
    answer = run_cgi(site, "cgi/api.py", "GET", path_info="/v1/services")
    assert answer.status == 401 and json.loads(answer.body)["error"]["code"] == "token"


def test_the_admin_makes_and_revokes_a_token(site) -> None:
    from urllib.parse import urlencode

    from support.servetools import log_in
    from vykhukhol.web import admin as admin_mod

    site.set(language="en")
    site.service("news")
    app = admin_mod.app(site.data, site.cgi_dir)
    cookie, csrf = log_in(app)

    def post(path: str, fields: dict, token: bool = True) -> tuple[int, dict, str]:
        body = urlencode({**({"csrf": csrf} if token else {}), **fields}).encode()
        status, headers, page, _ = call(app, environ("POST", path, "", body, "application/x-www-form-urlencoded",
                                                     str(len(body)), script="/admin", HTTP_COOKIE=cookie))
        return status, headers, page

    assert post("/tokens", {"name": "shop", "scope-subscribe": "on"}, token=False)[0] == 403
    status, _, page = post("/tokens", {"name": "shop", "scope-subscribe": "on", "rate": "30"})
    assert status == 200
    made = page.split('id="new-token"')[1].split("<code>")[1].split("</code>")[0]
    assert made.startswith("vyk_")
    status, _, page = call(app, environ("GET", "/tokens", "", b"", "", "missing", script="/admin",
                                        HTTP_COOKIE=cookie))[:3]
    assert "shop" in page and made not in page, "shown once"
    status, _, page = post("/tokens", {"name": "x", "rate": "30"})
    assert status == 400 and "scopes" in page
    assert post("/tokens/revoke", {"name": "shop", "confirm": "yes"})[0] == 303
    assert "shop" not in site.ok("token", "list")


def test_a_real_serve_answers_the_api(site, tmp_path) -> None:
    import http.client

    from support.benchkit import free_port
    from support.servetools import ServeProcess

    site.service("news")
    reader = token(site, "crm", "--scopes", "read")
    port = free_port()
    served = ServeProcess(site, port, tmp_path / "serve")
    served.start()
    try:
        for path in ("/api/v1/services", "/cgi/api.py/v1/services"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path, headers={"Authorization": f"Bearer {reader}"})
            response = conn.getresponse()
            body = json.loads(response.read())
            assert response.status == 200 and body["services"][0]["name"] == "news", (path, body)
            conn.close()
    finally:
        assert served.stop()[0] == 0


def test_an_expired_token_is_refused(site) -> None:
    from vykhukhol.web.api import credentials

    made, given = credentials.add(site.data, "short", "read", expires_in=60, now=1_000_000)
    assert credentials.find(site.data, given, now=1_000_059) == made
    assert credentials.find(site.data, given, now=1_000_060) is None
    assert credentials.find(site.data, given.replace("vyk_", "vyk_0")) is None


def test_the_per_address_daily_cap_holds_for_the_api_too(site, api) -> None:
    """Confirmation requests to one address are limited per day whatever the
    client: a token may not bomb an inbox either."""
    site.set(subscribe_address_daily_limit=1)
    writer = token(site, "shop", "--scopes", "subscribe,manage")
    for service in ("news", "tips", "more"):
        if service != "news":
            site.service(service)
        assert api("POST", "/v1/subscribers", {"service": service, "email": "anna@example.org"},
                   writer)[0] == 202
    assert len([m for m in site.outbox() if "anna@" in str(m["To"])]) == 1


def test_a_closed_service_takes_no_sign_up_through_the_api(site, api) -> None:
    writer = token(site, "shop", "--scopes", "subscribe,manage")
    site.ok("service", "close", "news")
    status, _, body = api("POST", "/v1/subscribers", {"service": "news", "email": "new@example.org"}, writer)
    assert status == 409 and body["error"]["code"] == "closed"
    assert "new@example.org" not in site.subscribers("news") and site.outbox() == []
    status, _, _ = api("POST", "/v1/subscribers", {"service": "news", "email": "new@example.org",
                                                   "confirmed": True}, writer)
    assert status == 202 and site.subscribers("news")["new@example.org"].state.value == "active"
