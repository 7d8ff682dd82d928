"""A newsletter subject holding U+2028 came back split.

The letter file was read with ``str.splitlines``, which also breaks at
U+2028, U+2029, U+0085, \\v, \\f and \\x1c-\\x1e: the subject "one<U+2028>two"
went out as "one". Replayed through the real CLI: ``vykhukhol newsletter
create`` with such a subject, then ``vykhukhol cron``; the letter in the outbox
must carry every word of the subject, in order (how a header shows the
separators themselves is the mail builder's business: test_header_injection.py).
"""

from __future__ import annotations

SEPARATORS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
SUBJECT = "".join(word + sep for word, sep in zip(WORDS, [*SEPARATORS, ""], strict=True))


def test_a_newsletter_subject_with_line_separators_goes_out_whole(site):
    site.service("news", enabled=False)
    site.subscriber("news", "anna@example.org", "Anna")
    site.cli("newsletter", "create", "--services", "news", "--subject", SUBJECT,
             "--body", "Hello {{ name }}")
    site.cli("cron")
    [letter] = [m for m in site.outbox() if "anna@example.org" in str(m["To"])]
    subject = str(letter["Subject"])
    positions = [subject.find(word) for word in WORDS]
    assert -1 not in positions and positions == sorted(positions), subject
