"""`sim` keeps memory it frees for its next arrays (sim.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sim.allocator import keep_freed_memory

# Three rounds of what a run does all along: 100 MB allocated in blocks of 10 kB,
# written, freed. Prints the page faults the rounds cost (after a first round that
# grows the heap).
ROUNDS = textwrap.dedent("""
    import ctypes, resource, sys
    from sim.allocator import keep_freed_memory

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    if sys.argv[1] == "keep":
        assert keep_freed_memory()

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    for n in range(4):
        if n == 1:
            start = faults()
        blocks = [libc.malloc(10_000) for _ in range(10_000)]
        for block in blocks:
            ctypes.memset(block, 1, 10_000)
        for block in blocks:
            libc.free(block)
    print(faults() - start)
""")


def _page_faults(mode: str) -> int:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    run = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True,
                         check=True, env=environ)
    return int(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_memory_is_kept_for_the_next_arrays_only_when_asked() -> None:
    default, kept = _page_faults("default"), _page_faults("keep")
    assert default > 1_000  # glibc's default: freed memory goes back, comes again as new pages
    assert kept < default / 10
    assert keep_freed_memory()  # glibc takes the setting, again and again


def test_the_command_line_keeps_freed_memory(monkeypatch, capsys) -> None:
    from sim import cli

    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(True))
    assert cli.main(["limits"]) == 0
    assert calls == [True]
    assert "max_conn" in capsys.readouterr().out


def test_embedded_workers_start_without_dasks_trimming_threshold() -> None:
    """dask sets MALLOC_TRIM_THRESHOLD_ for its workers; the embedded cluster's start
    without it, and without the pad: glibc's adaptive thresholds did best there."""
    from sim.cluster import open_client

    names = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
    with open_client(1) as client:
        seen = client.run(lambda: {name: os.environ.get(name) for name in names})
    assert list(seen.values()) == [dict.fromkeys(names)]
