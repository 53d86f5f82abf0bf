"""Workload models (numpy only): when connections arrive and what each session does."""

from sim.workload.arrivals import (
    BLOCK_S,
    ArrivalProcess,
    Bursty,
    Delayed,
    Diurnal,
    Periodic,
    Poisson,
    Replay,
    chunks,
)
from sim.workload.distributions import DistKind, Distribution
from sim.workload.sessions import SessionBatch, SessionModel
from sim.workload.traces import read_arrivals_csv

__all__ = [
    "BLOCK_S",
    "ArrivalProcess",
    "Bursty",
    "Delayed",
    "DistKind",
    "Distribution",
    "Diurnal",
    "Periodic",
    "Poisson",
    "Replay",
    "SessionBatch",
    "SessionModel",
    "chunks",
    "read_arrivals_csv",
]
