"""Postmark's callback asks for its own proof. Postmark signs nothing, and the
key in the URL is in every provider's URL (whoever holds one holds them all),
so a Postmark callback without the basic-auth credentials of
``hooks.postmark_user``/``hooks.postmark_password`` is refused (403) and
changes nothing, as the generic form is off without its secret
(docs/deliverability/providers.md#provider-callbacks). Through a real
``vykhukhol serve`` (tests/support/hookkit.py's installation)."""

from __future__ import annotations

import base64

from support import hookkit as kit
from vykhukhol import settings as settings_mod

hooked = kit.hooked  # the fixture: serve, a local CA and a loopback SNS


def test_postmark_with_the_key_alone_is_refused_and_changes_nothing(hooked) -> None:
    kit.subscribe(hooked, "pm-keyonly@example.net", "news")
    bounce = kit.payload("postmark_bounce.json").replace("RECIPIENT", "pm-keyonly@example.net")
    anyone = {"Authorization": "Basic " + base64.b64encode(b":").decode()}
    for headers in ({}, anyone):
        status, text = hooked.post("postmark", bounce, headers=headers)
        assert status == 403 and "hooks.postmark_user" in text, (status, text)
    settings_mod.update(hooked.data.settings, {"hooks.postmark_user": "pm"})  # half set: still off
    try:
        status, text = hooked.post("postmark", bounce, headers={
            "Authorization": "Basic " + base64.b64encode(b"pm:").decode()})
        assert status == 403, (status, text)
    finally:
        settings_mod.update(hooked.data.settings, {"hooks.postmark_user": ""})
    assert hooked.subscribers("news")["pm-keyonly@example.net"].failures == 0
    assert any(line[5] == "postmark" and "hooks.postmark_user" in line[6] for line in hooked.log())
