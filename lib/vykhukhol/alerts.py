"""Alerts to the admin (SPEC 6): the original's five literal subjects and one
of ours for a letter template over its bounds (SPEC 13), Russian bodies.

Every alert is written to the run log and shown on the admin status page; it
is mailed to ``admin_email`` at most once an hour per subject (the time of the
last mailing is kept in ``data/state/alerts``). Alerts do not count against
the hourly and daily sending limits.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from vykhukhol import state
from vykhukhol.datadir import DataDir
from vykhukhol.runlog import RunLog
from vykhukhol.timeutil import format_time, seconds_between

if TYPE_CHECKING:
    from vykhukhol import mail

THROTTLE = 3600  # seconds between two mailings of one subject

SCRIPT_OFF = "Script is off"
ALL_OFF = "all dispatchs is off"
DOWN_BY_HOSTER = "script is down by hoster"
CANNOT_LAUNCH = "not can launch the sender"
CANNOT_TERMINATE = "not can terminate sender"
CANNOT_RENDER = "not can render the letter"  # ours, in the original's style (SPEC 13)

BODIES = {
    SCRIPT_OFF: (
        "Выхухоль не может начать рассылку: скрипт стоит в режиме отладки (debug).\n"
        "Пока он в этом режиме, ни одно письмо не отправляется.\n"
        "Зайдите в админку и переключите скрипт в рабочий режим (working)."
    ),
    ALL_OFF: (
        "Все серийные службы выключены, поэтому серийные письма и напоминания не отправляются.\n"
        "Письма всем подписчикам от этого не зависят.\n"
        "Включите нужные службы в админке, в разделе служб."
    ),
    DOWN_BY_HOSTER: (
        "Предыдущий запуск рассыльщика был прерван — хостером или чем-то ещё — на полуслове.\n"
        "Чтобы не разослать письма повторно, рассыльщик заблокировал себя и ничего не отправляет.\n"
        "Чтобы возобновить рассылку:\n"
        "  - зайдите в админку;\n"
        "  - переключите скрипт в режим отладки (debug);\n"
        "  - верните его в рабочий режим (working).\n"
        "Это снимет блокировку.\n\n"
        "Скорее всего, неверно задан лимит времени исполнения скрипта (time_limit): "
        "сейчас он {time_limit}, а прерванный запуск к моменту проверки шёл уже {age}.\n"
        "Узнайте у хостера настоящий лимит и поставьте значение не больше него."
    ),
    CANNOT_LAUNCH: (
        "Невозможно начать рассылку: не удалось переименовать файл блокировки ({detail}).\n"
        "Возможно, слетели права доступа к файлам данных.\n"
        "Возможно также, что на одну базу одновременно натравлено НЕСКОЛЬКО кронов — "
        "проверьте список заданий крона."
    ),
    CANNOT_TERMINATE: (
        "Не получается корректно завершить работу рассыльщика: "
        "не удалось вернуть файл блокировки в свободное состояние ({detail}).\n"
        "Рассыльщик остановлен. Проверьте права доступа к папке данных и список заданий крона."
    ),
    CANNOT_RENDER: (
        "Письмо не собрано: его шаблон выходит за пределы ({detail}).\n"
        "На одно письмо шаблону отведено не больше 0,5 секунды и не больше миллиона символов "
        "в каждой части (README, раздел 4). Такой шаблон админка сохранить не даёт; "
        "скорее всего, его изменили по FTP.\n"
        "Письмо пропущено, остальные письма уходят как обычно. Подписчики не потеряны и не "
        "сдвинуты по серии: каждый следующий запуск пробует это письмо снова и снова пропускает, "
        "а это предупреждение приходит не чаще раза в час.\n"
        "Исправьте шаблон в админке (или в файле письма) — письмо уйдёт со следующим запуском."
    ),
}


def raise_alert(data: DataDir, settings, log: RunLog, subject: str, moment: datetime,
                transport: mail.Transport | None = None, **details: str) -> bool:
    """Log the alert; mail it unless the same subject went out in the last hour.

    Returns True when a letter was sent.
    """
    # A detail is one line of the body: nothing in it (a file name, an error) can end a line.
    details = {key: " ".join(str(value).split()) for key, value in details.items()}
    body = BODIES[subject].format(**{"detail": "", "time_limit": "", "age": "", **details})
    first_line = body.split("\n", 1)[0]
    log.alert(f"{subject}: {first_line}")
    admin = settings["admin_email"]
    if not admin:
        return False
    path = data.state / "alerts"
    due = True

    def claim(values: dict[str, str]) -> None:
        nonlocal due
        last = state.time_of(values, subject)
        if last is not None and 0 <= seconds_between(moment, last) < THROTTLE:
            due = False
        else:
            values[subject] = format_time(moment)

    state.change_kv(path, claim)
    if not due:
        return False
    from vykhukhol import mail  # only when a letter goes out

    message = mail.build_message(
        from_name="Vykhukhol", from_email=settings["mail.from_email"] or admin,
        to_email=admin, subject=subject, text=body, run_id=log.lease,
    )
    own = transport is None
    transport = transport or mail.open_transport(mail.config_from_settings(settings, data.outbox))
    try:
        transport.send(message, admin)
    except mail.DeliveryError as exc:
        log.error(f"alert {subject!r} could not be mailed: {exc.detail}")
        return False
    finally:
        if own:
            transport.close()
    return True

