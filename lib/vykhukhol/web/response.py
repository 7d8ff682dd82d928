"""The answer a page gives: body, status, content type, headers and cookies.

Apart from :mod:`vykhukhol.web.http` so that the templates (``pages``), which
make answers, and ``http``, which turns an error into a page, both reach it
without importing each other.

A plain class rather than a dataclass: :mod:`dataclasses` imports
:mod:`inspect`, which a CGI process of a public page would pay for.
"""

from __future__ import annotations


class Response:
    __slots__ = ("body", "status", "content_type", "headers")

    def __init__(self, body: str | bytes = "", status: int = 200,
                 content_type: str = "text/html; charset=utf-8",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.body = body
        self.status = status
        self.content_type = content_type
        self.headers: list[tuple[str, str]] = [] if headers is None else headers

    def __repr__(self) -> str:
        return f"Response(status={self.status!r}, content_type={self.content_type!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Response):
            return NotImplemented
        return (self.body, self.status, self.content_type, self.headers) == \
            (other.body, other.status, other.content_type, other.headers)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def set_cookie(self, name: str, value: str, *, max_age: int | None = None,
                   secure: bool = False, path: str = "/") -> None:
        from http.cookies import SimpleCookie

        cookie = SimpleCookie()
        cookie[name] = value
        morsel = cookie[name]
        morsel["path"] = path
        morsel["httponly"] = True
        morsel["samesite"] = "Strict"
        if secure:
            morsel["secure"] = True
        if max_age is not None:
            morsel["max-age"] = max_age
        self.headers.append(("Set-Cookie", morsel.OutputString()))
