"""Templates checked on the command line: a confirmation request without its
link is refused with the reason (saved, every new subscriber would get a
letter with no way to confirm: docs/using/services.md#confirmation-request),
and a variable no letter is given is a warning
(docs/using/services.md#services-letters). The admin's side is in
tests/browser/test_letters_admin.py."""

from __future__ import annotations

from vykhukhol import services as svc


def test_service_edit_refuses_a_confirmation_text_without_confirm_url(site) -> None:
    site.service("news", letters=[])
    result = site.cli("service", "edit", "news", "--confirm-body", "Please confirm, {{ name }}",
                      check=False)
    assert result.returncode != 0
    assert "confirm_body: must contain the {{ confirm_url }} link" in result.stderr
    assert "Traceback" not in result.stderr
    assert svc.find_service(site.data, "news").confirm_body == ""


def test_service_add_refuses_it_too_and_takes_one_with_the_link(site) -> None:
    svc.add_db(site.data, "main")
    refused = site.cli("service", "add", "news", "--db", "main", "--title", "News",
                       "--confirm-body", "Hello", check=False)
    assert refused.returncode != 0 and "{{ confirm_url }}" in refused.stderr
    assert svc.load_services(site.data) == []
    site.cli("service", "add", "news", "--db", "main", "--title", "News",
             "--confirm-subject", "Confirm {{ service }}",
             "--confirm-body", "Click {{ confirm_url }}, {{ name }}.")
    service = svc.find_service(site.data, "news")
    assert service.confirm_body == "Click {{ confirm_url }}, {{ name }}."
    assert service.confirm_subject == "Confirm {{ service }}"


def test_an_empty_confirmation_text_means_the_default_request(site) -> None:
    site.service("news", letters=[])
    site.cli("service", "edit", "news", "--confirm-body", "")
    assert site.subscribe("news", "ann@example.org") == "added"
    [request] = [m for m in site.outbox() if "ann@" in str(m["To"])]
    assert "confirm.py?" in request.get_body(("plain",)).get_content()


def test_letter_add_warns_of_a_variable_no_letter_is_given(site) -> None:
    site.service("news", letters=[])
    result = site.cli("letter", "add", "news", "--subject", "Hi {{ nmae }}", "--delay", "0s",
                      "--body", "Hello {{ name }}, {{ footer }}")
    assert "warning: {{ nmae }} is not a variable letters are given" in result.stderr
    assert "{{ name }}" not in result.stderr and "footer" not in result.stderr
    assert len(svc.load_letters(svc.find_service(site.data, "news"))) == 1  # saved all the same
