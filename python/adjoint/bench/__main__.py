"""``python -m adjoint.bench <suite>``: run one benchmark suite."""

from __future__ import annotations

import argparse
import importlib
import sys

SUITES = {"ir": "adjoint.bench.ir", "exec": "adjoint.bench.exec", "passes": "adjoint.bench.passes",
          "patterns": "adjoint.bench.patterns", "compile": "adjoint.bench.compile",
          "gradcheck": "adjoint.bench.gradcheck", "train": "adjoint.bench.train",
          "instructions": "adjoint.bench.instructions"}


def positive_int(text: str) -> int:
    """An int of at least 1; anything else is a usage error."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adjoint.bench")
    parser.add_argument("suite", choices=sorted(SUITES), help="which benchmark to run")
    parser.add_argument("--repeat", type=positive_int, default=3, metavar="N",
                        help="runs per measurement, at least 1 (median is reported)")
    args = parser.parse_args(argv)
    importlib.import_module(SUITES[args.suite]).run(repeat=args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
