"""Print the table of every closed-form check at the end of the run."""

from __future__ import annotations

from tests.validation.harness import ALPHA, HEADER, REGISTRY_SIZE, ROWS


def pytest_terminal_summary(terminalreporter):
    if not ROWS:
        return
    tr = terminalreporter
    tr.section("closed-form checks")
    tr.write_line(f"{len(ROWS)} of {REGISTRY_SIZE} grid points; CI level 1 - {ALPHA:.3g} each "
                  f"(family-wise false alarm < 0.001); dev/CI = (observed - theory) / half-width")
    tr.write_line(HEADER)
    for row in ROWS:
        tr.write_line(row.line())
    tr.write_line("largest |dev/CI| per check:")
    worst: dict[str, object] = {}
    for row in ROWS:
        if row.check not in worst or abs(row.deviation) > abs(worst[row.check].deviation):
            worst[row.check] = row
    for check, row in worst.items():
        tr.write_line(f"  {check:<22} {row.deviation:+.2f}  at {row.point}")
