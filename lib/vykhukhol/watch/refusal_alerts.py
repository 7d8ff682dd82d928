"""The alert for letters refused for the sender's reasons (docs/deliverability/bounces.md#returned-message): this run's letters and refusals at hand-over counted,
then one alert for each run whose letters came back past the line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import vykhukhol.watch.alerts as alerts
from vykhukhol.bounces import refusals
from vykhukhol.errors import VykhukholError
from vykhukhol.i18n import tr

if TYPE_CHECKING:
    from vykhukhol.watch.watched import Watched


def tell_refusals(run: Watched, lease: str, letters_out: int,
                  refused: list[tuple[str, str]]) -> None:
    """Refusals for the sender's reasons: this run's letters and
    refusals at hand-over counted (``letters_out`` handed over or refused by
    the run ``lease``; ``refused``: (run, reason) of each refused for the
    sender's reasons), and one alert for each run whose letters came back so
    past the line (more than 5 %, at least 5; late bounces are counted for the
    run that sent the letter)."""
    # refusals.refused_path, without importing the bounces package on an idle tick
    if not (letters_out or refused or (run.data.state / "refused").exists()):
        return

    try:
        if letters_out or refused:
            refusals.note_refused(run.data, refused, run.now(), {lease: letters_out})
        due = refusals.refusal_alerts(run.data)
    except VykhukholError as exc:
        run.log.error(f"the refusals could not be counted: {exc.message}")
        return

    lang = run.settings["language"]
    for past, letters, count, why in due:  # past: the run whose letters came back
        advice = dict.fromkeys(tr(lang, alerts.ADVICE.get(name, alerts.DEFAULT_ADVICE))
                               for name in sorted(why, key=lambda n: -why[n]))
        run.alert(alerts.SENDER_REFUSED, refused=str(count), letters=str(letters),
                  detail=f"run {past}", advice=" ".join(advice),
                  reasons=", ".join(f"{name} ×{n}" for name, n in
                                    sorted(why.items(), key=lambda x: -x[1])))
