"""Mail service providers' callbacks: bounces and complaints reported by HTTPS
(docs/deliverability/providers.md#provider-callbacks).

``POST {site_url}/cgi/hook.py/{provider}?key={hooks.key}``. What is where:

- :mod:`vykhukhol.web.hooks` — the WSGI app: the provider's name, the key,
  the body's size, then the provider's module, then
  :func:`vykhukhol.bounces.apply.apply_reports`;
- one module per provider — :mod:`.ses` (through SNS, with its signature and
  certificate), :mod:`.mailgun`, :mod:`.postmark`, :mod:`.sendgrid` and
  :mod:`.generic` — each proves that a request is the provider's (its
  signature, its key, the state it keeps in the data directory), then hands
  the body to :mod:`vykhukhol.bounces.reading.events`, which reads it into
  :class:`~vykhukhol.bounces.reading.classify.Report` objects; what every
  callback shares (the refusal with its status, reading JSON, the key and
  basic-auth checks) is :mod:`vykhukhol.bounces.reading.callbacks`;
- :mod:`.quiet` — whether the callbacks of the provider letters go through
  have gone quiet (the status page's warning);
- :mod:`vykhukhol.cli.hooks` — ``vykhukhol hooks``: the URLs and the steps in each console.

Deliberately not here: any rule about what a bounce or a complaint does to a
subscriber. A callback's report goes through the same function as a report
by mail, so both follow one set of rules and one exactly-once journal
(``data/bounces/processed.txt``, keyed by the provider's event id).
"""

PROVIDERS = ("ses", "postmark", "mailgun", "sendgrid", "generic")
TITLES = {"ses": "Amazon SES through SNS", "postmark": "Postmark", "mailgun": "Mailgun",
          "sendgrid": "SendGrid", "generic": "Any other provider or script"}
