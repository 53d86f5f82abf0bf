"""`sim` keeps memory it frees for its next arrays (sim.processes.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sim.processes.allocator import keep_freed_memory

# Three rounds of what a run does all along: 100 MB allocated in blocks (of the size
# given), written, freed. Prints the page faults the rounds cost (after a first round
# that grows the heap). Modes: glibc's default, the pad alone, both settings.
ROUNDS = textwrap.dedent("""
    import ctypes, resource, sys
    from sim.processes.allocator import TOP_PAD, keep_freed_memory

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mode, size = sys.argv[1], int(sys.argv[2])
    if mode == "keep":
        assert keep_freed_memory()
    elif mode == "pad":
        assert libc.mallopt(-2, TOP_PAD) == 1

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    for n in range(4):
        if n == 1:
            start = faults()
        blocks = [libc.malloc(size) for _ in range(100_000_000 // size)]
        for block in blocks:
            ctypes.memset(block, 1, size)
        for block in blocks:
            libc.free(block)
    print(faults() - start)
""")


def _page_faults(mode: str, block: int = 10_000) -> int:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    run = subprocess.run([sys.executable, "-c", ROUNDS, mode, str(block)], capture_output=True,
                         text=True, check=True, env=environ)
    return int(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_memory_is_kept_for_the_next_arrays_only_when_asked() -> None:
    default, kept = _page_faults("default"), _page_faults("keep")
    assert default > 1_000  # glibc's default: freed memory goes back, comes again as new pages
    assert kept < default / 10
    assert keep_freed_memory()  # glibc takes the settings, again and again


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_large_blocks_come_from_the_kept_heap_too() -> None:
    """The pad alone fixes the mapping threshold at 128 KiB: every 1 MB block is mapped
    anew, fresh pages each time. With the threshold raised they stay in the heap."""
    pad_alone, kept = _page_faults("pad", 1_000_000), _page_faults("keep", 1_000_000)
    assert pad_alone > 50_000  # 3 x 100 MB of fresh 4 KiB pages
    assert kept < pad_alone / 10


def test_the_command_line_keeps_freed_memory(monkeypatch, capsys) -> None:
    from sim import cli

    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(True))
    assert cli.main(["limits"]) == 0
    assert calls == [True]
    assert "max_conn" in capsys.readouterr().out


def test_embedded_workers_start_without_dasks_trimming_threshold() -> None:
    """dask sets MALLOC_TRIM_THRESHOLD_ for its workers; the embedded cluster's start
    without it (the workers keep freed memory by `keep_freed_memory` instead)."""
    from sim.processes.cluster import open_client

    names = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
    with open_client(1) as client:
        seen = client.run(lambda: {name: os.environ.get(name) for name in names})
    assert list(seen.values()) == [dict.fromkeys(names)]


def _large_block_faults() -> int:
    """Page faults of three rounds of 100 MB in 1 MB blocks, after a first round."""
    import ctypes
    import resource

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    start = 0
    for n in range(4):
        if n == 1:
            start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        blocks = [libc.malloc(1_000_000) for _ in range(100)]
        for block in blocks:
            ctypes.memset(block, 1, 1_000_000)
        for block in blocks:
            libc.free(block)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_embedded_workers_keep_freed_memory() -> None:
    """Each worker of the embedded cluster sets both (its plugin, `sim.processes.worker_process`):
    large blocks freed by a shard serve the next ones without fresh pages."""
    from sim.processes.cluster import open_client

    with open_client(1) as client:
        faults = client.run(_large_block_faults)
    assert [count < 5_000 for count in faults.values()] == [True]  # not 3 x 24,400 pages


def _arenas_after_a_thread_allocates() -> int:
    """How many arenas glibc reports once a new thread has allocated a block."""
    import ctypes
    import tempfile
    import threading

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_char_p)
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)

    def allocate() -> None:
        libc.free(libc.malloc(1_000_000))

    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
    with tempfile.NamedTemporaryFile("r", suffix=".xml") as report:
        stream = libc.fopen(report.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        return report.read().count("<heap nr=")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_threads_share_the_one_arena_where_the_pad_holds() -> None:
    """A thread's own arena is never trimmed with a pad this large: every thread of a
    process that kept freed memory allocates from the first one."""
    code = ("import sys; from sim.processes.allocator import keep_freed_memory; "
            "from tests.cli.test_allocator import _arenas_after_a_thread_allocates as n; "
            "keep = sys.argv[1] == 'keep'; assert not keep or keep_freed_memory(); print(n())")
    counts = {}
    for mode in ("default", "keep"):
        run = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True,
                             check=True, env={k: v for k, v in os.environ.items()
                                              if not k.startswith("MALLOC_")})
        counts[mode] = int(run.stdout)
    assert counts == {"default": 2, "keep": 1}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_embedded_workers_run_their_shards_in_the_one_arena() -> None:
    from sim.processes.cluster import open_client

    with open_client(1) as client:
        arenas = client.submit(_arenas_after_a_thread_allocates, pure=False).result()
    assert arenas == 1
