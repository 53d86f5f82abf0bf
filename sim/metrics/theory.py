"""Closed forms of queueing theory the simulator is held to, and Student's t without scipy.

Used by the library (sweep intervals, the recommender's pruning) and by the
tests that check the engine against them (`sim.testing.theory` adds the
estimators). Plain Python: the Erlang formulas use the stable recurrences,
and Student's t quantile is found by bisection on its CDF, written with the
regularised incomplete beta function (continued fraction, Lentz's method).

Why the formulas are exact for the engine (zero cold start and zero
operation durations, Poisson arrivals at rate lam, sessions of mean ED):

- scale to zero: the engine suspends a compute at max(end of the latest
  admitted session, last arrival) + T. So at instant t the compute is on
  exactly when some earlier arrival s has s + D_s + T > t: it is on iff an
  M/G/inf queue whose customers stay D + T is not empty. That queue holds a
  Poisson number of customers of mean lam (ED + T) whatever the law of D
  (insensitivity), so P(off) = exp(-lam (T + ED)) as a time average, and by
  PASTA also as the share of arrivals that find it suspended.
- direct connections: an M/G/c/c loss system; Erlang-B is insensitive to
  the law of D as well. Little's law gives the carried load a (1 - B).
- pooler: each client takes the server that frees first, FCFS; with
  exponential sessions that is M/M/k, whose mean wait is Erlang-C's.
"""


from __future__ import annotations

import math
from statistics import NormalDist

# -- queueing closed forms ------------------------------------------------------


def erlang_b(c: int, a: float) -> float:
    """Blocking probability of M/G/c/c with offered load a (Erlangs)."""
    if c < 0 or a < 0:
        raise ValueError("c and a must be >= 0")
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(k: int, a: float) -> float:
    """P(an arrival waits) in M/M/k with offered load a < k."""
    if not 0 <= a < k:
        raise ValueError(f"need 0 <= a < k, got a={a}, k={k}")
    b = erlang_b(k, a)
    return k * b / (k - a * (1.0 - b))


def erlang_c_wait(k: int, lam: float, mean_service: float) -> float:
    """Mean wait in queue of M/M/k (all arrivals, those served at once count 0)."""
    a = lam * mean_service
    return erlang_c(k, a) * mean_service / (k - a)


def erlang_c_wait_quantile(k: int, lam: float, mean_service: float, q: float) -> float:
    """The q-quantile of the queue wait in M/M/k (0 when fewer than 1 - q wait at all).

    P(W > t) = C(k, a) exp(-(k - a) t / mean_service), a = lam mean_service < k.
    """
    a = lam * mean_service
    waits = erlang_c(k, a)
    if waits <= 1.0 - q:
        return 0.0
    return mean_service / (k - a) * math.log(waits / (1.0 - q))


def p_suspended(lam: float, timeout: float, mean_session: float) -> float:
    """Share of arrivals (and of time) that find a scale-to-zero compute suspended."""
    return math.exp(-lam * (timeout + mean_session))


def share_on(lam: float, timeout: float, mean_session: float) -> float:
    return 1.0 - p_suspended(lam, timeout, mean_session)


def carried_load(lam: float, mean_session: float, c: int | None = None) -> float:
    """Little's law: mean open connections; with c, after Erlang-B refusals."""
    a = lam * mean_session
    return a if c is None else a * (1.0 - erlang_b(c, a))


# -- Student's t without scipy ---------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _betacf(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom (t >= 0)."""
    return 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile_two_sided(alpha: float, df: float) -> float:
    """t* with P(|T| > t*) = alpha."""
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > alpha / 2:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_sf(mid, df) > alpha / 2:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def z_quantile_two_sided(alpha: float) -> float:
    return NormalDist().inv_cdf(1.0 - alpha / 2)
