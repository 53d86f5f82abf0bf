"""The control plane against a model of the specification's rules (sim/testing/control_plane_machine.py).

Settings come from the profile named by HYPOTHESIS_PROFILE (tests/conftest.py).
"""

from sim.testing.control_plane_machine import ControlPlaneMachine

TestControlPlaneMachine = ControlPlaneMachine.TestCase
