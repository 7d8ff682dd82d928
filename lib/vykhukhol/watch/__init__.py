"""The watchers around the run: what tells the owner, and the sender, that
something is going wrong — never a step of the run itself (that is
:mod:`vykhukhol.sender`, which asks them; they never import it).

- :mod:`.alerts` — the alerts to the admin, their subjects and bodies;
  :mod:`.refusal_alerts` the one for letters refused for the sender's reasons;
- :mod:`.brakes` — a newsletter or service drawing too many complaints or
  dead addresses stops itself;
- :mod:`.cronwatch` — the cron that stopped, seen from the run log's age;
- :mod:`.forecast` — when a newsletter or a series' backlog will be done;
- :mod:`.pace` — the host's pace, learned from its "too fast" replies;
- :mod:`.receivers` — letters a day to the big mailbox providers;
- :mod:`.selfblock` — the flag a run killed by the host leaves;
- :mod:`.health` — the warnings of the status page and ``vykhukhol status``;
- :mod:`.watched` — what a watcher sees of a run (a Protocol).

This face imports nothing: the public pages load :mod:`.cronwatch` alone, and
pay for no other watcher.
"""
