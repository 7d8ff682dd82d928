#!/usr/bin/env python3
"""Vykhukhol: the API: JSON for the site's other programs (CGI). All behaviour lives in lib/vykhukhol."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "lib"))
from vykhukhol.web.cgi import run  # noqa: E402

run("api", __file__)
