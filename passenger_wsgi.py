"""Vykhukhol under Phusion Passenger (cPanel/Plesk "Setup Python App"): the
whole site as one WSGI app, ``application``. All behaviour lives in lib/vykhukhol
(vykhukhol/web/wsgi.py); see README.txt, "Deploying with Passenger"."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from vykhukhol.web.wsgi import application  # noqa: E402, F401
