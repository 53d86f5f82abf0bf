"""Where the compiled kernels are cached: the one place that decides it.

numba compiles the kernels on their first call in a process, which takes a minute
or so, and keeps the machine code on disk, so a later process loads it in a
fraction of a second. Where, in this order:

1. `NUMBA_CACHE_DIR`, when the user set it (numba's own setting), if it can be
   written;
2. beside the code, in `sim/kernel/__pycache__` (numba's default), if it can be
   written: a checkout, or an install by the user who runs it;
3. otherwise in the user's cache, `$XDG_CACHE_HOME/sim/numba` (`~/.cache/sim/numba`
   without it): `sim` installed by root and run by someone else. This module sets
   `NUMBA_CACHE_DIR` to it (numba reads it when imported, and child processes
   inherit it);
4. nowhere, when none of these can be written: the kernels then compile in every
   process that runs them, instead of failing with numba's "cannot cache" error.

It runs before numba is imported (`sim.kernel.jit` imports it first), once per
process; `location()` says what it settled.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping, MutableMapping
from pathlib import Path

ENV = "NUMBA_CACHE_DIR"
#: numba's default place for the kernels' cache: beside their source
IN_TREE = Path(__file__).resolve().parent / "__pycache__"


def writable(path: Path) -> bool:
    """`path` is a directory this process can create files in (made if missing)."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def user_cache(environ: Mapping[str, str]) -> Path | None:
    """`$XDG_CACHE_HOME/sim/numba`, or `~/.cache/sim/numba`; None without a home."""
    base = environ.get("XDG_CACHE_HOME")
    if not base:
        home = environ.get("HOME")
        if not home:
            try:
                home = str(Path.home())
            except (RuntimeError, KeyError):  # no HOME and no password entry
                return None
        base = os.path.join(home, ".cache")
    return Path(base) / "sim" / "numba"


def choose(environ: MutableMapping[str, str], in_tree: Path = IN_TREE) -> Path | None:
    """Where the kernels' cache goes (see the module's docstring), setting `NUMBA_CACHE_DIR`
    in `environ` when it is the user's cache; None: no cache."""
    given = environ.get(ENV)
    if given:
        return Path(given) if writable(Path(given)) else None
    if writable(in_tree):
        return in_tree
    mine = user_cache(environ)
    if mine is not None and writable(mine):
        environ[ENV] = str(mine)
        return mine
    return None


_LOCATION = choose(os.environ)
if _LOCATION is not None and _LOCATION != IN_TREE and "numba" in sys.modules:
    # numba came first (imported by the caller): it read NUMBA_CACHE_DIR already
    sys.modules["numba"].config.CACHE_DIR = str(_LOCATION)


def location() -> Path | None:
    """Where this process caches the compiled kernels; None: it does not (nothing writable)."""
    return _LOCATION


def notice() -> str:
    """One line for a user whose run waits for the kernels to compile."""
    where = location()
    if where is None:
        return ("compiling the kernel: no cache can be written here (set NUMBA_CACHE_DIR to "
                "a directory you can write), so every run compiles it again")
    return f"compiling the kernel, once per machine: later runs load it from {where}"
