"""The whole conformance run against the official document: every served operation, every
case of schemathesis' coverage phase and N drawn cases (default 50), every check.

    python -m scripts.conformance [N] [--coverage K]

prints the cases, the failures by check, the refusals of requests the document allows
(and how many of those docs/api.md justifies), and the first failure of each operation
and check. tests/reliability/test_fuzz_official.py runs a bounded share of the same
cases in CI. Minutes on a small machine (about 9,000 cases at N=50).
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.official.conformance import report, survey


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.conformance")
    parser.add_argument("examples", nargs="?", type=int, default=50,
                        help="drawn cases an operation (both modes)")
    parser.add_argument("--coverage", type=int, default=None,
                        help="at most this many coverage cases an operation (default: all)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = survey(args.examples, args.coverage)
    print(report(found, args.examples, args.coverage))
    print(f"\n{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
