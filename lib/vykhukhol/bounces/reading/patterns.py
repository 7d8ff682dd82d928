"""Sisimai's error-message patterns, one list per bounce reason (read from generated data).

Taken from go-sisimai (https://github.com/sisimai/go-sisimai, commit
ed142ded2c40de1233f82d8405a0acf0b76998c6), ``reason/why-*.go``: the strings
each ``IncludedIn`` looks for in a lower-cased diagnostic text. ``INDEX`` texts
match as substrings; ``PAIRS`` match when their pieces occur in that order;
``ISNOT`` texts veto the reason. :mod:`.reasons` tries them in ``ORDER``.
The lists live in ``patterns.json`` beside this module (data, not code: a
table of 1,700 strings is no module to read); it is read once, on the first
bounce a process reads. Regenerate it with tools/sisimai/make_patterns.py
rather than by hand.

Copyright (C) 2014-2025 azumakuniyuki and sisimai development team, All rights
reserved. Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:
1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND
ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED
WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR
ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES
(INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES;
LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON
ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

from __future__ import annotations

import json
import os

with open(os.path.join(os.path.dirname(__file__), "patterns.json"), encoding="utf-8") as _file:
    _TABLE = json.load(_file)

# Sisimai's order for an SMTP diagnostic (ClassOrder[0]), then the reasons it
# tries only when neither that nor the status code decided (ClassOrder[1]).
ORDER: tuple[str, ...] = tuple(_TABLE["order"])
FIRST = ORDER[:_TABLE["first"]]  # ClassOrder[0]
INDEX: dict[str, tuple] = {name: tuple(texts) for name, texts in _TABLE["index"].items()}
PAIRS: dict[str, tuple] = {name: tuple(tuple(pair) for pair in pairs)
                           for name, pairs in _TABLE["pairs"].items()}
ISNOT: dict[str, tuple] = {name: tuple(texts) for name, texts in _TABLE["isnot"].items()}
# The phrases each mail system's own report uses (lhost/via-*.go, ``messagesof``),
# tried when the patterns above and the status code said nothing (without the
# three that match anything alone: "<", "received", "unable to").
FORMATS: dict[str, tuple[str, ...]] = {name: tuple(texts)
                                       for name, texts in _TABLE["formats"].items()}
del _TABLE
