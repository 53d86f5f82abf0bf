"""The SimPy world: the control plane and the processes that move its time."""

from sim.engine.clock import Clock
from sim.engine.config import AutoscalerConfig, ConnectionRecording, EngineConfig
from sim.engine.control_plane import ControlPlane, Created
from sim.engine.model import Branch, Compute, Operation, Project
from sim.engine.records import RunResult

__all__ = [
    "AutoscalerConfig",
    "Branch",
    "Clock",
    "Compute",
    "ConnectionRecording",
    "ControlPlane",
    "Created",
    "EngineConfig",
    "Operation",
    "Project",
    "RunResult",
]
