"""Work in a forked copy of the process (`sim.processes.forked.beside`)."""

import os
import sys

import pytest

from sim.processes.forked import beside


def test_the_work_runs_in_another_process_while_the_block_runs_here(tmp_path):
    mark = tmp_path / "pid"
    with beside(lambda: mark.write_text(str(os.getpid()))) as finished:
        here = os.getpid()
        assert finished() is True
        assert finished() is True  # asked twice: the copy was reaped once
    assert int(mark.read_text()) != here


def test_work_that_fails_in_the_copy_is_reported_as_not_finished(tmp_path):
    def failing() -> None:
        (tmp_path / "began").touch()
        raise ValueError("a bug in the work")

    with beside(failing) as finished:
        assert finished() is False
    assert (tmp_path / "began").exists()  # it did run there; its error stayed there


def test_a_block_that_fails_stops_the_copy_and_reaps_it():
    reader, writer = os.pipe()
    hold, release = os.pipe()

    def wait_forever() -> None:
        os.write(writer, str(os.getpid()).encode() + b"\n")
        os.read(hold, 1)  # never written: blocks until the copy is stopped

    pid = None
    with pytest.raises(RuntimeError, match="the block failed"), beside(wait_forever):
        pid = int(os.read(reader, 32))
        raise RuntimeError("the block failed")
    with pytest.raises(ChildProcessError):  # already reaped: no zombie, no live copy
        os.waitpid(pid, os.WNOHANG)
    for fd in (reader, writer, hold, release):
        os.close(fd)


def test_without_fork_nothing_runs_and_the_caller_does_the_work(monkeypatch, tmp_path):
    monkeypatch.delattr(os, "fork")
    with beside(lambda: (tmp_path / "ran").touch()) as finished:
        assert finished() is False
    assert not (tmp_path / "ran").exists()


def test_a_fork_refused_by_the_system_is_as_no_fork(monkeypatch, tmp_path):
    def refuse() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    with beside(lambda: (tmp_path / "ran").touch()) as finished:
        assert finished() is False
    assert not (tmp_path / "ran").exists()


def test_with_one_cpu_no_copy_is_made(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with beside(lambda: (tmp_path / "ran").touch()) as finished:
        assert finished() is False
    assert not (tmp_path / "ran").exists()


def test_the_copy_prints_nothing_and_ctrl_c_is_let_through_here(capfd, tmp_path):
    import signal
    import warnings

    def noisy() -> None:
        print("to stdout")
        sys.stderr.write("to stderr\n")
        warnings.warn("a warning", UserWarning, stacklevel=1)
        (tmp_path / "ran").touch()

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # printed, not raised: the work goes on to the end
        with beside(noisy) as finished:
            assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before  # nothing held
            assert finished() is True
    assert (tmp_path / "ran").exists()
    assert capfd.readouterr() == ("", "")
