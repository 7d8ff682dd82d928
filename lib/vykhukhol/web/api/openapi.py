"""The API's OpenAPI 3.1 document, made from the routes' table (so it says
what the code does; ``tools/docs_reference.py`` writes it to
``docs/reference/openapi.json`` and the tests hold the two equal)."""

from __future__ import annotations

import re

from vykhukhol import __version__
from vykhukhol.web.api.credentials import SCOPES
from vykhukhol.web.api.routes import ROUTES, Route

REFUSALS = {
    "400": "the body is not a JSON object, or a value does not fit its field (the message names it)",
    "401": "no token, or not a valid one (wrong, revoked, expired)",
    "403": "the token lacks the scope, or may not be used from this address",
    "404": "no such endpoint, service, subscriber or newsletter",
    "405": "the method is not allowed on this path",
    "409": "the call conflicts with the list's state (a service closed to sign-ups)",
    "413": "the body is too large",
    "422": "an unknown field, a wrong type, a missing field, or a value the call refuses",
    "429": "over the token's calls a minute (Retry-After says when to try again)",
}
OK = {"GET": "200", "PATCH": "200", "DELETE": "200", "POST": "200"}


def _operation(route: Route) -> dict:
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"\{(\w+)\}", route.path)]
    status = "202" if route.handler.__name__ == "add_subscriber" else \
        "201" if route.handler.__name__ == "create_newsletter" else OK[route.method]
    operation: dict = {
        "operationId": route.handler.__name__, "summary": route.summary,
        "security": [{"bearer": [route.scope]}, {"apiKey": [route.scope]}],
        "x-scope": route.scope,
        "responses": {status: {"description": "done", "content": {"application/json": {
            "schema": {"type": "object"}}}},
            **{code: {"description": what, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}} for code, what in REFUSALS.items()}},
    }
    if params:
        operation["parameters"] = params
    if route.fields:
        properties = {}
        for f in route.fields:
            schema: dict = {"type": f.type, "description": f.what}
            if f.type == "array":
                schema["items"] = {"type": "string"}
            if f.type == "object":
                schema["additionalProperties"] = {"type": ["string", "null"]}
            properties[f.name] = schema
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": False, "properties": properties,
            "required": [f.name for f in route.fields if f.required]}}}}
    return operation


def document() -> dict:
    paths: dict[str, dict] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Vykhukhol API", "version": __version__,
                 "description": "JSON in and out; a token with scopes (" + ", ".join(SCOPES) + ")."},
        "servers": [{"url": "/cgi/api.py", "description": "under Apache (CGI)"},
                    {"url": "/api", "description": "under vykhukhol serve or WSGI"}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"},
                                "apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
            "schemas": {"Error": {"type": "object", "required": ["error"], "properties": {"error": {
                "type": "object", "required": ["code", "message"],
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}},
        },
    }
