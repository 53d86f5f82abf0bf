"""The one port through which a scenario's scripted calls reach the control plane.

A scripted call (`actions:`) must meet exactly what a request to `sim serve` meets
(the route handlers, their checks and error bodies), and those live in the HTTP
layer, above the scenario. So the scenario does not import that layer: it calls
`scripted_call`, and the HTTP layer's dispatcher (`sim.api.dispatch`) registers
itself here when it is imported. A run with scripted calls that finds nothing
registered loads that module by name, once, at run time: the only place the
scenario reaches above itself, and why FastAPI is imported only by runs that have
scripted calls.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.engine.control_plane import ControlPlane

#: (control plane, method, path after the version segment, JSON body) -> (status, JSON body)
Dispatch = Callable[["ControlPlane", str, str, Any], tuple[int, Any]]

#: the module that registers the dispatcher when imported
DEFAULT = "sim.api.dispatch"

_dispatch: Dispatch | None = None


def register(dispatch: Dispatch) -> None:
    """Make `dispatch` the way scripted calls reach the control plane."""
    global _dispatch
    _dispatch = dispatch


def dispatcher() -> Dispatch:
    """The registered dispatcher, loading the HTTP layer's on first use."""
    if _dispatch is None:
        importlib.import_module(DEFAULT)  # registers itself
    assert _dispatch is not None, f"{DEFAULT} did not register a dispatcher"
    return _dispatch


__all__ = ["Dispatch", "dispatcher", "register"]
