"""The management API over simulated time: the HTTP face of the control plane.

    from sim.api import SimServer, create_app, in_process_client
"""

from sim.api.app import create_app
from sim.api.client import SimClient, in_process_client
from sim.api.dispatch import dispatch
from sim.api.keys import ApiKey, KeyKind, KeyStore
from sim.api.server import ClockMode, SimServer

__all__ = [
    "ApiKey",
    "ClockMode",
    "KeyKind",
    "KeyStore",
    "SimClient",
    "SimServer",
    "create_app",
    "dispatch",
    "in_process_client",
]
