"""``python -m adjoint.fuzz parse|exec N``: run N fuzz inputs of one target."""

from __future__ import annotations

import argparse
import sys

from adjoint.fuzz import TARGETS
from adjoint.fuzz.runner import Options, fuzz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adjoint.fuzz",
        description="Fuzz parse or executables in a worker process; crashes, hangs, non-aj.Error "
                    "exceptions and wrong results are saved as reproducers. Exit status 1 if any.")
    parser.add_argument("target", choices=sorted(TARGETS), help="what to fuzz")
    parser.add_argument("n", type=int, help="how many inputs to run")
    parser.add_argument("--seed", type=int, default=0, help="input k of a run is made from (seed, k) alone")
    parser.add_argument("--start", type=int, default=0, help="index of the first input (to rerun input K: --start K with N 1)")
    parser.add_argument("--out", default="fuzz-findings", help="where findings are saved (default: fuzz-findings/)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds without progress on one input that make a hang")
    parser.add_argument("--memory-limit", type=int, default=4096, metavar="MB",
                        help="address-space limit of the worker, so huge allocations fail instead of swapping (0: none)")
    parser.add_argument("--max-saved", type=int, default=5, help="reproducers saved per kind of finding")
    # Self-tests of the crash catcher: input K aborts, hangs or raises a RuntimeError.
    parser.add_argument("--selftest-crash", type=int, metavar="K", help=argparse.SUPPRESS)
    parser.add_argument("--selftest-hang", type=int, metavar="K", help=argparse.SUPPRESS)
    parser.add_argument("--selftest-raise", type=int, metavar="K", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.n < 0 or args.start < 0 or args.timeout <= 0 or args.memory_limit < 0 or args.max_saved < 0:
        parser.error("N, --start, --memory-limit and --max-saved must be >= 0 and --timeout > 0")
    selftest = {name: k for name, k in (("crash", args.selftest_crash), ("hang", args.selftest_hang),
                                        ("raise", args.selftest_raise)) if k is not None}
    return fuzz(Options(args.target, args.n, seed=args.seed, start=args.start, out=args.out, timeout=args.timeout,
                        memory_mb=args.memory_limit, max_saved=args.max_saved, selftest=selftest))


if __name__ == "__main__":
    sys.exit(main())
