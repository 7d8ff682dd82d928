"""What a verdict does (docs/deliverability/bounces.md#returned-message): whom
its tag (or, for a report the provider vouches for, its address) means, and
its effects, added to the batch's :class:`~.ledger.Plan`. Mail and a
provider's callback both come through :func:`act`, so they follow one set of
rules:

- a failure, by its reason (:func:`cause_of`, the rules in :mod:`.reading.reasons`):
  *address gone* — suppressed and deleted from every service at once (read
  so with doubt: at the second different letter, and counted soft meanwhile,
  docs/design/bounces.md#bounces-doubt); *soft*
  — counted once per different letter (the returned Message-ID, else the
  run, else one a day) in the service (a newsletter's: each of its
  services), deleted and suppressed at ``bounce_limit``; *sender refused* —
  nothing on the subscriber, counted for the run that sent the letter (the
  sender alerts past 5 %); *delay* — noted. A newsletter's ledger row
  becomes ``failed`` for any refusal;
- complaint, or ``unsubscribe`` by mail: unsubscribed at once from the
  service (a newsletter's: from each of the job's services);
- a delay notice, auto-reply: noted in bounces.log only;
- anything else to a tagged address: kept for the admin, never acted on.

A complaint, an address gone or a sender's refusal counts for the brakes
and the refusal alert only while the address is a confirmed member, not
suppressed (:meth:`.finder.Finder.counts_for`), and once per address
(:func:`.tally.count_reports`, :func:`.refusals.note_refused`): the brakes
count people, not messages.
"""

from __future__ import annotations

from vykhukhol import returntag
from vykhukhol.addresses import email_key
from vykhukhol.bounces import record
from vykhukhol.bounces import tally as brakes
from vykhukhol.bounces.finder import Finder
from vykhukhol.bounces.ledger import Plan, Result
from vykhukhol.bounces.reading import classify as kinds
from vykhukhol.bounces.reading import reasons
from vykhukhol.datadir import DataDir
from vykhukhol.files import events
from vykhukhol.members import suppression
from vykhukhol.timeutil import now


def act(data: DataDir, finder: Finder, result: Result, verdict: kinds.Verdict, raw: bytes,
         source: str, plan: Plan, by_address: bool = False) -> Result:
    """What a verdict does: whom its tag (or, for a report the provider vouches
    for, its address) means, and its effects, added to the plan. Mail and a
    provider's callback (:func:`apply_reports`) both come through here, so they
    follow one set of rules."""
    found, kind = None, ""
    for _, tag in verdict.tags:  # best first: the envelope's, then the returned letter's
        found, kind = finder.who(tag, sorted(verdict.named) + [verdict.sender]), tag.kind
        if found is not None:
            break
    if found is None and by_address:
        named = sorted(verdict.named)
        holding = finder.holding(named[0]) if named else []
        if holding:
            result.address = named[0]
            result.target = "service " + ",".join(holding)
            return effects(data, finder, result, verdict, raw, source, plan, returntag.SERVICE,
                            holding[0], holding)
        result.kind, result.reason = "unknown address", (
            f"no list holds this address; {verdict.kind}: {verdict.reason}")
        return noted(plan, result, source)
    if found is None:
        if verdict.tags:
            result.kind, result.reason = "unknown tag", (
                f"a tag that matches nobody (forged, altered, or the address left the list); "
                f"{verdict.kind}: {verdict.reason}")
            return noted(plan, result, source)
        if verdict.kind in (kinds.AUTO_REPLY, kinds.TEMPORARY):
            result.reason += "; no tag"
            return noted(plan, result, source)
        result.kind, result.reason = kinds.KEPT, f"no tag of ours; {verdict.reason}"
        record.keep(data, result.id, raw)
        return noted(plan, result, source)
    name, address = found
    result.address = address
    result.target = f"service {name}" if kind == returntag.SERVICE else f"newsletter {name}"
    services = [name] if kind == returntag.SERVICE else finder.job_services(name)
    return effects(data, finder, result, verdict, raw, source, plan, kind, name, services)


def effects(data: DataDir, finder: Finder, result: Result, verdict: kinds.Verdict, raw: bytes,
             source: str, plan: Plan, kind: str, name: str, services: list[str]) -> Result:
    address = result.address
    if verdict.kind in (kinds.PERMANENT, kinds.TEMPORARY):
        if verdict.named and email_key(address) not in {email_key(a) for a in verdict.named}:
            if verdict.kind == kinds.TEMPORARY:
                return noted(plan, result, source)
            result.kind = kinds.KEPT
            result.reason = (f"the report names {', '.join(sorted(verdict.named)[:3])}, not the "
                             f"address the tag was made for: kept for the admin")
            record.keep(data, result.id, raw)
            return noted(plan, result, source)
        reading = cause_of(verdict, address)
        # The reading, what decided it, the server's own words, then the
        # detector's verdict as before ("; " apart, as the Bounces page reads them).
        result.reason = "; ".join(piece for piece in (
            reading.log_text(), reading.rule_text(), reading.words_text(), result.reason) if piece)
        if reading.cause is reasons.Cause.DELAY:
            return noted(plan, result, source)
        plan.bounced += 1
        if kind == returntag.NEWSLETTER and name in finder.jobs:
            plan.ledger.append((name, address))  # any refusal fails a newsletter's row
        if kind == returntag.NEWSLETTER:
            plan.history.append((name, "bounced"))
        letter = verdict.letter or f"day:{plan.time[:10]}"  # no letter named: one a day
        if reading.cause is reasons.Cause.GONE:
            if finder.counts_for(kind, name, address):
                plan.brakes.append((brakes.target(_kind(kind), name), brakes.GONE,
                                    email_key(address)))
            if reading.sure:
                plan.gone.append(address)
            else:  # in doubt: it leaves at the second different letter that fails so
                plan.doubt.append((address, letter))
                plan.soft += [(s, address, letter) for s in services]
        elif reading.cause is reasons.Cause.SOFT:
            plan.soft += [(s, address, letter) for s in services]
        elif finder.counts_for(kind, name, address):
            # The sender refused: never on the subscriber; counted for the run
            # that sent the letter, once per address (refusals.note_refused).
            plan.refused.append((verdict.run, reading.reason, email_key(address)))
    elif verdict.kind in (kinds.COMPLAINT, kinds.UNSUBSCRIBE):
        plan.unsub += [(s, address) for s in services]
        if verdict.kind == kinds.COMPLAINT and finder.counts_for(kind, name, address):
            plan.brakes.append((brakes.target(_kind(kind), name), brakes.COMPLAINTS,
                                email_key(address)))
        if kind == returntag.NEWSLETTER:
            plan.history.append((name, "complaints" if verdict.kind == kinds.COMPLAINT
                                 else "unsubscribed"))
        if verdict.kind == kinds.COMPLAINT:  # never written to again; a repeat adds nothing
            suppression.add(data, finder.secret, address, suppression.Why.COMPLAINT, source,
                            now())
            events.emit_quietly(data.root, "subscriber.complained",
                                {"email": email_key(address), "letter_of": f"{kind} {name}",
                                 "source": source})
    elif verdict.kind == kinds.KEPT:
        record.keep(data, result.id, raw)
    return noted(plan, result, source)


def _kind(kind: str) -> str:
    """The brakes' name for a tag's kind."""
    return brakes.SERVICE if kind == returntag.SERVICE else brakes.NEWSLETTER


def cause_of(verdict: kinds.Verdict, address: str) -> reasons.Reading:
    """Why the letter to ``address`` failed: the report's reading of that
    address, else of the report as a whole (a failure whose reason no reader
    found is soft: only different letters failing delete the address)."""
    key = email_key(address)
    for named, reading in verdict.readings.items():
        if email_key(named) == key:
            return reading
    if verdict.cause is not None:
        return reasons.Reading(verdict.cause, "report")
    if verdict.kind == kinds.TEMPORARY:
        return reasons.Reading(reasons.Cause.DELAY, "delayed")
    return reasons.Reading(reasons.Cause.SOFT, "undefined")


def noted(plan: Plan, result: Result, source: str) -> Result:
    plan.log.append(record.line(result.id, result.kind, result.target, result.address, source,
                                result.reason).text())
    return result
