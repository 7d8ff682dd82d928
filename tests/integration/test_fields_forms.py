"""The subscribe form asking for the site's fields (docs/using/fields.md#fields-forms):
the real cgi/subscribe.py of a copied installation, as a visitor's browser
posts to it. A value that does not fit gets the form again, in the page's
language, with what was typed and nothing stored; a value that fits rides on
the subscriber's line, whatever characters it holds."""

from __future__ import annotations

from urllib.parse import urlencode

from support.cgikit import vykhukhol
from support.webtools import assert_clean_page
from vykhukhol import services as svc
from vykhukhol.errors import BadInput

SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}


def define(install, *form_fields: str) -> None:
    data = ("--data", str(install.data_root))
    vykhukhol(*data, "field", "add", "city", "--type", "text", "--label-ru", "Город",
              "--label-en", "City")
    vykhukhol(*data, "field", "add", "age", "--type", "number", "--label-ru", "Возраст",
              "--label-en", "Age")
    vykhukhol(*data, "field", "add", "plan", "--type", "choice", "--choices", "Free|Pro",
              "--required", "--label-ru", "Тариф", "--label-en", "Plan")
    vykhukhol(*data, "field", "add", "customer", "--type", "yesno")
    if form_fields:
        vykhukhol(*data, "service", "edit", "news", "--form-fields", ", ".join(form_fields))


def post(install, **values: str):
    return install.run("cgi/subscribe.py", "POST",
                       body=urlencode({"service": "news", **values}).encode(), **SAME_SITE)


def files_of(install) -> dict[str, bytes]:
    root = install.data_root
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".free") and "log" not in p.parts
            and "state" not in p.parts}


def test_the_form_asks_for_the_fields_its_service_names_in_their_order(install):
    define(install, "plan", "city", "customer")
    page = install.run("cgi/subscribe.py", query="service=news")
    assert_clean_page(page)
    body = page.body
    assert body.index('name="f.plan"') < body.index('name="f.city"') < body.index('name="f.customer"')
    assert 'name="f.age"' not in body
    assert '<label for="f-city">City (optional)</label>' in body
    assert '<select id="f-plan" name="f.plan" required>' in body
    assert '<option value="Pro">Pro</option>' in body
    assert '<option value="yes">Yes</option>' in body
    # A service that asks for nothing shows the form it always did.
    vykhukhol("--data", str(install.data_root), "service", "edit", "news", "--form-fields", "")
    assert 'name="f.' not in install.run("cgi/subscribe.py", query="service=news").body


def test_values_that_fit_are_stored_with_the_line_in_their_kept_form(install):
    define(install, "city", "age", "plan", "customer")
    page = post(install, email="anna@example.org", name="Anna", **{
        "f.city": " Тверь 100% <b>&\"quoted\" ", "f.age": "1 000,50", "f.plan": "pro",
        "f.customer": "да"})
    assert page.status == 200 and "Check your mailbox" in page.body, page
    anna = install.subscribers()["anna@example.org"]
    assert anna.fields == {"city": "Тверь 100% <b>&\"quoted\"", "age": "1000.5", "plan": "Pro",
                           "customer": "yes"}
    line = [text for text in svc.find_service(install.data, "news").subscribers_path
            .read_text(encoding="utf-8").splitlines() if text.startswith("anna@")][0]
    assert line.endswith("\tf.city=Тверь 100%25 <b>&\"quoted\"\tf.age=1000.5\tf.plan=Pro\tf.customer=yes")


def test_a_value_that_does_not_fit_gets_the_form_again_and_stores_nothing(install):
    define(install, "city", "age", "plan")
    before = files_of(install)
    page = post(install, email="anna@example.org", name="<Anna>", **{
        "f.city": '"><script>alert(1)</script>', "f.age": "many", "f.plan": "Free"})
    assert page.status == 400, page
    assert_clean_page(page)
    assert "Age: a number such as 42 or 12.5" in page.body
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page.body  # kept, escaped
    assert "<script>alert" not in page.body
    assert 'value="many"' in page.body and 'value="&lt;Anna&gt;"' in page.body
    assert '<option value="Free" selected>Free</option>' in page.body
    assert files_of(install) == before and not install.outbox()

    missing = post(install, email="anna@example.org", **{"f.city": "Tver"})
    assert missing.status == 400 and "Plan is required" in missing.body, missing
    assert 'value="Tver"' in missing.body
    assert files_of(install) == before
    tab = post(install, email="anna@example.org", **{"f.city": "Tver\tx", "f.plan": "Free"})
    assert tab.status == 400 and "City: control characters are not allowed" in tab.body, tab
    assert files_of(install) == before


def test_the_error_speaks_the_pages_language(install):
    define(install, "age", "plan")
    vykhukhol("--data", str(install.data_root), "settings", "set", "language", "ru")
    page = post(install, email="anna@example.org", **{"f.age": "много", "f.plan": "Free"})
    assert page.status == 400, page
    assert "Возраст: число, например 42 или 12,5" in page.body, page.body
    form = install.run("cgi/subscribe.py", query="service=news").body
    assert '<label for="f-age">Возраст (необязательно)</label>' in form
    assert "anna@example.org" not in install.subscribers()


def test_a_subscribe_again_updates_the_values_it_gives_and_keeps_the_others(install):
    define(install, "city", "plan")
    assert post(install, email="anna@example.org", **{"f.city": "Tver", "f.plan": "Free"}).status == 200
    assert post(install, email="anna@example.org", **{"f.city": "", "f.plan": "Pro"}).status == 200
    assert install.subscribers()["anna@example.org"].fields == {"city": "Tver", "plan": "Pro"}


def test_form_fields_name_only_defined_fields(install):
    define(install)
    try:
        svc.edit_service(install.data, "news", {"form_fields": "city, town"})
    except BadInput as exc:
        assert "no field named 'town'" in exc.message
    else:
        raise AssertionError("an undefined field was accepted")
    assert svc.find_service(install.data, "news").form_fields == ()


def test_the_snippet_for_the_owners_site_asks_for_the_same_fields(install):
    from vykhukhol.settings import load
    from vykhukhol.web.admin.services import form_snippet

    define(install, "plan")
    service = svc.find_service(install.data, "news")
    snippet = form_snippet(load(install.data.settings), service, install.data_root)
    assert '<select id="f-plan" name="f.plan" required>' in snippet
    assert snippet.index('name="name"') < snippet.index('name="f.plan"') < snippet.index('name="website"')


def test_a_fields_file_saved_with_a_byte_order_mark_still_reads(install):
    # Windows Notepad saves UTF-8 with a BOM before the first section.
    define(install, "city")
    path = install.data_root / "fields.ini"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    page = install.run("cgi/subscribe.py", query="service=news")
    assert page.status == 200 and 'name="f.city"' in page.body, page
    page = post(install, email="anna@example.org", **{"f.city": "Tver"})
    assert page.status == 200, page
    assert install.subscribers()["anna@example.org"].fields == {"city": "Tver"}


def test_a_stranger_posting_a_confirmed_readers_address_cannot_rewrite_their_values(install):
    define(install, "city", "plan")
    assert post(install, email="anna@example.org", **{"f.city": "Tver", "f.plan": "Free"}).status == 200
    vykhukhol("--data", str(install.data_root), "subscriber", "add", "news", "anna@example.org",
              "--confirmed")
    before = install.subscribers()["anna@example.org"]
    assert before.state.confirmed and before.fields == {"city": "Tver", "plan": "Free"}
    known = post(install, email="anna@example.org", **{"f.city": "Nowhere", "f.plan": "Pro"})
    unknown = post(install, email="bob@example.org", **{"f.city": "Nowhere", "f.plan": "Pro"})
    # The same answer as for an address never seen, and the reader's values stay hers.
    assert known.status == unknown.status == 200
    assert known.body.replace("anna@", "bob@") == unknown.body
    assert install.subscribers()["anna@example.org"].fields == {"city": "Tver", "plan": "Free"}


def test_a_fields_file_a_hand_edit_broke_shows_visitors_none_of_it(install):
    define(install, "city")
    (install.data_root / "fields.ini").write_text("[city]\nlabel_en = secret plans\n[city\n",
                                                  encoding="utf-8")
    before = files_of(install)
    for page in (install.run("cgi/subscribe.py", query="service=news"),
                 post(install, email="anna@example.org", **{"f.city": "Tver"})):
        assert page.status == 503 and "Traceback" not in page.body, page
        assert "Not available right now (the form is being changed)" in page.body
        assert "fields.ini" not in page.body and "secret" not in page.body
    assert files_of(install) == before
