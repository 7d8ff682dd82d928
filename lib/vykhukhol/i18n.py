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
    "error.503": ("Сервис сейчас недоступен ({detail}); попробуйте позже.",
                  "Not available right now ({detail}); please try again later."),
    "form.invalid_email": ("Адрес e-mail указан неверно.", "This e-mail address is not valid."),
}


def t(lang: str, key: str, **values: object) -> str:
    ru, en = MESSAGES[key]
    text = ru if lang == "ru" else en
    return text.format(**values) if values else text


# The admin pages speak English in the code and Russian through this table:
# templates and views call ``_("English text")``. tests/unit/test_i18n.py
# checks that every such text has its Russian here.
RU: dict[str, str] = {
    "Outbox": "Исходящие",
    "Text": "Текст",
    "Letters written by the outbox transport (nothing left this machine). Newest first; {total} in all.":
        "Письма, записанные транспортом outbox (ничего не ушло с этой машины). Новые сверху; всего {total}.",
    "Date": "Дата",
    "To": "Кому",
    "Subject": "Тема",
    "The outbox is empty.": "Исходящих писем нет.",
    "Delete": "Удалить",
    "Delete service": "Удалить службу",
    "This deletes the service, its letters and its {count} subscribers. It cannot be undone; export the subscribers first if you may need them.":
        "Будут удалены служба, её письма и {count} подписчиков. Отменить это нельзя; если подписчики могут понадобиться, сначала выгрузите их.",
    "Type the service's name to confirm": "Для подтверждения введите имя службы",
    "Cancel": "Отменить",
    "Log out": "Выйти",
    "Log in": "Вход",
    "Admin password": "Пароль администратора",
    "Letter to all users": "Письмо всем юзерам",
    "Services": "Службы",
    "confirmed subscribers; an address in several services gets one letter; all services together: {unique}":
        "подтверждённые подписчики; адрес из нескольких служб получит одно письмо; все службы вместе: {unique}",
    "HTML (optional)": "HTML (необязательно)",
    "Start (empty: now; in the settings' time zone)": "Начало (пусто — сейчас; в часовом поясе из настроек)",
    "Create": "Создать",
    "Preview": "Просмотр",
    "Send a test letter to the admin": "Отправить тестовое письмо администратору",
    "Preview for a sample subscriber": "Как письмо увидит подписчик (пример)",
    "Subscribers": "Подписчики",
    "Import: {added} added, {duplicates} already there, {invalid} invalid.":
        "Импорт: добавлено {added}, уже были {duplicates}, с ошибками {invalid}.",
    "line": "строка",
    "Search": "Искать",
    "Export CSV": "Выгрузить CSV",
    "Found": "Найдено",
    "Page": "Страница",
    "Address": "Адрес",
    "Name": "Имя",
    "State": "Состояние",
    "Subscribed": "Подписан",
    "Letters": "Письма",
    "Add a subscriber": "Добавить подписчика",
    "Send a confirmation request": "Отправить просьбу подтвердить подписку",
    "Add as confirmed (you have their consent)": "Добавить подтверждённым (согласие у вас есть)",
    "Add": "Добавить",
    "Import": "Импорт",
    "CSV with an email column (and name), or one address a line.":
        "CSV со столбцом email (и name) или по одному адресу в строке.",
    "File": "Файл",
    "or paste": "или вставьте",
    "Search by address or name": "Поиск по адресу или имени",
    "Service": "Служба",
    "Enabled": "Включена",
    "not confirmed": "не подтверждены",
    "confirmed": "подтверждены",
    "received the whole series": "получили всю серию",
    "yes": "да",
    "no": "нет",
    "No services yet.": "Служб пока нет.",
    "New DB": "Новая база",
    "a-z, 0-9, _ and -, up to 40 characters": "a-z, 0-9, _ и -, до 40 символов",
    "Create DB": "Создать базу",
    "Create a DB first: a DB is a folder of services that the sender locks as one.":
        "Сначала создайте базу: база — это папка служб, которую рассыльщик блокирует целиком.",
    "Existing": "Есть",
    "New service": "Новая служба",
    "Name (in links)": "Имя (в ссылках)",
    "Title": "Название",
    "From name": "Имя отправителя",
    "From address": "Адрес отправителя",
    "Send window (schedule, optional)": "Окно отправки (расписание, необязательно)",
    "Delete subscribers who received the whole series": "Удалять подписчиков, получивших всю серию",
    "Create service": "Создать службу",
    "letter": "письмо",
    "new letter": "новое письмо",
    "Delay (45s, 10m, 2h, 3d)": "Задержка (45s, 10m, 2h, 3d)",
    "Position (empty: at the end)": "Позиция (пусто — в конец)",
    "Templates may use": "В шаблонах доступны",
    "Save": "Сохранить",
    "Status": "Состояние",
    "Mode": "Режим",
    "working": "рабочий",
    "debug (nothing is sent)": "отладка (ничего не отправляется)",
    "Switch to debug": "Перевести в отладку",
    "Switch to working": "Перевести в рабочий режим",
    "The sender has blocked itself": "Рассыльщик заблокировал себя",
    "To resume: switch to debug, then back to working.":
        "Чтобы возобновить: переведите в отладку, затем обратно в рабочий режим.",
    "Cron": "Крон",
    "Cron URL": "Адрес для крона",
    "Crontab line": "Строка для crontab",
    "No renamed cron script found: run `vykhukhol init`.":
        "Переименованный скрипт крона не найден: выполните `vykhukhol init`.",
    "Last 30 days": "Последние 30 дней",
    "subscriptions": "подписки",
    "letters sent": "отправлено писем",
    "highest bar": "самый высокий столбец",
    "Locks": "Блокировки",
    "Lock": "Блокировка",
    "Run": "Запуск",
    "Held for": "Держится",
    "No lock is held.": "Блокировок нет.",
    "Recent runs": "Последние запуски",
    "Started": "Начат",
    "Seconds": "Секунд",
    "Why it stopped": "Почему остановился",
    "Alerts": "Предупреждения",
    "No run yet.": "Запусков ещё не было.",
    "Recent alerts": "Последние предупреждения",
    "Time": "Время",
    "Alert": "Предупреждение",
    "No alerts.": "Предупреждений нет.",
    "Subscriptions and letters per day": "Подписки и письма по дням",
    "Newsletters": "Рассылки",
    "Job": "Задание",
    "Start": "Начало",
    "Progress": "Ход",
    "waiting": "ждёт",
    "Change": "Изменить",
    "sent": "отправлено",
    "failed": "отказов",
    "skipped": "пропущено",
    "in doubt": "под сомнением",
    "Refused": "Отказали",
    "No newsletter is waiting or being sent. Finished ones are reported to the admin by mail.":
        "Ни одна рассылка не ждёт и не идёт. О завершённых администратор получает отчёт письмом.",
    "Disabled": "Выключена",
    "Disable": "Выключить",
    "Enable": "Включить",
    "malformed lines": "испорченных строк",
    "Series": "Серия",
    "Delay": "Задержка",
    "Would skip a letter inserted here": "Пропустят письмо, вставленное сюда",
    "Progress is the number of letters received: a letter inserted at a position is skipped by the subscribers already past it (the column above); edits never re-send anything.":
        "Прогресс — это число полученных писем: письмо, вставленное на позицию, пропустят подписчики, которые её уже прошли (столбец выше); правка писем ничего не пересылает.",
    "No letters: this service is a plain news list.": "Писем нет: это простая новостная служба.",
    "Add a letter": "Добавить письмо",
    "Settings of the service": "Настройки службы",
    "Confirmation request: subject (empty: the standard one)": "Просьба подтвердить: тема (пусто — стандартная)",
    "Confirmation request: text (must contain the confirm_url link)":
        "Просьба подтвердить: текст (должен содержать ссылку confirm_url)",
    "Subscription form for your site": "Форма подписки для вашего сайта",
    "Delete this service…": "Удалить эту службу…",
    "Move": "Переместить",
    "Settings": "Настройки",
    "Nothing was saved: correct the fields marked below.": "Ничего не сохранено: исправьте отмеченные поля.",
    "default": "по умолчанию",
    "Send a test letter to admin_email with the saved mail settings":
        "Отправить тестовое письмо на admin_email с сохранёнными настройками почты",
    "Send test letter": "Отправить тестовое письмо",
    "unchanged": "без изменений",
    "Your session has ended; log in again.": "Сеанс закончился; войдите снова.",
    "The form has expired; open the page again.": "Форма устарела; откройте страницу заново.",
    "Too many wrong passwords. Try again in {minutes} minutes.":
        "Слишком много неверных паролей. Попробуйте через {minutes} минут.",
    "Wrong password.": "Неверный пароль.",
    "Log in from this site's own login page.": "Войдите со страницы входа этого сайта.",
    "Password": "Пароль",
    "Change password": "Сменить пароль",
    "Current password": "Текущий пароль",
    "New password": "Новый пароль",
    "New password again": "Новый пароль ещё раз",
    "Every other session ends: browsers logged in elsewhere must log in again.":
        "Все остальные сеансы закончатся: в других браузерах придётся войти заново.",
    "The current password is wrong; nothing changed.": "Текущий пароль неверен; ничего не изменено.",
    "The new passwords differ; nothing changed.": "Новые пароли не совпадают; ничего не изменено.",
    "The new password must be one line of at least {count} characters; nothing changed.":
        "Новый пароль должен быть одной строкой не короче {count} символов; ничего не изменено.",
    "Password changed. Every other session has ended.": "Пароль изменён. Все остальные сеансы закончены.",
    "No admin password is set: run `vykhukhol password`.": "Пароль не задан: выполните `vykhukhol password`.",
    "The cron script still has its shipped name cgi/cron.py: run `vykhukhol init` or rename it to something hard to guess.":
        "Скрипт крона всё ещё называется cgi/cron.py: выполните `vykhukhol init` или переименуйте его во что-нибудь трудноугадываемое.",
    "The data directory is inside the web folder without its .htaccess: it may be readable from the web.":
        "Папка данных лежит внутри веб-папки без своего .htaccess: её могут прочитать из интернета.",
    "Mail is not configured: letters are written to the outbox and nobody receives them.":
        "Почта не настроена: письма пишутся в «Исходящие», и никто их не получает.",
    "site_url is not https: mail services want an https unsubscribe link (RFC 8058).":
        "site_url не https: почтовые службы ждут ссылку отписки по https (RFC 8058).",
    "admin_email is empty: alerts and reports are only logged.":
        "admin_email пуст: предупреждения и отчёты только пишутся в журнал.",
    "{service}: {count} malformed subscriber lines (first: line {line}); they are kept and skipped.":
        "{service}: испорченных строк подписчиков — {count} (первая: строка {line}); они сохранены и пропускаются.",
    "Unknown mode.": "Неизвестный режим.",
    "Mode: {mode}.": "Режим: {mode}.",
    "Cleared: {what}.": "Снято: {what}.",
    "Settings saved.": "Настройки сохранены.",
    "Set admin_email first.": "Сначала задайте admin_email.",
    "Vykhukhol test letter": "Тестовое письмо Выхухоли",
    "If you read this, the mail settings work.": "Если вы это читаете, настройки почты работают.",
    "The letter could not be sent: {detail}": "Письмо не отправлено: {detail}",
    "A test letter went to {to}.": "Тестовое письмо ушло на {to}.",
    "DB {name} created.": "База {name} создана.",
    "Service {name} created; it is disabled until you enable it.":
        "Служба {name} создана; она выключена, пока вы её не включите.",
    "No such service.": "Такой службы нет.",
    "Saved.": "Сохранено.",
    "Enabled.": "Включена.",
    "Disabled.": "Выключена.",
    "Type the service's name to confirm.": "Для подтверждения введите имя службы.",
    "Service {name} deleted.": "Служба {name} удалена.",
    "Letter {number} added.": "Письмо {number} добавлено.",
    "Letter {number} saved.": "Письмо {number} сохранено.",
    "Letter {number} deleted; later letters moved up.": "Письмо {number} удалено; следующие сдвинулись вверх.",
    "Letter {number} moved to position {to}.": "Письмо {number} перемещено на позицию {to}.",
    "Added.": "Добавлен.",
    "Already subscribed; nothing changed.": "Уже подписан; ничего не изменилось.",
    "Confirmed.": "Подтверждён.",
    "Asked to confirm less than 10 minutes ago.": "Просьба подтвердить уходила меньше 10 минут назад.",
    "Asked to confirm again.": "Просьба подтвердить отправлена снова.",
    "{email} deleted.": "{email} удалён.",
    "The file is not UTF-8 text.": "Файл — не текст в UTF-8.",
    "Nothing to import.": "Нечего импортировать.",
    "Choose at least one service.": "Выберите хотя бы одну службу.",
    "Newsletter {name} created.": "Рассылка {name} создана.",
    "No such newsletter.": "Такой рассылки нет.",
    "Newsletter {name} cancelled.": "Рассылка {name} отменена.",
    "Start time changed.": "Время начала изменено.",
    "No such letter.": "Такого письма нет.",
    "working (letters may be sent) or debug (nothing is sent)":
        "working (письма отправляются) или debug (ничего не отправляется)",
    "where alerts and reports go (empty: log only)": "куда идут предупреждения и отчёты (пусто — только журнал)",
    "public base URL of the installation, for links in letters": "публичный адрес установки, для ссылок в письмах",
    "newsletter letters one run may send": "Новостийные службы, слать писем за раз",
    "series letters and reminders one run may send": "Серийные службы, слать писем за раз (с напоминаниями)",
    "the hoster's execution time limit for one script": "таймаут хостера на исполнение одного скрипта",
    "time between confirmation reminders": "период между напоминаниями о подтверждении",
    "reminders before an unconfirmed subscriber is deleted": "напоминаний до удаления неподтвердившего",
    "IANA zone for schedules and display": "часовой пояс IANA для расписаний и показа времени",
    "ru or en for pages and reports": "ru или en — язык страниц и отчётов",
    "at most this many letters in any clock hour, 0 = no cap": "не больше писем за час, 0 — без ограничения",
    "at most this many letters per day, 0 = no cap": "не больше писем за сутки, 0 — без ограничения",
    "IPs/CIDRs allowed to call the cron script (empty: anyone with the URL)":
        "IP/подсети, которым можно вызывать скрипт крона (пусто — всем, кто знает адрес)",
    "how letters leave: outbox, smtp or sendmail": "как уходят письма: outbox, smtp или sendmail",
    "the default sender address": "адрес отправителя по умолчанию",
    "SMTP server": "SMTP-сервер",
    "SMTP port": "порт SMTP",
    "none, starttls or ssl": "none, starttls или ssl",
    "SMTP login (empty: no login)": "логин SMTP (пусто — без входа)",
    "SMTP password": "пароль SMTP",
    "the sendmail program": "программа sendmail",
    "send every letter to this one address instead (for trials)": "слать все письма на этот адрес (для проверки)",
    "signs links; made at init": "подписывает ссылки; создаётся при init",
    "salted scrypt hash of the admin password": "солёный scrypt-хеш пароля администратора",
    "reverse proxies whose X-Forwarded-For names the client (empty: none)":
        "обратные прокси, чьему X-Forwarded-For можно верить (пусто — никому)",
    "subscribe requests that send mail, per client address and hour":
        "запросов подписки с письмом в час с одного адреса клиента",
    "SMTP connections a run may open at once (a relay: more)":
        "сколько SMTP-соединений один запуск открывает сразу (для релея — больше)",
    "separator of the tagged bounce address (empty: no tag)":
        "разделитель в адресе возврата с меткой (пусто — без метки)",
    "envelope sender for bounces (empty: the service's from_email)":
        "адрес возврата в конверте (пусто — from_email службы)",
    "mailbox the bounces are read from (imaps:// or pop3s://)":
        "ящик, из которого читаются возвраты (imaps:// или pop3s://)",
    "domain that signs the letters (DKIM; empty: unsigned)":
        "домен, которым подписываются письма (DKIM; пусто — без подписи)",
    "DKIM selector (the DNS name <selector>._domainkey.<domain>)":
        "селектор DKIM (имя в DNS <selector>._domainkey.<domain>)",
    "DKIM private key (empty: data/dkim/<domain>.<selector>.key)":
        "закрытый ключ DKIM (пусто — data/dkim/<domain>.<selector>.key)",
}


def tr(lang: str, text: str, **values: object) -> str:
    """An admin text in ``lang`` (English is the key itself)."""
    out = RU.get(text, text) if lang == "ru" else text
    return out.format(**values) if values else out
