"""What compute costs: a price per CU-hour and an allowance of CU-hours included per project
and month (a plan's compute terms), and the bill they make.

The named presets are the real service's public plans (docs/model.md, Money, gives their
date and source). The bill of a project over a run is

    max(0, its CU-hours - included CU-hours per month x months simulated) x price,

with a month of 730 hours (8,760 / 12), so a week's run is given 168/730 of a month's
allowance; a fleet's bill is the sum of its projects' bills. The allowance is the
project's, not pooled across projects (the real plans include it per project).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOURS_PER_MONTH = 730.0


@dataclass(frozen=True)
class Pricing:
    """A plan's compute terms: the price of a CU-hour beyond the allowance, and the CU-hours
    included per project and month."""

    per_cu_hour: float
    included_cu_hours: float = 0.0  # per project and month

    def included_over(self, hours: float) -> float:
        """The allowance of one project over `hours` of simulated time."""
        return self.included_cu_hours * hours / HOURS_PER_MONTH

    def bills(self, cu_hours: np.ndarray, hours: float) -> np.ndarray:
        """Each project's bill, from its CU-hours over `hours` of simulated time."""
        over = np.maximum(0.0, np.asarray(cu_hours, dtype=np.float64) - self.included_over(hours))
        return over * self.per_cu_hour


#: The real service's public plans, compute terms only (storage, transfer and branches are
#: not simulated). Free includes 100 CU-hours per project and month and bills nothing
#: beyond (the service suspends the compute instead; the simulator does not, and shows
#: the CU-hours over the allowance); Launch and Scale bill every CU-hour; the Agent plan
#: bills compute at Launch's rate.
PRESETS: dict[str, Pricing] = {
    "free": Pricing(per_cu_hour=0.0, included_cu_hours=100.0),
    "launch": Pricing(per_cu_hour=0.106),
    "scale": Pricing(per_cu_hour=0.222),
    "agent": Pricing(per_cu_hour=0.106),
}
#: when the presets were read from the service's plans page, and where
PRESETS_AS_OF = "2026-11-12"
PRESETS_SOURCE = "neon.com/docs/introduction/plans (Plan overview, Compute)"
