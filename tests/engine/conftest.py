"""Hypothesis profiles for the engine's property tests: HYPOTHESIS_PROFILE=quick|thorough.

Registered here rather than in tests/conftest.py, which others edit; a profile
of the same name registered elsewhere first is left alone.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument

PROFILES = {
    "quick": dict(max_examples=25, stateful_step_count=40),
    "thorough": dict(max_examples=200, stateful_step_count=50),
}

for _name, _values in PROFILES.items():
    try:
        settings.get_profile(_name)
    except InvalidArgument:
        settings.register_profile(_name, deadline=None,
                                  suppress_health_check=[HealthCheck.too_slow], **_values)

_wanted = os.environ.get("HYPOTHESIS_PROFILE", "quick")
try:
    settings.load_profile(_wanted)
except InvalidArgument:  # a profile that another conftest registers later, or a typo
    settings.load_profile("quick")
