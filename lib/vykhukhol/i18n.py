"""Every sentence a person reads on a page, in Russian and English.

``t(lang, key, **values)``; a key missing in one language is a bug that
tests/unit/test_i18n.py catches, not a blank on a page.
"""

from __future__ import annotations

LANGUAGES = ("ru", "en")

MESSAGES: dict[str, tuple[str, str]] = {
    "subscribe.title": ("Подписка: {service}", "Subscribe: {service}"),
    "subscribe.email": ("Адрес e-mail", "E-mail address"),
    "subscribe.name": ("Имя (можно не указывать)", "Name (optional)"),
    "subscribe.button": ("Подписаться", "Subscribe"),
    "subscribe.honeypot": ("Оставьте это поле пустым", "Leave this field empty"),
    "subscribe.check_title": ("Проверьте почту", "Check your mailbox"),
    "subscribe.check_text": (
        "Если адрес {email} ещё не подписан на «{service}», на него придёт письмо со ссылкой "
        "для подтверждения. Откройте её, чтобы начать получать рассылку.",
        "If {email} is not subscribed to \"{service}\" yet, a letter with a confirmation link "
        "is on its way. Open it to start receiving the letters.",
    ),
    "confirm.title": ("Подтверждение подписки", "Confirm your subscription"),
    "confirm.text": ("Подтвердите подписку адреса {email} на «{service}».",
                     "Confirm the subscription of {email} to \"{service}\"."),
    "confirm.button": ("Подтвердить подписку", "Confirm my subscription"),
    "confirm.done_title": ("Подписка подтверждена", "Subscription confirmed"),
    "confirm.done_text": ("Спасибо! Адрес {email} подписан на «{service}».",
                          "Thank you! {email} is subscribed to \"{service}\"."),
    "link.invalid_title": ("Ссылка недействительна", "This link is not valid"),
    "link.invalid_text": (
        "Эта ссылка недействительна или устарела. Подпишитесь заново, если нужно.",
        "This link is not valid or has expired. Subscribe again if you wish.",
    ),
    "unsubscribe.title": ("Отписка от рассылки", "Unsubscribe"),
    "unsubscribe.text": ("Отписать адрес {email} от «{service}»?",
                         "Unsubscribe {email} from \"{service}\"?"),
    "unsubscribe.button": ("Отписаться", "Unsubscribe"),
    "unsubscribe.done_title": ("Вы отписаны", "You are unsubscribed"),
    "unsubscribe.done_text": (
        "Адрес больше не будет получать письма этой рассылки.",
        "This address will receive no more letters from this list.",
    ),
    "error.title": ("Ошибка", "Error"),
    "error.400": ("Запрос не понят: {detail}", "The request was not understood: {detail}"),
    "error.403": ("Доступ запрещён.", "Access denied."),
    "error.404": ("Такой страницы или рассылки нет.", "There is no such page or list."),
    "error.405": ("Этот метод здесь не принимается.", "This method is not accepted here."),
    "error.413": ("Запрос слишком велик.", "The request is too large."),
    "error.500": ("Внутренняя ошибка. Администратор увидит её в журнале.",
                  "Internal error. The administrator will find it in the log."),
    "error.503": ("Сервис занят, попробуйте через минуту.", "Busy; please try again in a minute."),
    "form.invalid_email": ("Адрес e-mail указан неверно.", "This e-mail address is not valid."),
}


def t(lang: str, key: str, **values: object) -> str:
    ru, en = MESSAGES[key]
    text = ru if lang == "ru" else en
    return text.format(**values) if values else text
