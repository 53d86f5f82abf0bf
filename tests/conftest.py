"""Hypothesis profiles for the whole suite: HYPOTHESIS_PROFILE=quick (default) or thorough (CI).

Property tests that take no explicit settings use the loaded profile; tests
that scale their own budget read `THOROUGH`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILES = {
    "quick": dict(max_examples=25, stateful_step_count=40),
    "thorough": dict(max_examples=200, stateful_step_count=50),
}
for _name, _values in PROFILES.items():
    settings.register_profile(_name, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow], **_values)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "quick")
if PROFILE not in PROFILES:
    raise SystemExit(f"HYPOTHESIS_PROFILE must be one of {sorted(PROFILES)}, got {PROFILE!r}")
settings.load_profile(PROFILE)
THOROUGH = PROFILE == "thorough"
