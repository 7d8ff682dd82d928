"""Bounces: what comes back after a letter left (SPEC 12).

- :mod:`.tag` — the signed tag in each letter's envelope sender
  (``news+<tag>@example.org``): which recipient and which service or
  newsletter a returning message belongs to, readable from the tag alone.

This package is imported only by runs and commands that send or read
bounces; nothing here is loaded by an idle cron tick.
"""
