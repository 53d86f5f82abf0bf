"""How the compiled kernels are compiled: numba's `njit`, cached where this user can write,
with one type per argument.

The kernels (`sim.kernel.physics`, `sim.kernel.row_heaps`, `sim.kernel.storage_kernel`)
take `njit` from here instead of from numba. It is numba's, with two differences:

- `cache=True` caches where `sim.kernel.kernel_cache` says (which it settles before
  numba is imported), or nowhere when this user can write no cache: the kernel then
  compiles in every process instead of failing at import.
- A compiled function called from another with a constant (`_submit(..., SUSPEND, ...)`,
  a counter that starts at 0) is compiled for the plain type of that constant
  (int64), not for the literal value: numba would otherwise compile one copy of the
  function, and of everything it calls, per constant it is ever called with (three
  `_submit`s, two `_wake`s: 28 compilations where 19 do). The code is the same (the
  constant was never used to specialise it), so are the results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numba
from numba.core import event, types

# settled before numba was imported: `sim.kernel` imports it first of all
from sim.kernel import kernel_cache

#: the kernels' functions that compile on their own (not inlined into their callers)
FUNCTIONS: list[Any] = []
#: options of a function only compiled code calls: no entry point from Python to build
#: (a quarter of what the compute kernel's compilation cost once its helpers stopped
#: being inlined by numba)
INTERNAL: dict[str, bool] = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def njit(*args: Any, cache: bool = False, **options: Any) -> Any:
    """numba.njit, cached where `kernel_cache` says, compiling one type per argument."""
    options["cache"] = cache and kernel_cache.location() is not None

    def decorate(py_func: Callable) -> Any:
        dispatcher = _one_type_per_argument(numba.njit(**options)(py_func))
        if options.get("inline", "never") == "never":
            FUNCTIONS.append(dispatcher)
        return dispatcher

    if args and callable(args[0]):  # used bare: @njit
        return decorate(args[0])
    return decorate


def _one_type_per_argument(dispatcher: Any) -> Any:
    """`dispatcher`, typed for calls from compiled code with literal types made plain."""
    resolve = dispatcher.get_call_template

    def get_call_template(args: tuple, kws: dict) -> Any:
        return resolve(tuple(types.unliteral(a) for a in args),
                       {k: types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


class CompileWatcher(Protocol):
    """Told when the kernels compile (a cache missing or stale), in the compiling thread."""

    def started(self) -> None:
        """A kernel's compilation begins (what its first call waits for)."""

    def compiled(self, done: int, total: int) -> None:
        """`done` of the kernels' `total` functions are compiled."""

    def finished(self) -> None:
        """The compilation that `started` announced is over."""


class _Listener(event.Listener):
    """numba's compile events of the kernels' functions, to a `CompileWatcher`."""

    def __init__(self, watcher: CompileWatcher):
        self.watcher = watcher
        self.depth = 0  # a function compiles what it calls inside its own compilation
        self.done: set[int] = set()

    @staticmethod
    def _ours(ev: event.Event) -> bool:
        dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        return any(dispatcher is f for f in FUNCTIONS)

    def on_start(self, ev: event.Event) -> None:
        if not self._ours(ev):
            return
        self.depth += 1
        if self.depth == 1:
            self.watcher.started()

    def on_end(self, ev: event.Event) -> None:
        if not self._ours(ev):
            return
        self.depth -= 1
        self.done.add(id(ev.data["dispatcher"]))
        self.watcher.compiled(len(self.done), max(len(FUNCTIONS), len(self.done)))
        if self.depth == 0:
            self.watcher.finished()


@contextmanager
def watching(watcher: CompileWatcher) -> Iterator[None]:
    """Within: `watcher` hears of every compilation of the kernels (none when the cache
    holds them)."""
    with event.install_listener("numba:compile", _Listener(watcher)):
        yield
