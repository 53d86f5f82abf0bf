"""Arrival processes: rates, daily shapes, exact instants, chunking and determinism."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.workload import BLOCK_S, Bursty, Diurnal, Periodic, Poisson, Replay, chunks
from sim.workload.arrivals import _day_remainder
from sim.workload.streams import below

DAY = 86_400.0
HOUR = 3_600.0
START = datetime(2026, 1, 5, tzinfo=UTC)
FIXTURE = Path(__file__).parent.parent / "fixtures" / "arrivals.csv"
#: the fixture's rows, in seconds after START, sorted
FIXTURE_SECONDS = [
    0, 0, 1.5, 1.5, 600, 3599, 3600, 23400, 43200, 43200.25, 43201.75, 86399.999, 86400,
    116130, 172800,
]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def within_sigmas(observed: float, mean: float, var: float, k: float = 4.0) -> bool:
    return abs(observed - mean) <= k * math.sqrt(var)


KINDS = {
    "poisson": Poisson(90),
    "diurnal": Diurnal(240, 3, 15, start_hour_offset_s=5 * HOUR),
    "hourly": Diurnal(hourly=[float(h % 7) for h in range(24)]),
    "bursty": Bursty(on_per_hour=600, off_per_hour=5, mean_on_s=900, mean_off_s=7200),
    "periodic": Periodic(every_s=1800, offset_s=120, jitter_s=600),
    "replay": Replay.from_csv(FIXTURE, START),
    "per_minute": Replay(times_s=np.repeat(np.arange(0.0, 5 * DAY, 60.0), 3), spread_s=60.0),
}


# ---- rates ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_poisson_count_over_a_month_is_within_four_sigma(seed: int) -> None:
    t1 = 30 * DAY
    n = Poisson(120).times(rng(seed), 0, t1).size
    mean = 120 * t1 / HOUR
    assert within_sigmas(n, mean, mean)
    assert Poisson(120).mean_rate_per_s(0, t1) * t1 == pytest.approx(mean)


def test_poisson_gaps_are_exponential() -> None:
    t = Poisson(3600).times(rng(4), 0, 20 * DAY)  # one a second on average
    gaps = np.diff(t)
    assert gaps.mean() == pytest.approx(1.0, rel=0.01)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.02)  # CV of an exponential


def test_diurnal_peak_hour_beats_trough_hour_by_the_profile_ratio() -> None:
    d = Diurnal(peak_per_hour=100, trough_per_hour=10, peak_hour=14)
    days = 60
    t = d.times(rng(5), 0, days * DAY)
    hour_of_day = np.floor((t % DAY) / HOUR)
    peak_n = int(np.count_nonzero(hour_of_day == 14))
    trough_n = int(np.count_nonzero(hour_of_day == 2))  # 12 h from the peak: the trough
    peak_mean = d.mean_rate_per_s(14 * HOUR, 15 * HOUR) * HOUR * days
    trough_mean = d.mean_rate_per_s(2 * HOUR, 3 * HOUR) * HOUR * days
    assert 99 < peak_mean / days < 100 and 10 < trough_mean / days < 10.6  # hour averages
    assert within_sigmas(peak_n, peak_mean, peak_mean)
    assert within_sigmas(trough_n, trough_mean, trough_mean)
    assert peak_n / trough_n == pytest.approx(peak_mean / trough_mean, rel=0.15)


def test_diurnal_uses_the_start_hour_of_day() -> None:
    # the scenario starts at 06:00 UTC, so the 14:00 UTC peak is at t = 8 h
    d = Diurnal(peak_per_hour=200, trough_per_hour=0, peak_hour=14, start_hour_offset_s=6 * HOUR)
    t = d.times(rng(6), 0, 20 * DAY)
    sim_hour = np.floor((t % DAY) / HOUR)
    assert np.count_nonzero(sim_hour == 8) > 20 * np.count_nonzero(sim_hour == 20)
    assert d.rate_per_hour(8 * HOUR) == pytest.approx(200)
    assert d.rate_per_hour(20 * HOUR) == pytest.approx(0, abs=1e-9)


def test_diurnal_hourly_profile_is_piecewise_constant() -> None:
    hourly = [0.0] * 24
    hourly[9], hourly[10] = 50.0, 150.0
    d = Diurnal(hourly=hourly)
    t = d.times(rng(7), 0, 30 * DAY)
    hour = np.floor((t % DAY) / HOUR)
    assert set(np.unique(hour).tolist()) == {9.0, 10.0}
    assert within_sigmas(np.count_nonzero(hour == 9), 50 * 30, 50 * 30)
    assert within_sigmas(np.count_nonzero(hour == 10), 150 * 30, 150 * 30)


def _near_day_ends(offset: float) -> np.ndarray:
    """Instants whose hour of day is hard to round: a few ulps either side of each day's
    end (after `offset`), over +-30 days and up to 2**52 s away; zeros; random ones."""
    g = rng(16)
    ends = np.concatenate([np.arange(-30.0, 31.0), g.integers(-2**35, 2**35, 2_000)]) * DAY
    near = [ends, np.array([0.0, -0.0, 1e-300, -1e-300, 5e-324, -5e-324])]
    down, up = ends, ends
    for _ in range(4):
        down, up = np.nextafter(down, -np.inf), np.nextafter(up, np.inf)
        near += [down, up]
    near += [g.uniform(-1e9, 1e9, 20_000), g.uniform(-2.0**52, 2.0**52, 2_000)]
    return np.concatenate(near) - offset


def test_the_remainder_of_a_day_is_numpys_to_the_bit() -> None:
    x = _near_day_ends(0.0)
    assert _day_remainder(x.copy()).tobytes() == (x % DAY).tobytes()


@pytest.mark.parametrize("kind", ["diurnal", "hourly"])
def test_the_rate_at_instants_within_bounds_is_the_rate(kind: str) -> None:
    # the blocks read the hour of day with `_day_remainder` (their instants are bounded),
    # `rate_per_hour` with numpy's %: the same rates
    d = KINDS[kind]
    assert isinstance(d, Diurnal)
    t = _near_day_ends(d.start_hour_offset_s)
    t = t[np.abs(t) < 2.0**51]
    assert d._rates(t, float(t.min()), float(t.max())).tobytes() == d.rate_per_hour(t).tobytes()


@pytest.mark.parametrize("kind", ["diurnal", "hourly"])
def test_diurnal_mean_rate_is_the_integral_of_the_rate(kind: str) -> None:
    d = KINDS[kind]
    assert isinstance(d, Diurnal)
    t0, t1 = 1234.5, 3 * DAY + 777.0
    grid = np.linspace(t0, t1, 2_000_001)
    numeric = np.trapezoid(d.rate_per_hour(grid), grid) / HOUR / (t1 - t0)
    assert d.mean_rate_per_s(t0, t1) == pytest.approx(numeric, rel=1e-4)


def test_bursty_long_run_rate_matches_the_stationary_mix() -> None:
    b = Bursty(on_per_hour=600, off_per_hour=6, mean_on_s=600, mean_off_s=3000)
    t1 = 60 * DAY
    n = b.times(rng(8), 0, t1).size
    mean = b.mean_rate_per_s(0, t1) * t1
    assert mean == pytest.approx((600 / 6 + 6 * 5 / 6) * 24 * 60)
    # an MMPP is overdispersed: var = mean + 2 (dl)^2 p (1 - p) tau T, tau = on*off/(on+off)
    p, dl, tau = 600 / 3600, (600 - 6) / HOUR, 600 * 3000 / 3600
    assert within_sigmas(n, mean, mean + 2 * dl**2 * p * (1 - p) * tau * t1)


def test_bursty_off_periods_with_no_traffic_are_long_gaps() -> None:
    b = Bursty(on_per_hour=3600, off_per_hour=0, mean_on_s=60, mean_off_s=6000)
    gaps = np.diff(b.times(rng(9), 0, 30 * DAY))
    # about 30 d / 101 min on/off cycles, so hundreds of gaps of more than 10 minutes
    assert 200 < np.count_nonzero(gaps > 600) < 600


def _bursty_drawing_every_period(b: Bursty, g: np.random.Generator, t0: float, t1: float
                                 ) -> np.ndarray:
    """The plain reading of a Bursty block: a Poisson count for every period of the block,
    those at rate 0 included, then the instants."""
    means = {True: b.mean_on_s, False: b.mean_off_s}
    rates = {True: b.on_per_hour / HOUR, False: b.off_per_hour / HOUR}
    on = bool(g.random() < b.p_on)
    exps = (e for _ in iter(int, 1) for e in g.standard_exponential(256).tolist())
    switch_at = t0 + means[on] * next(exps)
    out, a = [], t0
    while a < t1:
        end = min(t1, (math.floor(a / BLOCK_S) + 1) * BLOCK_S)
        starts, lengths, seg_rates, s = [], [], [], a
        while True:
            e = min(switch_at, end)
            if e > s:
                starts.append(s)
                lengths.append(e - s)
                seg_rates.append(rates[on])
            if switch_at >= end:
                break
            s, on = switch_at, not on
            switch_at += means[on] * next(exps)
        counts = g.poisson(np.asarray(seg_rates) * np.asarray(lengths))
        x = np.repeat(starts, counts) + np.repeat(lengths, counts) * g.random(int(counts.sum()))
        out.append(np.minimum(np.sort(x), np.nextafter(end, a)))
        a = end
    return np.concatenate(out) if out else np.empty(0)


@settings(max_examples=150, deadline=None)
@given(on=st.sampled_from([0.0, 4.0, 600.0]), off=st.sampled_from([0.0, 0.0, 3.0]),
       mean_on=st.floats(60, 4 * HOUR), mean_off=st.floats(60, 3 * DAY),
       t0=st.floats(0, 2 * DAY), span=st.floats(0, 4 * DAY), seed=st.integers(0, 2**32))
def test_bursty_skips_drawing_periods_at_rate_zero_without_changing_a_number(
        on, off, mean_on, mean_off, t0, span, seed) -> None:
    # numpy draws nothing for a Poisson mean of 0, so a period at rate 0 is not drawn at
    # all: the instants and what the generator gives next are those of drawing every period
    b = Bursty(on_per_hour=on, off_per_hour=off, mean_on_s=mean_on, mean_off_s=mean_off)
    fast, plain = rng(seed), rng(seed)
    got = b.times(fast, t0, t0 + span)
    assert np.array_equal(got, _bursty_drawing_every_period(b, plain, t0, t0 + span))
    assert fast.random() == plain.random()


# ---- exact instants ----------------------------------------------------------------------------


def test_periodic_without_jitter_is_exact() -> None:
    t = Periodic(every_s=900, offset_s=60).times(rng(), 0, DAY)
    assert np.array_equal(t, 60 + 900 * np.arange(96))
    assert np.all(np.diff(t) == 900)


def test_periodic_jitter_stays_within_its_window() -> None:
    p = Periodic(every_s=3600, offset_s=300, jitter_s=600)
    t = p.times(rng(10), 0, 10 * DAY)
    assert t.size == 240
    late = (t - 300) % 3600
    assert np.all(late < 600) and late.std() > 100


def test_periodic_window_starting_mid_jitter_keeps_the_late_arrival() -> None:
    # anchor at 0, jitter up to 1000 s: in [500, 3600) that arrival shows up half the time
    p = Periodic(every_s=3600, jitter_s=1000)
    seen = [p.times(rng(s), 500, 3600).size for s in range(400)]
    assert set(seen) <= {0, 1}
    assert 150 < sum(seen) < 250


def test_replay_reproduces_the_file() -> None:
    r = Replay.from_csv(FIXTURE, START)
    assert r.times_s.tolist() == pytest.approx(FIXTURE_SECONDS)
    assert r.times(rng(), 0, 3 * DAY).tolist() == pytest.approx(FIXTURE_SECONDS)
    assert r.times(rng(), 600, DAY).tolist() == pytest.approx(FIXTURE_SECONDS[4:12])
    assert r.mean_rate_per_s(0, DAY) * DAY == 12


def test_replay_per_minute_counts_spread_within_each_minute(tmp_path: Path) -> None:
    csv = tmp_path / "m.csv"
    csv.write_text("minute,count\n0,3\n2,0\n5,2\n2026-01-05T01:00:00Z,4\n")
    r = Replay.from_csv(csv, START)
    t = r.times(rng(11), 0, DAY)
    minute = np.floor(t / 60).astype(int)
    assert dict(zip(*np.unique(minute, return_counts=True), strict=True)) == {0: 3, 5: 2, 60: 4}
    assert r.mean_rate_per_s(0, DAY) * DAY == pytest.approx(9)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("time\n2026-01-05T00:00:00Z\nyesterday\n", "line 3"),
        ("minute,count\n1,2\n2,-1\n", "line 3"),
        ("minute,count\n1,2.5\n", "whole number"),
        ("minute,count\n1\n", "too few columns"),
    ],
)
def test_replay_refuses_bad_rows_with_their_line(tmp_path: Path, text: str, fragment: str) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(text)
    with pytest.raises(ValueError, match=fragment):
        Replay.from_csv(csv, START)


# ---- chunks, windows, determinism -------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("chunk_s", [600.0, 7_777.7, DAY, 3.5 * DAY, 1e9])
def test_chunk_size_does_not_change_the_stream(kind: str, chunk_s: float) -> None:
    process, t0, t1 = KINDS[kind], 1_000.0, 5 * DAY
    at_once, by_chunk = rng(12), rng(12)
    whole = process.times(at_once, t0, t1)
    parts = list(chunks(process, by_chunk, t0, t1, chunk_s))
    assert at_once.random() == by_chunk.random()  # the same draws, to the last
    assert len(parts) == math.ceil((t1 - t0) / chunk_s)
    for j, part in enumerate(parts):  # the j-th array belongs to the j-th window
        lo = t0 + j * chunk_s
        assert np.all((part >= lo) & (part < min(t1, lo + chunk_s)))
    assert np.array_equal(np.concatenate(parts), whole)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), t0=st.floats(-DAY, 3 * DAY),
       length=st.sampled_from([BLOCK_S, 7 * BLOCK_S]) | st.floats(1e-3, 4 * DAY),
       seed=st.integers(0, 2**32 - 1))
def test_times_at_once_are_the_blocks_drawn_one_by_one(kind: str, t0: float, length: float,
                                                        seed: int) -> None:
    # some kinds draw `times` otherwise than block by block (Diurnal: the rate at all the
    # blocks' instants at once; the spread kinds: the anchors of the whole window): the
    # numbers are those of the blocks, and the generator ends where they leave it
    process, t1 = KINDS[kind], t0 + length
    at_once, by_block = rng(seed), rng(seed)
    whole = process.times(at_once, t0, t1)
    (joined,) = chunks(process, by_block, t0, t1, chunk_s=1e12)
    assert whole.dtype == joined.dtype and whole.tobytes() == joined.tobytes()
    assert at_once.random() == by_block.random()


def test_an_instant_rounded_up_to_the_end_of_its_block_is_moved_just_below_it() -> None:
    below_5 = np.nextafter(5.0, 1.0)
    assert below(np.array([1.0, 2.0, 5.0, 5.0]), 1.0, 5.0).tolist() == [1.0, 2.0, below_5,
                                                                          below_5]
    assert below(np.array([1.0, 4.5]), 1.0, 5.0).tolist() == [1.0, 4.5]
    assert below(np.empty(0), 1.0, 5.0).size == 0


def test_an_hour_of_day_rounded_up_to_24_is_the_last_hour() -> None:
    t = np.array([-1e-300])  # t % DAY rounds up to DAY itself
    assert ((t % DAY) / HOUR).tolist() == [24.0]
    assert Diurnal(hourly=[float(h) for h in range(24)]).rate_per_hour(t).tolist() == [23.0]


@pytest.mark.parametrize("kind", ["poisson", "diurnal", "hourly", "replay"])
def test_windows_split_on_the_block_grid_join_to_the_whole(kind: str) -> None:
    process = KINDS[kind]
    whole = process.times(rng(13), 0, 6 * DAY)
    g = rng(13)
    first, rest = process.times(g, 0, 2 * BLOCK_S), process.times(g, 2 * BLOCK_S, 6 * DAY)
    joined = np.concatenate([first, rest])
    assert np.array_equal(joined, whole)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_same_seed_same_arrays_other_seed_other_arrays(kind: str) -> None:
    process = KINDS[kind]
    a, b = process.times(rng(14), 0, 4 * DAY), process.times(rng(14), 0, 4 * DAY)
    assert np.array_equal(a, b)
    if kind != "replay" and not (kind == "periodic" and process.spread == 0):
        assert not np.array_equal(a, process.times(rng(15), 0, 4 * DAY))


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(KINDS)),
    t0=st.floats(0, 3 * DAY),
    length=st.floats(0, 2 * DAY),
    seed=st.integers(0, 2**32 - 1),
)
def test_arrivals_are_sorted_and_inside_the_window(
    kind: str, t0: float, length: float, seed: int
) -> None:
    t1 = t0 + length
    t = KINDS[kind].times(rng(seed), t0, t1)
    assert t.dtype == np.float64
    assert np.all(np.diff(t) >= 0)
    assert np.all((t >= t0) & (t < t1)) if t.size else True


# ---- parameters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: Poisson(-1),
        lambda: Poisson(True),
        lambda: Poisson(float("nan")),
        lambda: Diurnal(100, 200, 14),  # trough above peak
        lambda: Diurnal(100, 10, 24),
        lambda: Diurnal(100, 10),  # no peak_hour
        lambda: Diurnal(100, 10, 14, hourly=[1.0] * 24),
        lambda: Diurnal(hourly=[1.0] * 23),
        lambda: Bursty(10, 0, 0, 60),
        lambda: Periodic(0),
        lambda: Periodic(60, jitter_s=-1),
        lambda: Replay(times_s=np.array([1.0, np.inf])),
    ],
)
def test_bad_parameters_are_refused(make) -> None:
    with pytest.raises(ValueError):
        make()


def test_bad_windows_are_refused() -> None:
    with pytest.raises(ValueError):
        Poisson(1).times(rng(), 10, 5)
    with pytest.raises(ValueError):
        next(chunks(Poisson(1), rng(), 0, 10, chunk_s=0))
