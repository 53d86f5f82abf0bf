"""The managed-auth state machine (sim/testing/auth_machine.py) over the engine verbs."""

from hypothesis import HealthCheck, settings

from sim.testing.auth_machine import AuthMachine

TestAuthMachine = AuthMachine.TestCase
TestAuthMachine.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
