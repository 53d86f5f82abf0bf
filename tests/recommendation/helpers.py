"""Small scenario documents whose answer the closed forms give."""

from __future__ import annotations

from typing import Any


def poisson_fleet(per_hour: float, mean_s: float, *, count: int = 10, duration: str = "1d",
                  timeout: int = 3600, cu: float = 0.25, pooler: bool = False, seed: int = 3,
                  name: str = "steady") -> dict[str, Any]:
    """`count` identical projects, one fixed-size compute each, Poisson arrivals, exponential
    sessions; starts take no time, so exp(-lam (T + E[D])) is exact."""
    return {
        "name": "theory-case", "seed": seed, "duration": duration,
        "record_connections": "off",
        "engine": {"cold_start": {"dist": "fixed", "mean_s": 0},
                   "detach_after": None, "archive_after": None},
        "projects": [{
            "name": name, "count": count,
            "branches": [{"name": "main", "computes": [{
                "type": "read_write", "size": {"cu": cu},
                "suspend_timeout_seconds": timeout, "pooler_enabled": pooler,
                "workload": {"arrivals": {"kind": "poisson", "per_hour": per_hour},
                             "session": {"dist": "exponential", "mean_s": mean_s}},
            }]}],
        }],
    }
