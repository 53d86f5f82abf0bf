"""The managed-auth state machine (sim/testing/auth_machine.py) with every step over HTTP.

Each step is about fifteen requests (the invariants list everything), so the
default run is short; HYPOTHESIS_PROFILE=thorough runs it as long as the
engine's machine.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from sim.testing.auth_http import HttpAuthMachine

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"

TestAuthOverHttp = HttpAuthMachine.TestCase
TestAuthOverHttp.settings = settings(
    max_examples=30 if THOROUGH else 10, stateful_step_count=30 if THOROUGH else 25,
    deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
