"""The alert for letters refused for the sender's reasons (SPEC 5, "What a
failure count means"): this run's letters and refusals at hand-over counted,
then one alert for each run whose letters came back past the line."""

from __future__ import annotations

import vykhukhol.sender.alerts as alerts
from vykhukhol.errors import VykhukholError
from vykhukhol.sender.runtime import Run


def tell_refusals(run: Run) -> None:
    """Refusals for the sender's reasons (SPEC 5): this run's letters and
    refusals at hand-over counted, and one alert for each run whose letters
    came back so past the line (more than 5 %, at least 5; late bounces are
    counted for the run that sent the letter)."""
    # refusals.refused_path, without importing the bounces package on an idle tick
    if not (run.letters_out or run.refusals or (run.data.state / "refused").exists()):
        return
    from vykhukhol.bounces import refusals

    try:
        if run.letters_out or run.refusals:
            refusals.note_refused(run.data, run.refusals, run.now(), {run.lease: run.letters_out})
        due = refusals.refusal_alerts(run.data)
    except VykhukholError as exc:
        run.log.error(f"the refusals could not be counted: {exc.message}")
        return
    from vykhukhol.i18n import tr

    lang = run.settings["language"]
    for lease, letters, refused, why in due:
        advice = dict.fromkeys(tr(lang, alerts.ADVICE.get(name, alerts.DEFAULT_ADVICE))
                               for name in sorted(why, key=lambda n: -why[n]))
        run.alert(alerts.SENDER_REFUSED, refused=str(refused), letters=str(letters),
                  detail=f"run {lease}", advice=" ".join(advice),
                  reasons=", ".join(f"{name} ×{n}" for name, n in
                                    sorted(why.items(), key=lambda x: -x[1])))
