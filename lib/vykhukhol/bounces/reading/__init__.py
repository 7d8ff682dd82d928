"""Reading a returned message: pure functions of its bytes.

What is where:

- :mod:`.limits` — what a message must be before anything parses it (its
  size, lines, fields, parts and nesting, counted on the raw bytes);
- :mod:`.classify` — what a message is (flufl.bounce for bounce reports;
  complaints, mailto unsubscribes, auto-replies), the tags it carries and
  the addresses it names; also :class:`~.classify.Report`, what a
  provider's callback reported, in the same words;
- :mod:`.formats` — where a report says which address failed and why (DSN
  fields, the lines of reports written for people, SES JSON);
- :mod:`.reasons` — why each refusal happened (Sisimai's reason names) and
  whom it is about: address gone, soft, sender refused, delay; also for SMTP
  replies at hand-over (:func:`.reasons.smtp_reason`);
- :mod:`.patterns` — Sisimai's error-message patterns (generated data);
- :mod:`.remote` — the big providers' own phrasings and error labels
  (Sisimai's rhost tables, generated data);
- :mod:`.words` — the server's own words of a refusal, for the owner;
- :mod:`.events` — what each mail provider's callback events mean, and
  :mod:`.callbacks` what every callback shares (its proof is
  :mod:`vykhukhol.bounces.providers`).

Deliberately not here: anything that opens the data directory. Whom a tag
means, what a verdict does, the journal and the logs are the rest of
:mod:`vykhukhol.bounces`. These modules import only the standard library,
the parsers (flufl.bounce) and the base modules (:mod:`vykhukhol.returntag`,
:mod:`vykhukhol.addresses`, :mod:`vykhukhol.errors`, :mod:`vykhukhol.i18n`).
"""
