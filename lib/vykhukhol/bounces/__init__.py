"""Bounces: what comes back after a letter left (SPEC 12).

What is where:

- :mod:`.tag` — the signed tag in each letter's envelope sender
  (``news+<tag>@example.org``): which recipient and which service or
  newsletter a returning message belongs to, readable from the tag alone;
- :mod:`.sources` — where messages come from: ``mail.bounce_mailbox``
  (IMAP or POP3, read at the start of a run within a slice of time_limit)
  and ``vykhukhol bounce`` (one message on standard input);
- :mod:`.classify` — what a message is (flufl.bounce for bounce reports;
  complaints, mailto unsubscribes, auto-replies), a pure function;
- :mod:`.reasons` — why each refusal happened (Sisimai's reason names) and
  whom it is about: address gone, soft, sender refused, delay; also for SMTP
  replies at hand-over (:func:`.reasons.smtp_reason`);
- :mod:`.formats` — where a report says which address failed and why (DSN
  fields, the lines of reports written for people, SES JSON);
- :mod:`.patterns` — Sisimai's error-message patterns (generated data);
- :mod:`.remote` — the big providers' own phrasings and error labels
  (Sisimai's rhost tables, generated data);
- :mod:`.apply` — whom its tag means and what it does to the subscriber
  files and ledgers, exactly once per message (its own journal);
- :mod:`.words` — the server's own words of a refusal, for the owner;
- :mod:`.record` — bounces.log and the messages kept for the admin.

This package is imported only by runs and commands that send or read
bounces; nothing here is loaded by an idle cron tick without a bounce mailbox.
"""
