"""How `sim run` words the roads its computes took: one word per road, old run.json too."""

from sim.cli.run_text import roads_line


def test_the_roads_line_names_the_kernel_and_per_session_roads() -> None:
    roads = {"kernel": 14, "kernel but for its scripted calls": 2,
             "per-session: created by a call": 1}
    assert roads_line(roads) == ("17 computes: 14 by the kernel, 2 by the kernel but for their "
                                 "scripted calls, 1 per-session in the SimPy engine "
                                 "(1 created by a call)")


def test_a_run_json_written_before_the_words_reads_the_same() -> None:
    old = {"fleet path": 14, "fleet path but for its scripted calls": 2,
           "engine: created by a call": 1}
    new = {"kernel": 14, "kernel but for its scripted calls": 2, "per-session: created by a call": 1}
    assert roads_line(old) == roads_line(new)


def test_no_computes_still_says_which_road() -> None:
    assert roads_line({}) == "0 computes: 0 by the kernel"
