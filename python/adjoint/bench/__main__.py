"""``python -m adjoint.bench <suite>``: run one benchmark suite."""

from __future__ import annotations

import argparse
import importlib
import sys

SUITES = {"ir": "adjoint.bench.ir", "exec": "adjoint.bench.exec", "passes": "adjoint.bench.passes",
          "patterns": "adjoint.bench.patterns", "compile": "adjoint.bench.compile",
          "gradcheck": "adjoint.bench.gradcheck", "train": "adjoint.bench.train",
          "instructions": "adjoint.bench.instructions"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adjoint.bench")
    parser.add_argument("suite", choices=sorted(SUITES), help="which benchmark to run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median is reported)")
    args = parser.parse_args(argv)
    importlib.import_module(SUITES[args.suite]).run(repeat=args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
