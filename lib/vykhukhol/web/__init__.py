"""The web side: public subscriber pages, the cron URL, the admin, and `serve`.

Every app here is a plain WSGI callable, run the same way by a CGI script
(``vykhukhol.web.cgi.serve``) and by waitress under ``vykhukhol serve``.
"""
