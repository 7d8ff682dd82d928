"""The reader's values on their own page (docs/using/fields.md#fields-own-page)
and their end with an erase (docs/using/fields.md#fields-values): the real
``cgi/manage.py`` of a copied installation, as a browser posts to it."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from support.cgikit import query_of, vykhukhol
from support.webtools import assert_clean_page
from vykhukhol import services as svc
from vykhukhol import tokens
from vykhukhol.services import subscribers as subs
from vykhukhol.settings import load as load_settings

ANNA = "anna@example.org"
SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}


def setup(install) -> str:
    """Fields city, age and plan; Anna on news (city Tver) and on club; her page's query."""
    data = ("--data", str(install.data_root))
    vykhukhol(*data, "field", "add", "city", "--type", "text", "--label-en", "City")
    vykhukhol(*data, "field", "add", "age", "--type", "number", "--label-en", "Age")
    vykhukhol(*data, "field", "add", "plan", "--type", "choice", "--choices", "Free|Pro",
              "--required", "--label-en", "Plan")
    vykhukhol(*data, "service", "add", "club", "--db", "main", "--title", "Club")
    vykhukhol(*data, "subscriber", "add", "news", ANNA, "--name", "Anna", "--confirmed")
    vykhukhol(*data, "subscriber", "add", "club", ANNA, "--name", "Anna", "--confirmed")
    vykhukhol(*data, "subscriber", "add", "news", "bob@example.org", "--confirmed")
    path = svc.find_service(install.data, "news").subscribers_path
    subs.update_one(path, ANNA, lambda s: s.with_fields({"city": "Tver", "plan": "Free"}))
    settings = load_settings(install.data.settings)
    return query_of(tokens.manage_link(settings["site_url"], settings.secret, ANNA))


def lines(install) -> dict[str, dict[str, str]]:
    return {name: install.subscribers(name)[ANNA].fields for name in ("news", "club")}


def save(install, query: str, **values: str):
    form = dict(part.split("=", 1) for part in query.split("&"))
    body = urlencode({"e": ANNA, "t": form["t"], "action": "fields",
                      **{f"f.{k}": v for k, v in values.items()}}).encode()
    return install.run("cgi/manage.py", "POST", body=body, **SAME_SITE)


def test_the_own_page_shows_the_values_and_saves_them_on_every_line(install):
    query = setup(install)
    page = install.run("cgi/manage.py", query=query)
    assert page.status == 200, page
    assert_clean_page(page)
    assert "Your details" in page.body
    assert 'name="f.city" value="Tver"' in page.body
    assert '<option value="Free" selected>Free</option>' in page.body

    saved = save(install, query, city="Тверь <b>", age="42,0", plan="pro")
    assert saved.status == 200 and "Your details are saved." in saved.body, saved
    assert 'value="Тверь &lt;b&gt;"' in saved.body
    both = {"city": "Тверь <b>", "age": "42", "plan": "Pro"}
    assert lines(install) == {"news": both, "club": both}
    assert install.subscribers()["bob@example.org"].fields == {}

    cleared = save(install, query, city="", plan="Pro")  # age not posted: it stays
    assert cleared.status == 200, cleared
    assert lines(install)["club"] == {"age": "42", "plan": "Pro"}


def test_a_value_that_does_not_fit_changes_nothing_and_is_shown_again(install):
    query = setup(install)
    before = lines(install)
    bad = save(install, query, city="Moscow", age="old", plan="Free")
    assert bad.status == 400, bad
    assert_clean_page(bad)
    assert "Age: a number such as 42 or 12.5" in bad.body
    assert 'value="old"' in bad.body and 'value="Moscow"' in bad.body
    required = save(install, query, plan="")
    assert required.status == 400 and "Plan is required" in required.body
    assert lines(install) == before


def test_an_erase_takes_the_values_with_the_lines(install):
    query = setup(install)
    form = dict(part.split("=", 1) for part in query.split("&"))
    exported = install.run("cgi/manage.py", "POST", body=urlencode(
        {"e": ANNA, "t": form["t"], "action": "export"}).encode(), **SAME_SITE)
    assert json.loads(exported.body)["subscriptions"][1]["values"] == {"city": "Tver",
                                                                       "plan": "Free"}
    erased = install.run("cgi/manage.py", "POST", body=urlencode(
        {"e": ANNA, "t": form["t"], "action": "erase", "sure": "yes"}).encode(), **SAME_SITE)
    assert erased.status == 200 and "Erased" in erased.body, erased
    for name in ("news", "club"):
        text = svc.find_service(install.data, name).subscribers_path.read_text(encoding="utf-8")
        assert "Tver" not in text and ANNA not in text
    # The CLI's remove takes a line's values with it too.
    path = svc.find_service(install.data, "news").subscribers_path
    subs.update_one(path, "bob@example.org", lambda s: s.with_fields({"city": "Omsk"}))
    vykhukhol("--data", str(install.data_root), "subscriber", "remove", "news", "bob@example.org")
    assert "Omsk" not in path.read_text(encoding="utf-8")


def test_the_admins_delete_takes_the_values_and_its_service_form_keeps_form_fields(site):
    from support.servetools import admin_client

    site.ok("field", "add", "city", "--type", "text")
    site.service("news")
    site.ok("service", "edit", "news", "--form-fields", "city")
    site.subscribe("news", ANNA, fields={"city": "Tver"})
    request = admin_client(site)
    status, _, page = request("GET", "/services/news")
    assert status == 200 and 'id="form_fields" name="form_fields" value="city"' in page
    service = svc.find_service(site.data, "news")
    status, _, _ = request("POST", "/services/news", {
        "title": "News", "from_name": "", "from_email": "", "send_window": "",
        "form_fields": "city", "confirm_subject": "", "confirm_body": ""})
    assert status == 303 and svc.find_service(site.data, "news").form_fields == ("city",)
    status, _, page = request("POST", "/services/news", {"title": "News", "form_fields": "town"})
    assert status == 400 and "поля &#39;town&#39; нет" in page  # the site speaks Russian
    status, _, _ = request("POST", "/services/news/subscribers/delete",
                           {"email": ANNA, "confirm": "yes"})
    assert status == 303
    assert "Tver" not in service.subscribers_path.read_text(encoding="utf-8")


def test_a_fields_file_a_hand_edit_broke_leaves_the_rest_of_the_own_page_working(install):
    query = setup(install)
    (install.data_root / "fields.ini").write_text("[city]\ntype = text\ntype = number\n",
                                                  encoding="utf-8")
    page = install.run("cgi/manage.py", query=query)
    assert page.status == 200, page
    assert_clean_page(page)
    assert "Your details" not in page.body and 'value="leave_all"' in page.body
    assert "fields.ini" not in page.body  # the owner's file is not the reader's business
    saved = save(install, query, city="Moscow")
    assert saved.status == 503 and "cannot be saved right now" in saved.body, saved
    assert "fields.ini" not in saved.body
    assert lines(install)["news"] == {"city": "Tver", "plan": "Free"}
