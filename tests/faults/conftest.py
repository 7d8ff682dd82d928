"""Fixtures of the fault campaigns: a misbehaving SMTP server and a seed.

The ``site`` fixture (tests/conftest.py) gives each campaign a fresh
installation; ``bad_smtp`` is a real aiosmtpd server on 127.0.0.1 whose
answers a campaign programs (see :class:`support.faultkit.FaultHandler`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from support.faultkit import FaultServer, campaign_seed, start_smtp


@pytest.fixture
def bad_smtp() -> Iterator[FaultServer]:
    server = start_smtp()
    try:
        yield server
    finally:
        server.controller.stop()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A seeded random source; the seed is printed so a failed campaign can be
    replayed with VYKHUKHOL_SEED=<seed>."""
    seed = campaign_seed()
    print(f"\n{request.node.name}: VYKHUKHOL_SEED={seed}")
    return random.Random(seed)
