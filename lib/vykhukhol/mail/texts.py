"""Texts a subscriber reads in letters (not pages), in Russian and English.

The confirmation request, also sent as a reminder, unless the service gives
its own ``confirm_subject`` / ``confirm_body``. Templates: Jinja2, with
``name``, ``email``, ``service``, ``confirm_url``, ``unsubscribe_url``,
``manage_url``, ``date``.
"""

from __future__ import annotations

CONFIRM_SUBJECT = {
    "ru": "Подтвердите подписку: {{ service }}",
    "en": "Please confirm your subscription: {{ service }}",
}

CONFIRM_BODY = {
    "ru": (
        "Здравствуйте{% if name %}, {{ name }}{% endif %}!\n\n"
        "Кто-то (надеемся, вы) подписал адрес {{ email }} на рассылку «{{ service }}».\n"
        "Чтобы подтвердить подписку, откройте ссылку и нажмите кнопку:\n\n"
        "{{ confirm_url }}\n\n"
        "Если вы не подписывались, просто проигнорируйте это письмо: "
        "без подтверждения адрес будет удалён.\n"
    ),
    "en": (
        "Hello{% if name %} {{ name }}{% endif %},\n\n"
        "Someone (we hope you) subscribed {{ email }} to \"{{ service }}\".\n"
        "To confirm, open this link and press the button:\n\n"
        "{{ confirm_url }}\n\n"
        "If it was not you, ignore this letter: without confirmation the address will be removed.\n"
    ),
}
