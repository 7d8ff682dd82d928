"""Confirmation letters a subscribe page could not send after its answer, or
held while the site was in debug mode (:mod:`vykhukhol.members.unsent`), sent
by the next run before step 2."""

from __future__ import annotations

from vykhukhol import mail
from vykhukhol import services as svc
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.members import unsent
from vykhukhol.sender.runtime import Run
from vykhukhol.services import subscribers as subs
from vykhukhol.services.rules import EPOCH


def resend_confirmations(run: Run) -> None:
    """Confirmation letters a subscribe page could not send after its answer,
    or held in debug mode (unsent.note_unsent): sent now, inside the sending
    limits, to addresses still unconfirmed. One that fails again temporarily
    waits for the next run."""
    waiting = unsent.take_unsent(run.data, run.now())
    if not waiting:
        return
    from vykhukhol.mail import compose  # the e-mail package: only when there is one

    def wait(later: list[unsent.Waiting]) -> None:
        for one in later:
            unsent.note_unsent(run.data, one.service, one.email, EPOCH, one.held)

    for index, (name, email, held) in enumerate(waiting):
        try:
            service = svc.find_service(run.data, name)
        except (NotFound, BadInput):
            continue
        sub = subs.find(service.subscribers_path, email)
        if sub is None or sub.state.confirmed or sub.email in run.suppressed:
            continue  # confirmed by a later letter, gone, or suppressed
        if run.stopped or run.time_left() <= 0 or not run.allowance.take():
            wait(waiting[index:])
            break
        try:
            message = compose.confirmation(service, run.settings, sub.email, sub.name,
                                           run.lease, run.now(), run.presses,
                                           fields=sub.fields, language=sub.language)
            run.sending.transport().send(message, sub.email)
        except BadInput as exc:
            run.log.error(f"{name}: the confirmation for {sub.email} cannot be made: {exc.message}")
            continue
        except mail.DeliveryError as exc:
            run.log.write(f"{name}: the confirmation for {sub.email} failed"
                          f"{'' if held else ' again'}: {exc.detail}")
            if exc.temporary:  # the server is still down: all of them wait for the next run
                wait(waiting[index:])
                break
            continue
        run.report.sent[name] += 1
        run.log.write(f"{name}: sent the confirmation held in debug mode to {sub.email}" if held
                      else f"{name}: sent the confirmation the subscribe page could not send "
                           f"to {sub.email}")
