"""``python -m adjoint.fuzz parse|exec|passes|patterns N``: run N fuzz inputs of one target."""

from __future__ import annotations

import argparse
import math
import os
import sys

from adjoint.fuzz import TARGETS
from adjoint.fuzz.runner import Options, fuzz


def count_arg(text: str) -> int:
    """An int >= 0 (N, --start, --memory-limit, --max-saved)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {text!r}")
    return value


def seconds_arg(text: str) -> float:
    """A finite number > 0 (--timeout): nan would never time out, inf neither."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def out_problem(out: str) -> str | None:
    """Why findings could not be saved under ``out``, checked before the run
    (the directory is made only when the first finding is saved): it is not
    a directory, or it or the directory it would be made in cannot be
    written. None when it looks usable."""
    if os.path.exists(out):
        if not os.path.isdir(out):
            return f"{out} is not a directory"
        return None if os.access(out, os.W_OK | os.X_OK) else f"{out} is not writable"
    parent = os.path.dirname(os.path.abspath(out))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return f"cannot make {out}: {parent} is not a directory"
    return None if os.access(parent, os.W_OK | os.X_OK) else f"cannot make {out}: {parent} is not writable"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adjoint.fuzz",
        description="Fuzz parse, executables, passes or the pattern language in a worker process; crashes, hangs, non-aj.Error "
                    "exceptions and wrong results are saved as reproducers. Exit status 1 if any.")
    parser.add_argument("target", choices=sorted(TARGETS), help="what to fuzz")
    parser.add_argument("n", type=count_arg, metavar="N", help="how many inputs to run")
    parser.add_argument("--seed", type=int, default=0, help="input k of a run is made from (seed, k) alone (default 0)")
    parser.add_argument("--start", type=count_arg, default=0, metavar="K",
                        help="index of the first input (default 0; to rerun input K: --start K with N 1)")
    parser.add_argument("--out", default="fuzz-findings", metavar="DIR",
                        help="where findings are saved (default fuzz-findings/)")
    parser.add_argument("--timeout", type=seconds_arg, default=10.0, metavar="S",
                        help="seconds without progress on one input that make a hang (default 10)")
    parser.add_argument("--memory-limit", type=count_arg, default=4096, metavar="MB",
                        help="address-space limit of the worker, so huge allocations fail instead of swapping "
                             "(default 4096; 0: none)")
    parser.add_argument("--max-saved", type=count_arg, default=5, metavar="N",
                        help="reproducers saved per kind of finding (default 5)")
    # Self-tests of the crash catcher: input K aborts, hangs or raises a RuntimeError.
    parser.add_argument("--selftest-crash", type=int, metavar="K", help=argparse.SUPPRESS)
    parser.add_argument("--selftest-hang", type=int, metavar="K", help=argparse.SUPPRESS)
    parser.add_argument("--selftest-raise", type=int, metavar="K", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    problem = out_problem(args.out)
    if problem:
        parser.error(f"argument --out: {problem}")
    selftest = {name: k for name, k in (("crash", args.selftest_crash), ("hang", args.selftest_hang),
                                        ("raise", args.selftest_raise)) if k is not None}
    return fuzz(Options(args.target, args.n, seed=args.seed, start=args.start, out=args.out, timeout=args.timeout,
                        memory_mb=args.memory_limit, max_saved=args.max_saved, selftest=selftest))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before the run (fuzz handles Ctrl-C during it)
        print("adjoint.fuzz: interrupted", file=sys.stderr)
        sys.exit(130)
