"""A small request/response layer over WSGI, and the one place that turns an
error into a page. (:class:`Response` lives in ``web/response.py``, where the
page templates reach it without importing this module.)

Forms are parsed with ``multipart`` in strict mode with size limits; an app
is a function ``(request) -> Response`` wrapped by :func:`wsgi_app`, which
maps :class:`VykhukholError` to its status and anything else to a plain 500
page (the traceback goes to the server's error stream, never to the page).
A request that cannot be read at all (too many fields, a broken %-escape,
bytes that are not UTF-8, a bad Content-Length or multipart body) is a 400.

Work that must not hold up the answer (sending a confirmation letter) is
given to :meth:`Request.after`: it runs once the answer has been written —
under CGI after the page is flushed to the web server, under ``serve`` in a
background thread (``environ["vykhukhol.after"]``), and in-process, where
nobody provides that hook, at once.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from urllib.parse import parse_qsl

from vykhukhol.errors import BadInput, VykhukholError
from vykhukhol.web.headers import SECURITY_HEADERS  # one list: the idle cron tick sends it too
from vykhukhol.web.response import Response

TYPE_CHECKING = False  # typing is not imported: a public page pays for every import
if TYPE_CHECKING:
    from pathlib import Path

# http.cookies (the admin's), html (the page of last resort) and traceback are
# imported where they are used: a CGI process of the public pages or the cron
# URL never needs them, and each costs it ~2 ms.

MAX_FORM_BYTES = 64 * 1024        # a public form: a few short fields
MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # admin imports
MAX_FIELDS = 200
AFTER = "vykhukhol.after"  # environ key: a callable that runs work after the answer
BROKEN_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")

STATUS_TEXT = {200: "OK", 204: "No Content", 302: "Found", 303: "See Other", 400: "Bad Request",
               401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
               409: "Conflict", 413: "Payload Too Large", 429: "Too Many Requests",
               500: "Internal Server Error", 503: "Service Unavailable"}


class HttpError(VykhukholError):
    def __init__(self, status: int, message: str = "", allow: tuple[str, ...] = ()) -> None:
        super().__init__(message or STATUS_TEXT.get(status, ""))
        self.status = status
        self.particular = bool(message)  # not just the status line: worth showing on the page
        self.allow = allow


def redirect(location: str) -> Response:
    return Response("", 303, headers=[("Location", location)])


def text(body: str, status: int = 200) -> Response:
    return Response(body, status, "text/plain; charset=utf-8")


class Request:
    def __init__(self, environ: dict) -> None:
        self.environ = environ
        self.method = environ.get("REQUEST_METHOD", "GET").upper()
        self.path = environ.get("PATH_INFO", "") or ""
        self.script = environ.get("SCRIPT_NAME", "") or ""
        self.remote = environ.get("REMOTE_ADDR", "")  # the direct peer; see client()
        self._form: dict[str, str] | None = None
        self._files: dict = {}
        self._after: list[Callable[[], None]] = []
        self.query = parse_query(environ.get("QUERY_STRING", ""))

    def client(self, trusted_proxies: str) -> str:
        """The client's address, believing X-Forwarded-For only from ``trusted_proxies``."""
        from vykhukhol.web.clients import client_address

        return client_address(self.environ, trusted_proxies)

    def after(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the answer is out (see the module's docstring)."""
        self._after.append(action)

    @property
    def https(self) -> bool:
        """Over https, as the server says, or a trusted proxy (``secure_transport``)."""
        return _https(self.environ)

    @property
    def cookies(self) -> dict[str, str]:
        from http.cookies import SimpleCookie

        jar = SimpleCookie()
        try:
            jar.load(self.environ.get("HTTP_COOKIE", ""))
        except Exception:  # noqa: BLE001 - a mangled cookie header is just no cookie
            return {}
        return {k: m.value for k, m in jar.items()}

    def form(self, max_bytes: int = MAX_FORM_BYTES) -> dict[str, str]:
        """POST fields (first value of each); BadInput for a broken or oversized body."""
        if self._form is not None:
            return self._form
        try:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise BadInput("bad Content-Length") from None
        if length > max_bytes:
            raise HttpError(413)
        if self.method != "POST" or length <= 0:
            self._form = {}
            return self._form
        ctype = self.environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        if ctype == "application/x-www-form-urlencoded":
            # Read here rather than by multipart, which lets broken escapes and
            # bytes that are not UTF-8 through: the same strict rules as a query.
            body = self.environ["wsgi.input"].read(length)
            if len(body) < length:
                raise BadInput("the form ended before its Content-Length")
            self._form = {}
            for key, value in parse_fields(body, "the form"):
                self._form.setdefault(key, value)
            return self._form
        import multipart  # with tempfile, shutil and wsgiref: only for a multipart body

        try:
            forms, files = multipart.parse_form_data(
                self.environ, strict=True, memory_limit=max_bytes, disk_limit=max_bytes,
                part_limit=MAX_FIELDS, spool_limit=max_bytes)
        except multipart.MultipartError as exc:
            raise BadInput(f"the form could not be read ({exc})") from None
        except (UnicodeDecodeError, ValueError):
            raise BadInput("the form is not valid UTF-8") from None
        self._form = {key: forms.get(key) for key in forms}
        self._files = {key: files.get(key) for key in files}
        return self._form

    def upload(self, name: str) -> bytes | None:
        self.form(MAX_UPLOAD_BYTES)
        part = self._files.get(name)
        if part is None:
            return None
        return part.raw

    def value(self, name: str) -> str:
        """A field from the POST body, else from the query string."""
        found = self.form().get(name)
        if found is None:
            found = self.query.get(name, "")
        return found

    def url(self, path: str = "") -> str:
        return path


App = Callable[[Request], Response]


def parse_query(query: str) -> dict[str, str]:
    """The query string's fields (the last value of a repeated one); BadInput if it
    cannot be read."""
    try:
        raw = query.encode("latin-1")  # PEP 3333: the request's bytes as latin-1
    except UnicodeEncodeError:
        raw = query.encode("utf-8", "surrogateescape")  # a caller that gave text
    return dict(parse_fields(raw, "the address"))


def parse_fields(raw: bytes, where: str) -> list[tuple[str, str]]:
    """``a=1&b=2`` bytes as (name, value) pairs, strictly: BadInput for more than
    ``MAX_FIELDS`` fields, a broken %-escape or bytes that are not UTF-8."""
    if BROKEN_ESCAPE.search(raw):
        raise BadInput(f"{where} has a broken %-escape")
    try:
        return parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                         max_num_fields=MAX_FIELDS, errors="strict")
    except UnicodeDecodeError:  # before ValueError: it is one
        raise BadInput(f"{where} is not valid UTF-8") from None
    except ValueError:
        raise BadInput(f"{where} has more than {MAX_FIELDS} fields") from None


def error_page(status: int, lang: str, detail: str = "") -> Response:
    from vykhukhol.web import templating

    try:
        return templating.render_error(status, lang, detail)
    except Exception:  # noqa: BLE001 - the page of last resort must never fail
        import html

        body = f"<!doctype html><title>{status}</title><p>{html.escape(detail or str(status))}</p>"
        return Response(body, status)


def wsgi_app(handler: App, lang: Callable[[], str] = lambda: "en") -> Callable:
    """Wrap ``handler`` into a WSGI app with the error mapping and security headers."""

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        request = None
        try:
            request = Request(environ)
            response = handler(request)
        except HttpError as exc:
            language = _lang(lang)
            response = error_page(exc.status, language, exc.text(language) if exc.particular else "")
            if exc.allow:
                response.headers.append(("Allow", ", ".join(exc.allow)))
        except VykhukholError as exc:
            language = _lang(lang)
            response = error_page(exc.status, language, exc.text(language) if exc.status < 500 else "")
            if exc.status >= 500:
                print(f"vykhukhol: {exc.message}", file=environ.get("wsgi.errors", sys.stderr))
        except Exception:  # noqa: BLE001 - no traceback ever reaches a page
            import traceback

            print(traceback.format_exc(), file=environ.get("wsgi.errors", sys.stderr))
            response = error_page(500, _lang(lang))
        head = environ.get("REQUEST_METHOD", "").upper() == "HEAD"
        if request is None or not request._after:
            return respond(response, start_response, head)
        actions = [_logged(action, environ) for action in request._after]
        later = environ.get(AFTER)
        if later is None:  # nobody to run it after the answer: run it now
            for action in actions:
                action()
        else:
            later(actions)
        return respond(response, start_response, head)

    return app


HSTS = ("Strict-Transport-Security", "max-age=31536000")  # a year; this host only


def secure_transport(app: Callable, settings_path: Path) -> Callable:
    """Wrap a WSGI app for https: a request that a trusted proxy says came over
    https (``X-Forwarded-Proto``, see ``clients.forwarded_https``) is one
    (``wsgi.url_scheme``: the session cookie is then Secure), and an https
    answer carries Strict-Transport-Security when ``site_url`` is https. Not
    over plain http (RFC 6797 forbids it there, and a browser would ignore it)."""

    def wrapped(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if not (_https(environ) or environ.get("HTTP_X_FORWARDED_PROTO")):
            return app(environ, start_response)  # plain http: nothing to do, nothing read
        try:
            from vykhukhol import settings as settings_mod

            settings = settings_mod.load(settings_path) if settings_path.exists() else None
        except Exception:  # noqa: BLE001 - the app itself says what is wrong with them
            settings = None
        if settings is None:
            return app(environ, start_response)
        if environ.get("wsgi.url_scheme") != "https" and environ.get("HTTP_X_FORWARDED_PROTO"):
            from vykhukhol.web.clients import forwarded_https

            if forwarded_https(environ, settings["trusted_proxies"]):
                environ["wsgi.url_scheme"] = "https"
        if not (_https(environ) and settings["site_url"].startswith("https://")):
            return app(environ, start_response)

        def with_hsts(status: str, headers: list, exc_info=None):
            return start_response(status, [*headers, HSTS], exc_info)

        return app(environ, with_hsts)

    return wrapped


def _https(environ: dict) -> bool:
    return environ.get("wsgi.url_scheme") == "https" or environ.get("HTTPS", "").lower() in ("on", "1")


def _logged(action: Callable[[], None], environ: dict) -> Callable[[], None]:
    """``action``, its failure told to the server's error stream (the page is gone)."""
    errors = environ.get("wsgi.errors", sys.stderr)

    def run() -> None:
        try:
            action()
        except VykhukholError as exc:
            print(f"vykhukhol: {exc.message}", file=errors)
        except Exception:  # noqa: BLE001 - after the answer there is no page to spoil
            import traceback

            print(traceback.format_exc(), file=errors)

    return run


def _lang(lang: Callable[[], str]) -> str:
    try:
        return lang()
    except Exception:  # noqa: BLE001 - an unreadable setting must not break the error page
        return "en"


def respond(response: Response, start_response: Callable, head: bool = False) -> list[bytes]:
    body = response.body.encode("utf-8", errors="replace") if isinstance(response.body, str) \
        else response.body
    headers = [("Content-Type", response.content_type), ("Content-Length", str(len(body)))]
    # A header the page sets replaces the default of that name: sent twice,
    # a proxy or a browser would choose which to believe.
    own = {name.lower() for name, _ in response.headers}
    headers += [pair for pair in SECURITY_HEADERS if pair[0].lower() not in own]
    headers += response.headers
    status = f"{response.status} {STATUS_TEXT.get(response.status, 'Unknown')}"
    start_response(status, headers)
    return [] if head else [body]
