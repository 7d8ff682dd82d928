"""The answer a page gives: body, status, content type, headers and cookies.

Apart from :mod:`vykhukhol.web.http` so that the templates (``pages``), which
make answers, and ``http``, which turns an error into a page, both reach it
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Response:
    body: str | bytes = ""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)

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
