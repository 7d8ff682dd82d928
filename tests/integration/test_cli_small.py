"""The command line's small answers: the mode asked for alone, every setting
listed with its value and default, a list with nothing in it still printing
its header, and English counts in the right number ("1 recipient")."""

from __future__ import annotations

from vykhukhol import settings as settings_mod


def test_mode_alone_prints_the_mode_and_changes_nothing(site):
    result = site.cli("mode")
    assert result.stdout == "mode: working\n" and result.stderr == ""
    assert site.settings()["mode"] == "working"


def test_a_fresh_site_says_it_is_in_debug_mode(fresh_site):
    assert fresh_site.ok("mode") == "mode: debug\n"
    assert fresh_site.settings()["mode"] == "debug"


def test_settings_list_shows_every_setting_with_its_value_and_default(site):
    site.set(news_per_run=7)
    lines = site.cli("settings", "list").stdout.splitlines()
    assert lines[0] == "#key\tvalue\tdefault"
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in lines[1:]}
    assert list(rows) == list(settings_mod.KEYS)
    assert rows["news_per_run"] == ["7", settings_mod.KEYS["news_per_run"].default]
    assert rows["mode"] == ["working", "debug"]
    secret = rows["security.secret"]
    assert secret[0] == "(set)"
    assert site.settings().raw["security.secret"] not in "\t".join(lines)


def test_an_empty_list_prints_its_header(fresh_site):
    site = fresh_site
    assert site.ok("db", "list").splitlines()[0] == "#name"
    assert site.ok("newsletter", "list") == (
        "#job\tstart\tservices\thanded over\tfailed\tskipped\tin doubt\tfinish\n")
    assert site.ok("service", "list").startswith("#name\t")
    assert site.ok("suppress", "list").startswith("#")
    assert site.ok("removed", "list").startswith("removed (UTC)  address")
    site.service("news")
    assert site.ok("letter", "list", "news").startswith("#number\t")
    assert site.ok("subscriber", "list", "news").startswith("#email\t")


def test_counts_of_one_are_singular(site, tmp_path):
    site.service("news")
    site.subscriber("news", "anna@example.org")
    code, out, err = site.call("newsletter", "create", "--services", "news", "--subject", "Hi",
                               "--body", "Hello.")
    assert code == 0 and err.splitlines()[-1] == "1 recipient", err
    site.subscriber("news", "boris@example.org")
    code, out, err = site.call("newsletter", "create", "--services", "news", "--subject", "Hi",
                               "--body", "Hello.")
    assert code == 0 and err.splitlines()[-1] == "2 recipients", err
    site.ok("suppress", "add", "gone@example.org")
    code, out, err = site.call("suppress", "export", str(tmp_path / "one.csv"))
    assert code == 0 and f"1 address written to {tmp_path / 'one.csv'}" in err, err
    assert "(0 letters published so far)" in site.ok("archive", "on", "news")


def test_the_counter_says_one_thing_and_many_things():
    from vykhukhol.cli.common import numbered

    assert [numbered(n, "item") for n in (0, 1, 2, 21)] == ["0 items", "1 item", "2 items",
                                                           "21 items"]
    assert numbered(1, "address", "addresses") == "1 address"
    assert numbered(3, "address", "addresses") == "3 addresses"
