"""The command line: ``python -m adjoint demo | print FILE | verify FILE``."""

from __future__ import annotations

import argparse
import sys

import adjoint as aj
from adjoint import examples


def demo() -> int:
    """Parses, prints and verifies an example module, then builds the same
    function from Python and checks the two are structurally equal."""
    mod = aj.parse(examples.TRANSPOSED_MATMUL)
    print("# parsed and printed (canonical text):")
    print(mod, end="")
    aj.analysis.verify(mod)
    print("# verify: ok")
    assert mod.script() == examples.TRANSPOSED_MATMUL, "printing the parsed example changed its text"
    print("# round trip: print(parse(text)) == text")

    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), "float32")
    y = bb.param("y", (3, 3), "float32")
    built = bb.finish(aj.op.sum(x.T @ y.T))
    aj.assert_structural_equal(mod, built)
    print("# built from Python: structurally equal to the parsed text")
    print("# BLAS:", aj.blas_info()["config"])
    return 0


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adjoint", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="parse, print and verify an example module")
    p_print = sub.add_parser("print", help="parse FILE and print its canonical text")
    p_print.add_argument("file")
    p_verify = sub.add_parser("verify", help="parse and verify FILE")
    p_verify.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return demo()
        mod = aj.parse(_read(args.file))
        if args.command == "print":
            print(mod, end="")
        else:
            aj.analysis.verify(mod)
            print(f"{args.file}: ok ({len(mod)} function(s))")
        return 0
    except aj.Error as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
