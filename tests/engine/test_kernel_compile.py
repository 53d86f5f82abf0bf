"""How the kernels are compiled: where their cache goes (never a traceback when nothing
can be written), one type per argument, and the compile events a progress bar shows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sim.kernel import kernel_cache
from sim.kernel.jit import FUNCTIONS, njit, watching

REPO = Path(__file__).resolve().parents[2]
UNWRITABLE = Path("/dev/null/nowhere")  # under a file: not even root can create it


def test_numba_cache_dir_of_the_user_is_kept(tmp_path) -> None:
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "mine"), "HOME": str(tmp_path)}
    assert kernel_cache.choose(env, in_tree=tmp_path / "tree") == tmp_path / "mine"
    assert env["NUMBA_CACHE_DIR"] == str(tmp_path / "mine")


def test_an_unwritable_numba_cache_dir_means_no_cache(tmp_path) -> None:
    env = {"NUMBA_CACHE_DIR": str(UNWRITABLE), "HOME": str(tmp_path)}
    assert kernel_cache.choose(env, in_tree=tmp_path / "tree") is None


def test_the_cache_stays_beside_the_code_when_it_can(tmp_path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    assert kernel_cache.choose(env, in_tree=tmp_path / "tree") == tmp_path / "tree"
    assert "NUMBA_CACHE_DIR" not in env  # numba's own default, left alone


def test_an_install_the_user_cannot_write_caches_in_the_users_cache(tmp_path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    where = kernel_cache.choose(env, in_tree=UNWRITABLE)
    assert where == tmp_path / "xdg" / "sim" / "numba"
    assert env["NUMBA_CACHE_DIR"] == str(where) and where.is_dir()
    env = {"HOME": str(tmp_path / "home")}
    assert kernel_cache.choose(env, in_tree=UNWRITABLE) == tmp_path / "home/.cache/sim/numba"


def test_nothing_writable_means_no_cache(tmp_path) -> None:
    env = {"XDG_CACHE_HOME": str(UNWRITABLE), "HOME": str(UNWRITABLE)}
    assert kernel_cache.choose(env, in_tree=UNWRITABLE) is None
    assert "NUMBA_CACHE_DIR" not in env


def _installed_read_only(tmp_path: Path) -> Path:
    """A copy of `sim` whose kernels' folder cannot hold numba's cache (as for a user who
    cannot write where root installed it: a file stands where `__pycache__` would go)."""
    root = tmp_path / "site"
    shutil.copytree(REPO / "sim", root / "sim",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (root / "sim" / "kernel" / "__pycache__").write_text("not a directory")
    return root


PROBE = """
from sim.kernel import kernel_cache, physics, storage_kernel
import numpy as np
order = storage_kernel._merged(np.array([3.0, 1.0, 2.0]), np.array([1, 2]))
print(kernel_cache.location(), order.tolist())
"""


def _probe(root: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update({"PYTHONPATH": str(root), "HOME": str(UNWRITABLE)}, **env_extra)
    return subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_read_only_install_without_a_home_compiles_without_a_cache(tmp_path) -> None:
    root = _installed_read_only(tmp_path)
    done = _probe(root, {})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.split() == ["None", "[1,", "2,", "0]"]


def test_a_read_only_install_caches_in_the_users_cache(tmp_path) -> None:
    root = _installed_read_only(tmp_path)
    done = _probe(root, {"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 0, done.stderr
    where = tmp_path / "xdg" / "sim" / "numba"
    assert done.stdout.split()[0] == str(where)
    assert any("_merged" in p.name for p in where.rglob("*.nbi"))  # the compiled code is there


def test_a_constant_argument_compiles_one_copy() -> None:
    @njit
    def scaled(x, k):
        return x * k

    @njit
    def both(x):
        return scaled(x, 2) + scaled(x, 3) + scaled(x, 0)

    assert both(1.0) == 5.0
    assert len(scaled.signatures) == 1  # numba alone: one per literal, three


class Seen:
    def __init__(self) -> None:
        self.events: list[object] = []

    def started(self) -> None:
        self.events.append("started")

    def compiled(self, done: int, total: int) -> None:
        self.events.append((done, total))

    def finished(self) -> None:
        self.events.append("finished")


def test_compiling_is_announced_once_per_call_that_waits_for_it() -> None:
    @njit
    def inner(x):
        return x + 1

    @njit
    def outer(x):
        return inner(x) * 2

    seen = Seen()
    with watching(seen):
        assert outer(1) == 4
        assert outer(2) == 6  # compiled already: nothing to say
    total = len(FUNCTIONS)
    assert seen.events == ["started", (1, total), (2, total), "finished"]


SIGNATURES_USED = """
from sim.processes.preload import warm_up
warm_up()
from sim.kernel import physics, storage_kernel
from sim.kernel.kernel_ahead import SIGNATURES
print(set(physics.advance.signatures) == {SIGNATURES["advance"]},
      set(storage_kernel.replay.signatures) == {SIGNATURES["replay"]})
"""


def test_the_kernels_are_compiled_ahead_for_the_types_a_run_calls_them_with() -> None:
    """A run that takes every road (the warm-up) calls each kernel with exactly the types
    `compile_ahead` compiles: otherwise the run would compile its own copy after it."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", SIGNATURES_USED], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_compiling_ahead_with_the_kernels_cached_only_loads_them() -> None:
    from sim.kernel import physics, storage_kernel
    from sim.kernel.kernel_ahead import SIGNATURES, compile_ahead

    compile_ahead()  # compiles them if this checkout never did
    seen = Seen()
    compile_ahead(seen)
    assert seen.events == []  # nothing compiled, nothing shown
    assert SIGNATURES["advance"] in physics.advance.signatures
    assert SIGNATURES["replay"] in storage_kernel.replay.signatures


def test_a_signature_that_no_longer_fits_is_left_to_the_run(monkeypatch) -> None:
    """Had a kernel's arguments changed without SIGNATURES, `sim run` still runs (and the
    test above fails): compiling ahead is only ahead."""
    from numba.core import types

    from sim.kernel import kernel_ahead

    monkeypatch.setitem(kernel_ahead.SIGNATURES, "advance", (types.int64,))
    monkeypatch.setitem(kernel_ahead.SIGNATURES, "replay", (types.int64,))
    seen = Seen()
    kernel_ahead.compile_ahead(seen)
    assert seen.events in ([], ["started", "finished"])
