"""web/cgi.serve, the CGI gateway that took wsgiref's CGIHandler's place: the
environ PEP 3333 wants, the answer mod_cgi reads, and no header injection."""

from __future__ import annotations

import io
import wsgiref.handlers

import pytest

from vykhukhol.web import cgi


class Pipes:
    def __init__(self) -> None:
        self.stdin, self.stdout = io.BytesIO(b"a=1"), io.BytesIO()

    def serve(self, app) -> bytes:
        cgi.serve(app, self.stdin, self.stdout)
        return self.stdout.getvalue()


@pytest.fixture
def request_env(monkeypatch):
    for key, value in {"REQUEST_METHOD": "POST", "QUERY_STRING": "x=%D0%B9&y=й",
                       "HTTP_X_NAME": "Иван", "PATH_INFO": "/é", "SCRIPT_NAME": "/cgi/subscribe.py",
                       "CONTENT_LENGTH": "3", "HTTPS": "on", "OTHER": "ü"}.items():
        monkeypatch.setenv(key, value)
    return Pipes()


def test_the_environ_is_wsgirefs(request_env) -> None:
    ours, theirs = cgi.cgi_environ(request_env.stdin), wsgiref.handlers.read_environ()
    for key in ("QUERY_STRING", "HTTP_X_NAME", "PATH_INFO", "SCRIPT_NAME", "OTHER", "REQUEST_METHOD"):
        assert ours[key] == theirs[key], key
    assert ours["HTTP_X_NAME"] == "Иван".encode().decode("latin-1")  # PEP 3333: bytes as latin-1
    assert ours["wsgi.url_scheme"] == "https" and ours["wsgi.input"].read() == b"a=1"
    assert ours["wsgi.version"] == (1, 0) and ours["wsgi.run_once"] is True


def test_the_answer_is_status_headers_and_body(request_env) -> None:
    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        write(b"he")
        return [b"llo"]

    assert request_env.serve(app) == (b"Status: 200 OK\r\nContent-Type: text/plain\r\n"
                                      b"Content-Length: 5\r\n\r\nhello")


@pytest.mark.parametrize("value", ["a\r\nSet-Cookie: x=1", "a\nb", "a\0b"])
def test_a_header_with_a_line_break_is_a_500_not_an_injection(request_env, value, capsys) -> None:
    def app(environ, start_response):
        start_response("303 See Other", [("Location", value)])
        return [b""]

    answer = request_env.serve(app)
    assert answer.startswith(b"Status: 500 ") and b"Set-Cookie" not in answer
    assert b"Location" not in answer


def test_a_failing_app_gives_a_plain_500(request_env) -> None:
    def app(environ, start_response):
        raise RuntimeError("boom")

    answer = request_env.serve(app)
    assert answer.startswith(b"Status: 500 ") and b"boom" not in answer
