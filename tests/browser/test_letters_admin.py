"""The admin's letters in headless Chromium: the letter preview
(HTML in a sandboxed frame beside the text, web_url and the footer filled in,
an unknown variable warned of), the footer on the Settings page, a
confirmation template without its link refused, a broken letter and debug
mode on Status. Screenshots in tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

from vykhukhol import services as svc

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

HOSTILE = ('<html><body><p id="hello">Hello {{ name }}</p>'
           '<p><a id="web" href="{{ web_url }}">in the browser</a></p>'
           '<img id="remote" src="http://127.0.0.1:9/pixel.gif">'
           '<script>parent.document.title = "pwned"; document.title = "ran";</script>'
           '</body></html>')


def test_the_preview_shows_the_html_in_a_sandboxed_frame_beside_the_text(site, server, browser):
    """The HTML part is rendered (not shown as source) in a frame that runs no
    script and fetches nothing; the text part beside it has web_url and the
    footer; {{ nmae }} is a warning, in the preview and after the save."""
    site.service("news", letters=[])
    b = browser
    b.log_in()
    b.open("/admin/services/news/letters/new")
    b.fill("#subject", "Hi {{ nmae }}")
    b.fill("#body", "Hello {{ name }}.\nOnline: {{ web_url }}\n")
    b.fill("#html", HOSTILE)
    b.press("#preview-letter")
    warning = b.text("#preview-warning-1")
    assert "{{ nmae }} is not a variable" in warning
    text = b.text("#preview-text")
    assert "Online: http" in text and "/cgi/view.py?" in text  # web_url filled in
    assert "Unsubscribe: http" in text and "Your subscriptions: http" in text  # the footer
    frame = b.find("iframe#preview-html")
    assert frame.get_attribute("sandbox") == ""
    b.driver.switch_to.frame(frame)
    try:
        assert b.text("#hello") == "Hello Ivan"  # rendered, not source
        assert "/cgi/view.py?" in b.find("#web").get_attribute("href")
        assert b.driver.execute_script("return document.title") != "ran"
        # the remote image was not fetched: no network from the frame
        assert b.driver.execute_script(
            "return document.getElementById('remote').naturalWidth") == 0
        assert "Unsubscribe" in b.text(".vykhukhol-footer")
    finally:
        b.driver.switch_to.default_content()
    assert b.driver.title != "pwned"
    b.screenshot("letter-preview-html-frame-en")
    # The full-page capture leaves the sandboxed frame blank (Chromium draws it in
    # a process of its own); the frame's own picture shows what it rendered.
    b.driver.execute_script("arguments[0].scrollIntoView()", frame)
    (ARTIFACTS / "letter-preview-frame-en.png").write_bytes(frame.screenshot_as_png)
    b.press("#save-letter")
    assert "Letter 1 added." in b.flash() and "{{ nmae }} is not a variable" in b.flash()


def test_the_footer_is_edited_on_the_settings_page_and_refused_without_the_way_out(
        site, server, browser):
    b = browser
    b.log_in()
    b.open("/admin/settings")
    assert "Unsubscribe: {{ unsubscribe_url }}" in b.find("#footer_text").get_attribute("value")
    b.fill("#footer_text", "Bye from {{ service }}.")
    b.press("#save-footer")
    assert "must contain the {{ unsubscribe_url }} link" in b.text("#footer_text-error")
    assert b.find("#footer_text").get_attribute("value").strip() == "Bye from {{ service }}."
    assert not (site.root / "footer.txt").exists()
    b.screenshot("footer-refused-en")
    b.fill("#footer_text", "Leave: {{ unsubscribe_url }} ({{ postal_address }})")
    b.press("#save-footer")
    assert "Footer saved." in b.flash()
    assert (site.root / "footer.txt").read_text() == \
        "Leave: {{ unsubscribe_url }} ({{ postal_address }})\n"
    b.screenshot("settings-footer-en")


def test_a_confirmation_text_without_its_link_is_refused_in_both_languages(site, server, browser):
    site.service("news", letters=[])
    b = browser
    b.log_in()
    for lang, reason in (("en", "must contain the {{ confirm_url }} link"),
                         ("ru", "должна быть ссылка {{ confirm_url }}")):
        site.set(language=lang)
        b.open("/admin/services/news")
        b.fill("#confirm_body", "Please confirm, {{ name }}")
        b.press("form.box[action$='/services/news'] button[type=submit]")
        assert reason in b.text("body"), b.text("body")[:1500]
        b.screenshot(f"confirm-body-refused-{lang}")
    assert svc.find_service(site.data, "news").confirm_body == ""


def test_status_warns_of_a_broken_letter_and_says_what_debug_mode_holds(site, server, browser):
    service = site.service("course", letters=[("One", "0s", "1")])
    (service.letters_dir / "001.txt").write_text("Subject: One\nDelay: 0s\n\n{% if name %}x\n")
    b = browser
    b.log_in()
    b.open("/admin/")
    assert "course: letter 1 cannot be made" in b.text("body")
    assert not b.all("#debug-banner")
    b.press("#mode-switch")  # to debug
    banner = b.text("#debug-banner")
    assert "no letter goes to subscribers" in banner and "confirmation requests" in banner
    assert "What still goes: alerts and reports to admin_email" in banner
    b.screenshot("status-debug-broken-letter-en")
    svc.edit_letter(service, 1, "One", "0s", "{% if name %}x{% endif %}\n", None)
    b.open("/admin/")
    assert "cannot be made" not in b.text("body")
