"""The headers every answer carries, in a module that imports nothing, so the
idle cron tick (:mod:`vykhukhol.sender.idle`) sends them without loading the web
machinery."""

SECURITY_HEADERS = [
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),  # links carry tokens: never leak them
    ("Content-Security-Policy",
     "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
     "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    ("Cache-Control", "no-store"),
]
