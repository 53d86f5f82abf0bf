"""The kernels compiled ahead of a run, the storage kernel in a second process meanwhile.

A run compiles each kernel on its first call, one after the other, in one
process. `compile_ahead` compiles them before the run instead, for the types the
run will call them with (`SIGNATURES`), and when the compute kernel turns out to
need compiling (its cache is missing or stale), it starts a child process that
compiles the storage lane's kernel into the same on-disk cache at the same time:
on two CPUs the wait is the longer of the two, not their sum. Then the storage
kernel is loaded from what the child wrote (or compiled here, if the child
could not). When both are cached, this only loads them, as their first calls
would have.

Without a cache (`sim.kernel.kernel_cache`) a child's work could not be shared,
so nothing runs beside. `SIGNATURES` must stay the types the run calls the
kernels with (tests/engine/test_kernel_compile.py checks it against a run);
were they to drift, the run would compile its own on its first call, as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import suppress
from typing import Any

from numba.core import types

from sim.kernel import kernel_cache, physics, storage_kernel
from sim.kernel.generator_typing import GENERATOR_TYPE
from sim.kernel.jit import CompileWatcher, watching

_F = types.Array(types.float64, 1, "C")
_F2 = types.Array(types.float64, 2, "C")
_I = types.Array(types.int64, 1, "C")
_F64, _I64 = types.float64, types.int64

#: the argument types of each kernel's calls (the positions of `advance` and `replay`)
SIGNATURES: dict[str, tuple[Any, ...]] = {
    "advance": (_F, _F, _F, _F, _F, _F, _F, GENERATOR_TYPE, _I, _F, _F, _F, _I,
                _F, _F, _F, _F2, _F2, _F2, _F, _F, _F),
    "replay": (_F64, _F64, _F, _F, types.Array(types.boolean, 1, "C"), _I64, _I, _F, _I, _I,
               _F, _F, _I, types.Array(types.int8, 1, "C"), _F, _F, _I64, _I, _F, _F,
               _F64, _F64, GENERATOR_TYPE),
}

_CHILD = "from sim.kernel.kernel_ahead import compile_storage; compile_storage()"


def compile_storage() -> None:
    """Compile (or load) the storage kernel: what the child process runs."""
    _compile(storage_kernel.replay, SIGNATURES["replay"])


class _Beside:
    """Starts the child when the compute kernel starts compiling (a cache miss), and tells
    `shown` (a progress display) that compiling began; `compile_ahead` tells it the end."""

    def __init__(self, shown: CompileWatcher | None) -> None:
        self.shown = shown
        self.child: subprocess.Popen | None = None
        self.compiling = False

    def started(self) -> None:
        if self.compiling:
            return
        self.compiling = True
        if self.shown is not None:
            self.shown.started()
        if kernel_cache.location() is not None:
            with suppress(OSError):
                self.child = subprocess.Popen(
                    [sys.executable, "-c", _CHILD], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    env={**os.environ, "PYTHONPATH": os.pathsep.join(
                        p for p in (_root(), os.environ.get("PYTHONPATH")) if p)})

    def compiled(self, done: int, total: int) -> None:
        pass

    def finished(self) -> None:
        pass


def _root() -> str:
    """The folder `sim` was imported from (the child imports the same code)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compile_ahead(shown: CompileWatcher | None = None) -> None:
    """Compile or load both kernels now, the storage kernel beside when compiling; `shown`
    hears `started` once if anything compiles, and `finished` when both are ready."""
    beside = _Beside(shown)
    try:
        with watching(beside):
            _compile(physics.advance, SIGNATURES["advance"])
            if beside.child is not None:
                beside.child.wait()
            _compile(storage_kernel.replay, SIGNATURES["replay"])
    finally:
        if beside.child is not None and beside.child.poll() is None:
            beside.child.kill()  # interrupted: ours, and useless now
            beside.child.wait()
        if beside.compiling and shown is not None:
            shown.finished()


def _compile(kernel: Any, signature: tuple[Any, ...]) -> None:
    """Compile or load `kernel` for `signature`; a signature that no longer fits the kernel
    (its arguments changed) is left to the run, which compiles what it calls on the way."""
    try:
        kernel.compile(signature)
    except Exception:  # noqa: BLE001, S110 - numba's typing errors have no common base
        pass
