"""Vykhukhol: a flat-file mailing-list manager for shared hosting.

A Python port of "Почтовая Выхухоль" (the Mail Desman). All logic lives in this
package; the CGI scripts in ``cgi/`` and ``admin/`` are thin shims around it.
"""

__version__ = "0.1.0"
