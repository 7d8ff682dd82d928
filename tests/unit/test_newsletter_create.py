"""Creating a newsletter (docs/using/newsletters.md#newsletters): the ledger a job starts with.

One ``pending`` row per confirmed subscriber of the job's services, in the
order the services were named and then file order, each address once
(addresses compared ignoring case; the first spelling and name win).
Unconfirmed subscribers, malformed lines and lines that are not UTF-8 are left
out, exactly as every reader of subscribers.txt leaves them out. The reference
is the plain reading: ``subscribers.subscribers()`` and a set of keys.

Real files in the ``site`` fixture's folder; subscriber files are written here
byte for byte, as an FTP upload or a hand edit would leave them.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER
from vykhukhol.states import LedgerState

T = "2026-11-01T10:00:00Z"


def line(email: str, name: str = "", state: str = "active", subscribed: str = T,
         confirmed: str = T, sent: str = "0", last_sent: str = "-", reminders: str = "0",
         last_reminder: str = "-", failures: str = "0", ip: str = "-", *extra: str) -> str:
    """A subscriber line with every field given as text, so any field can be wrong."""
    return "\t".join((email, name, state, subscribed, confirmed, sent, last_sent, reminders,
                      last_reminder, failures, ip, *extra))


def write_raw(site, service: str, lines: list[str], ending: str = "\n") -> None:
    """The service's subscribers.txt, byte for byte (U+DC80..U+DCFF stand for bytes
    that are not UTF-8)."""
    text = ending.join([HEADER, *lines]) + ending
    path = svc.find_service(site.data, service).subscribers_path
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def ledger(site, job: str) -> list[str]:
    """The job's ledger rows as written, header left out."""
    raw = site.data.job(job, "list").read_bytes().decode("utf-8", "surrogateescape")
    head, *rows = raw.split("\n")
    assert head == newsletters.LIST_HEADER and rows[-1] == ""
    return rows[:-1]


def reference(site, services: list[str]) -> list[str]:
    """The ledger as the plain reading of the subscriber files gives it."""
    seen: set[str] = set()
    rows = []
    for name in services:
        for sub in subs.subscribers(svc.find_service(site.data, name).subscribers_path):
            if sub.state.confirmed and sub.key not in seen:
                seen.add(sub.key)
                rows.append(f"{sub.email}\t{sub.name}\tpending\t-\t-\t-")
    return rows


def create(site, services: list[str]) -> str:
    return newsletters.create(site.data, services, "News", "Hello {{ name }}!")


def test_each_confirmed_address_is_listed_once_in_service_then_file_order(site):
    """Across services and within one file, an address differing only in case is
    the same recipient: its first line (spelling and name) makes the row."""
    site.service("one", enabled=False)
    site.service("two", db="other", enabled=False)
    site.service("three", enabled=False)
    write_raw(site, "one", [line("zed@example.org", "Zed"),
                            line("Ann@Example.org", "Ann", "done"),
                            line("bob@example.org", "Bob"),
                            line("ANN@example.org", "Ann again")])
    write_raw(site, "two", [line("carl@example.org", "Carl"),
                            line("ann@example.org", "Ann two"),
                            line(" Bob@Example.ORG ", "Bob two"),
                            line("dora@example.org", "Dora", "new", confirmed="-")])
    write_raw(site, "three", [line("Dora@example.org", "Dora three", "done"),
                              line("zed@EXAMPLE.org", "Zed three")])
    job = create(site, ["two", "one", "three"])

    assert ledger(site, job) == [
        "carl@example.org\tCarl\tpending\t-\t-\t-",
        "ann@example.org\tAnn two\tpending\t-\t-\t-",
        " Bob@Example.ORG \tBob two\tpending\t-\t-\t-",
        "zed@example.org\tZed\tpending\t-\t-\t-",
        "Dora@example.org\tDora three\tpending\t-\t-\t-",
    ]
    assert ledger(site, job) == reference(site, ["two", "one", "three"])
    assert newsletters.read_job(site.data, job).values["total"] == "5"


def test_the_ledger_reads_back_as_pending_rows_numbered_from_zero(site):
    """The rows written at creation are what Row.to_line writes for a fresh row."""
    site.service("news", enabled=False)
    write_raw(site, "news", [line("a@example.org", "Аня"), line("b@example.org", "")])
    job = create(site, ["news"])
    assert list(newsletters.read_rows(site.data.job(job, "list"))) == [
        newsletters.Row(0, "a@example.org", "Аня", LedgerState.PENDING),
        newsletters.Row(1, "b@example.org", "", LedgerState.PENDING),
    ]


def test_unconfirmed_malformed_and_non_utf8_lines_are_left_out(site):
    """Only lines that parse as confirmed subscribers make rows; a comment, a blank
    line, a new subscriber, a wrong field and bytes that are not UTF-8 do not."""
    site.service("news", enabled=False)
    write_raw(site, "news", [
        line("keep1@example.org", "Keep"),
        "",
        "   ",
        "# a comment",
        "#" + line("comment@example.org"),
        line("new@example.org", state="new", confirmed="-"),
        line("gone@example.org", state="gone"),
        line("Upper@example.org", state="Active"),
        "few@example.org\tFew\tactive",
        line("no-at-sign", "No"),
        line("count@example.org", sent="one"),
        line("negative@example.org", reminders="-2"),
        line("huge@example.org", failures="1" * 5000),
        line("time@example.org", subscribed="yesterday"),
        line("empty-time@example.org", last_sent=""),
        "spaces@example.org Dan active 2026-11-01T10:00:00Z - 0 - 0 - 0 -",
        line("name\udce9@example.org"),
        line("latin1@example.org", "Jos\udce9"),
        line("extra@example.org", "Extra", "active", T, T, "0", "-", "0", "-", "0", "-", "x\udcff"),
        "\udcff\udcfe\x00gar\udc80bage \udcc3( from an FTP upload",
        line("keep2@example.org", "Keep too", "done"),
    ])
    job = create(site, ["news"])
    assert ledger(site, job) == [
        "keep1@example.org\tKeep\tpending\t-\t-\t-",
        "keep2@example.org\tKeep too\tpending\t-\t-\t-",
    ]
    assert ledger(site, job) == reference(site, ["news"])


def test_odd_but_valid_lines_are_recipients_and_odd_invalid_ones_are_not(site):
    """Times, counts and line ends outside the usual spelling get parse_line's
    verdict: a leap day, a lower-case t, a one-digit month, a count " 1" are
    fine; February 29th of 2026, a month 13, a 24th hour, a 60th second, the
    year 0 and a 31st of April are not."""
    site.service("news", enabled=False)
    valid = [
        line("leap@example.org", confirmed="2028-02-29T10:00:00Z"),
        line("lower@example.org", confirmed="2026-11-01t10:00:00z"),
        line("month@example.org", confirmed="2026-1-01T10:00:00Z"),
        line("year@example.org", subscribed="0999-01-01T00:00:00Z"),
        line("last@example.org", last_reminder="9999-12-31T23:59:59Z"),
        line("space@example.org", sent=" 1"),
        line("plus@example.org", reminders="+1"),
        line("arabic@example.org", failures="\u0661"),
        line("long@example.org", sent="9" * 19),
        line("extras@example.org", "Ex", "done", T, T, "1", T, "0", "-", "0", "-", "a", "", "b"),
        line("Юля@пример.рф", "Юля"),
    ]
    invalid = [
        line("feb29@example.org", confirmed="2026-02-29T10:00:00Z"),
        line("month13@example.org", confirmed="2026-13-01T00:00:00Z"),
        line("hour24@example.org", confirmed="2026-12-01T24:00:00Z"),
        line("second60@example.org", last_sent="2026-12-01T23:59:60Z"),
        line("year0@example.org", subscribed="0000-01-01T00:00:00Z"),
        line("april31@example.org", last_reminder="2026-04-31T10:00:00Z"),
        line("padded@example.org", confirmed=" " + T),
    ]
    write_raw(site, "news", [*valid, *invalid], ending="\r\n")
    job = create(site, ["news"])
    assert [row.split("\t")[0] for row in ledger(site, job)] == [
        "leap@example.org", "lower@example.org", "month@example.org", "year@example.org",
        "last@example.org", "space@example.org", "plus@example.org", "arabic@example.org",
        "long@example.org", "extras@example.org", "Юля@пример.рф"]
    assert ledger(site, job) == reference(site, ["news"])


# --- any line at all: the same verdict as the plain reading ---------------------

emails = st.sampled_from(["a@x.org", "A@X.org", " a@x.org", "#a@x.org", "b@x.org", "B@x.ORG",
                          "no-at", "@", "", "é@x.org", "d\udcff@x.org", "c@x@y",
                          "@@", "@a@", "a@@x.org", "@" * 50])  # the @ of a hostile line
texts = st.text(st.characters(blacklist_characters="\t\r\n", blacklist_categories=("Cs",)),
                max_size=6)
names = st.one_of(st.sampled_from(["", "Ann", "Аня", "bad\udce9", "#", "@", "a@b@"]), texts)
states = st.sampled_from(["active", "done", "new", "Active", "gone", ""])
times = st.one_of(
    st.sampled_from(["-", T, "2028-02-29T10:00:00Z", "2026-02-29T10:00:00Z",
                     "2026-13-01T00:00:00Z", "2026-1-01T10:00:00Z", "2026-11-01t10:00:00z",
                     "0000-01-01T00:00:00Z", "0999-01-01T00:00:00Z", "", "--",
                     "2026-04-30T23:59:59Z", "2026-04-31T00:00:00Z", "2026-12-31T23:59:60Z",
                     "2026-12-31T23:59:59Z\udcff", "２０２６-11-01T10:00:00Z"]),
    st.datetimes().map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")),
    texts)
numbers = st.one_of(st.sampled_from(["0", "7", "-1", " 1", "+1", "\u0661", "1_0", "x", "",
                                     "9" * 19, "1" * 5000, "0\udcff"]),
                    st.integers(min_value=0).map(str))
lines = st.builds(
    lambda fields, keep, extra: "\t".join([*fields[:keep], *extra]),
    st.tuples(emails, names, states, times, times, numbers, times, numbers, times, numbers,
              st.sampled_from(["-", "127.0.0.1", "", "\udcff"])),
    st.sampled_from([11, 11, 11, 10, 3, 1]),  # fields kept before the extras
    st.lists(st.one_of(texts, st.just("\udcfe")), max_size=2))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150,
          deadline=None)
@given(st.lists(lines, max_size=8), st.lists(lines, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_any_subscriber_files_give_the_ledger_of_the_plain_reading(site, first, second, ending):
    """Whatever the lines hold, the ledger is the one the plain reading gives."""
    if not (site.data.db("main") / "first").exists():
        site.service("first", enabled=False)
        site.service("second", db="other", enabled=False)
    write_raw(site, "first", first, ending)
    write_raw(site, "second", second, ending)
    job = create(site, ["first", "second"])
    try:
        assert ledger(site, job) == reference(site, ["first", "second"])
    finally:
        newsletters.delete(site.data, job)


def test_a_segment_chooses_among_the_same_confirmed_lines_and_an_address_once(site):
    """A condition (docs/using/newsletters.md#newsletter-segments) sees exactly the lines
    the plain reading calls confirmed, hand-spelled ones too; an address in two
    services is chosen when its line in either matches; ``only`` still narrows."""
    from vykhukhol.newsletters import segments
    from vykhukhol.settings.fields import Field

    site.service("one", enabled=False)
    site.service("two", enabled=False)
    write_raw(site, "one", [
        line("a@example.org", "A", "active", T, T, "0", "-", "0", "-", "0", "-", "f.city=Тверь"),
        line("b@example.org", "B", "active", T, T, "0", "-", "0", "-", "0", "-", "f.city=Тула"),
        line("c@example.org", "C", "new", T, "-", "0", "-", "0", "-", "0", "-", "f.city=Тверь"),
        line("d@example.org", "D", "done", "2024-02-29T10:00:00Z", T, "3", "-", "0", "-", "0",
             "-", "f.city=тверь"),  # a leap day: parse_line decides
    ])
    write_raw(site, "two", [
        line("B@example.org", "B2", "active", T, T, "0", "-", "0", "-", "0", "-", "f.city=тверь"),
        line("a@example.org", "A2", "active", T, T, "0", "-", "0", "-", "0", "-", "f.city=Тверь"),
    ])
    where = segments.parse('city = "ТВЕРЬ"', [Field("city")])
    assert newsletters.count_chosen(site.data, ["one", "two"], where) == 3
    job = newsletters.create(site.data, ["one", "two"], "S", "text", where=where)
    assert [row.split("\t")[0] for row in ledger(site, job)] == [
        "a@example.org", "d@example.org", "B@example.org"]
    values = newsletters.read_job(site.data, job).values
    assert (values["where"], values["matched"], values["total"]) == ('city = "ТВЕРЬ"', "3", "3")
    narrowed = newsletters.create(site.data, ["one", "two"], "S", "text", where=where,
                                  only={"b@example.org"})
    assert [row.split("\t")[0] for row in ledger(site, narrowed)] == ["B@example.org"]


def test_lines_without_fields_get_the_verdict_the_condition_gives_them_all(site):
    """A condition on fields alone says one thing of every line without trailing
    fields, which is then not asked line by line; one on the join date, the
    service or the letters reached is asked of each; a leap-day line (read by
    parse_line) is asked as well."""
    from vykhukhol.newsletters import recipients, segments
    from vykhukhol.settings.fields import Field

    site.service("one", enabled=False)
    write_raw(site, "one", [
        line("a@example.org", "A"),
        line("b@example.org", "B", "active", "2024-02-29T10:00:00Z"),
        line("c@example.org", "C", "active", T, T, "0", "-", "0", "-", "0", "-", "f.city=Тверь"),
        line("d@example.org", "D", "active", "2020-01-01T10:00:00Z", T, "4"),
    ])

    def chosen(condition: str) -> list[str]:
        where = segments.parse(condition, [Field("city")], "ru")
        return [email for email, _ in recipients.confirmed_recipients(site.data, ["one"], where)]

    assert segments.parse('city = "x"', [Field("city")]).bare is False
    assert segments.parse('city is empty or language = "ru"', [Field("city")]).bare is True
    assert segments.parse("city is empty and joined > 2026-01-01", [Field("city")]).bare is None
    assert chosen("city is empty") == ["a@example.org", "b@example.org", "d@example.org"]
    assert chosen('not city = "тверь"') == ["a@example.org", "b@example.org", "d@example.org"]
    assert chosen('city = "тверь"') == ["c@example.org"]
    assert chosen('language = "ru" and city != "Тверь"') == [
        "a@example.org", "b@example.org", "d@example.org"]
    assert chosen("city is empty and joined > 2024-01-01") == ["a@example.org", "b@example.org"]
    assert chosen("reached > 3 or service = \"two\"") == ["d@example.org"]
