"""The shared fixture itself works: init, a service, a run into the outbox."""


def test_a_fresh_site_sends_the_first_letter_to_a_confirmed_subscriber(site):
    site.service("news", letters=[("Hello {{ name }}", "0s", "Body for {{ email }}")])
    site.subscriber("news", "bob@example.org", name="Bob")
    out = site.ok("cron")
    assert "handed over 1 for news" in out
    [letter] = site.outbox()
    assert letter["Subject"] == "Hello Bob"
    assert site.subscribers("news")["bob@example.org"].sent == 1
