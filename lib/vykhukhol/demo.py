"""The demo list a fresh ``vykhukhol serve`` creates, so a newcomer can
subscribe within a minute: DB ``main``, service ``demo`` (enabled) and a
two-letter welcome series, in the installation's language.

Only ``serve`` on a data directory without settings.ini calls this; ``init``
(the shared-hosting path) leaves the data directory empty.
"""

from __future__ import annotations

from vykhukhol import services as svc
from vykhukhol.datadir import DataDir

NAME = "demo"
DB = "main"

_TEXTS = {
    "ru": {
        "title": "Демо-рассылка",
        "letters": [
            ("Добро пожаловать, {{ name or \"друг\" }}!", "0s",
             "Здравствуйте, {{ name or \"друг\" }}!\n\n"
             "Это первое письмо демо-рассылки «{{ service }}». Оно ушло сразу после\n"
             "подтверждения подписки; следующее придёт через день.\n\n"
             "Отписаться: {{ unsubscribe_url }}\n"),
            ("Второе письмо серии", "1d",
             "Здравствуйте, {{ name or \"друг\" }}!\n\n"
             "Это второе и последнее письмо демо-рассылки. Свои письма, подписчиков и\n"
             "рассылки всем подписчикам настраивают в админке.\n\n"
             "Отписаться: {{ unsubscribe_url }}\n"),
        ],
    },
    "en": {
        "title": "Demo list",
        "letters": [
            ("Welcome, {{ name or \"friend\" }}!", "0s",
             "Hello {{ name or \"friend\" }},\n\n"
             "This is the first letter of the demo list \"{{ service }}\". It left right\n"
             "after you confirmed; the next one follows a day later.\n\n"
             "Unsubscribe: {{ unsubscribe_url }}\n"),
            ("The second letter of the series", "1d",
             "Hello {{ name or \"friend\" }},\n\n"
             "This is the second and last letter of the demo list. Your own letters,\n"
             "subscribers and letters to all subscribers are set up in the admin.\n\n"
             "Unsubscribe: {{ unsubscribe_url }}\n"),
        ],
    },
}


def create(data: DataDir, language: str) -> svc.Service:
    """DB ``main``, the enabled service ``demo`` and its welcome series."""
    texts = _TEXTS.get(language, _TEXTS["en"])
    svc.add_db(data, DB)
    service = svc.add_service(data, NAME, DB, {"title": texts["title"]})
    for subject, delay, body in texts["letters"]:
        svc.add_letter(service, subject, delay, body)
    return svc.edit_service(data, NAME, {"enabled": "yes"})
