"""Bounces: what comes back after a letter left (docs/deliverability/bounces.md#bounces).

Two halves. :mod:`.reading` reads one message (or a provider's report): pure
functions of its bytes that open no data file. The modules beside it act on
the data directory:

- :mod:`.sources` — where messages come from: ``mail.bounce_mailbox``
  (IMAP or POP3, read at the start of a run within a slice of time_limit)
  and ``vykhukhol bounce`` (one message on standard input);
- :mod:`.providers` — mail providers' callbacks, each after its own proof;
- :mod:`.apply` — the two entry points (messages, providers' reports),
  exactly once per message under the reader's journal (:mod:`.ledger`);
- :mod:`.finder` — whom a signed tag (:mod:`vykhukhol.returntag`) means;
- :mod:`.decide` — what a verdict does, added to the batch's plan;
- :mod:`.removal` — an address deleted: gone at once, or at ``bounce_limit``;
- :mod:`.counts` — the soft failures counted per letter (``state/soft``);
- :mod:`.tries` — messages a reader began and never finished;
- :mod:`.tally` and :mod:`.refusals` — what the brakes and the sender's
  refusal alert count;
- :mod:`.record` — bounces.log and the messages kept for the admin.

This package is imported only by runs and commands that send or read
bounces; nothing here is loaded by an idle cron tick without a bounce mailbox.
"""
