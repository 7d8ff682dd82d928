"""The body of an API call: read, parsed as JSON and held to the route's fields.

It answers only with :class:`~vykhukhol.web.api.routes.Refused`; what a
field's value means is the endpoint's own check.
"""

from __future__ import annotations

import json

from vykhukhol.web.api.routes import Refused, Route
from vykhukhol.web.http import Request

MAX_BODY = 256 * 1024  # bytes of a call's body
TYPES: dict[str, type] = {"string": str, "boolean": bool, "array": list, "object": dict}
_SAID = {"array": "a list of strings", "object": "an object of strings (or nulls)"}


def read_body(request: Request, route: Route) -> dict:
    """The call's JSON body, checked against the route's fields: its size (413),
    JSON (400), each field known (422), of its type (422), none missing (422)."""
    if not route.fields:
        return {}
    try:
        length = int(request.environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Refused(400, "body", "bad Content-Length") from None
    if length > MAX_BODY:
        raise Refused(413, "too_large", f"the body is over {MAX_BODY} bytes")
    raw = request.environ["wsgi.input"].read(length) if length > 0 else b""
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused(400, "json", f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Refused(400, "json", "the body must be a JSON object")
    names = {f.name: f for f in route.fields}
    for key, value in body.items():
        if key not in names:
            raise Refused(422, "unknown_field", f"unknown field {key[:60]!r}; this call takes "
                                                f"{', '.join(names)}")
        kind = names[key].type
        if not isinstance(value, TYPES[kind]) or \
                (isinstance(value, list) and not all(isinstance(v, str) for v in value)) or \
                (isinstance(value, dict) and not all(isinstance(v, str) or v is None
                                                     for v in value.values())):
            raise Refused(422, "type", f"{key}: must be {_SAID.get(kind, 'a ' + kind)}")
    missing = [f.name for f in route.fields if f.required and f.name not in body]
    if missing:
        raise Refused(422, "missing_field", f"missing {', '.join(missing)}")
    return body
