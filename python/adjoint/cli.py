"""The ``adjoint`` command line (also ``python -m adjoint``): print, verify,
check, differentiate, simplify, lift, count FLOPs of and run modules written
as adjoint text, and run the benchmarks.

Every command reads a file or ``-`` (stdin, once) and writes to stdout or
``-o FILE``, as UTF-8 bytes, file names as the bytes they came in as, their
control characters escaped. A failure is one line on stderr,
``file:line:col: Kind: message`` (``file: message`` when there is no place
in the text; a failure to write names the output), with exit status 1; a
usage error is argparse's usage message with exit status 2; Ctrl-C is one
line with exit status 130; a reader of stdout that goes away ends the
command quietly with exit status 1. ``--debug`` shows the traceback instead.
docs/cli.md says it all at length.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from typing import BinaryIO, Callable

import adjoint as aj
from adjoint import examples
from adjoint._cli_arrays import (ARRAY_MAGICS, STDIN, CommandError, display_name, format_results, load_inputs,
                                 save_results, split_spec, stdin_bytes)

#: How a failure to write stdout names it.
STDOUT = "<stdout>"


def read_text(path: str) -> str:
    """The text of ``path`` (stdin for ``-``), read alike from either: bytes
    decoded as UTF-8 with universal newlines, as ``open(path, encoding="utf-8")``
    reads a file. A missing or unreadable file, or bytes that are not UTF-8, are
    a CommandError."""
    if path == STDIN:
        return decode_text(stdin_bytes(), path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CommandError(path, read_failure(e)) from e
    return decode_text(data, path)


def decode_text(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CommandError(path, f"not UTF-8 text (byte {e.start})") from e
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_failure(e: OSError) -> str:
    return "no such file" if isinstance(e, FileNotFoundError) else os_message(e)


def os_message(e: OSError) -> str:
    return (e.strerror or str(e)).lower()


def read_module(path: str) -> aj.Module:
    return aj.parse(read_text(path))


def write_text(text: str, output: str | None) -> None:
    """``text`` as UTF-8 to ``output``, or to stdout for None or ``-``; in
    either, a file name that came in as bytes that are not UTF-8 (as
    surrogates) goes out as those bytes."""
    if output is None or output == STDIN:
        write_stdout(text)
        return
    try:
        with open(output, "wb") as f:
            write_all(f, encode(text))
    except OSError as e:
        raise CommandError(output, os_message(e)) from e


def encode(text: str) -> bytes:
    """``text`` as UTF-8, with the surrogates Python reads undecodable bytes
    of a file name as (surrogateescape) turned back into those bytes."""
    return text.encode("utf-8", "surrogateescape")


def write_stdout(text: str) -> None:
    """``text`` to stdout as UTF-8 bytes, whatever the locale or
    PYTHONIOENCODING say (a file name that came in as bytes that are not
    UTF-8 goes out as those bytes); as text when stdout has no byte buffer
    (a replacement such as io.StringIO, which takes str). A failure to
    write, or a closed stdout (the shell's ``>&-``: Python then has no
    sys.stdout), is a CommandError naming ``<stdout>``."""
    if sys.stdout is None:
        raise CommandError(STDOUT, "closed")
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(text)
            return
        sys.stdout.flush()
        write_all(buffer, encode(text))
        buffer.flush()
    except BrokenPipeError:
        raise  # the reader is gone: guarded's own case
    except OSError as e:
        raise CommandError(STDOUT, os_message(e)) from e


def write_all(stream: BinaryIO, data: bytes) -> None:
    """All of ``data`` to ``stream``. A write may take only part of it (a
    BufferedWriter writing a large block to a pipe whose reader goes away
    returns the count the pipe took): the next write then raises what stopped
    the first, BrokenPipeError for a pipe."""
    view = memoryview(data)
    while view:
        n = stream.write(view)
        if not n:
            raise OSError(errno.EIO, "wrote nothing")
        view = view[n:]


def write_stderr(line: str) -> None:
    """``line`` and a newline to stderr as UTF-8 bytes, as write_stdout
    writes (a file name that came in as bytes goes out as those bytes,
    whatever PYTHONIOENCODING says); nothing when stderr is closed or cannot
    be written, as there is nowhere left to say so."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(line + "\n")
            stream.flush()
            return
        stream.flush()
        write_all(buffer, encode(line + "\n"))
        buffer.flush()
    except (OSError, ValueError):
        pass


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary(mod: aj.Module) -> str:
    """``N functions, M bindings``."""
    bindings = sum(len(mod[name].bindings) for name in mod)
    return f"{plural(len(mod), 'function')}, {plural(bindings, 'binding')}"


def error_line(e: BaseException, source: str) -> str:
    """One line for an exception met while working on ``source``."""
    if isinstance(e, CommandError):
        return f"{display_name(e.where)}: {one_line(e.message)}"
    if isinstance(e, aj.Error):
        return f"{located(e, source)}: {type(e).__name__}: {one_line(without_location(e))}"
    if isinstance(e, OSError):
        name = e.filename if isinstance(e.filename, (str, bytes)) and e.filename else source
        return f"{display_name(os.fsdecode(name))}: {os_message(e)}"
    if isinstance(e, KeyboardInterrupt):
        return f"{display_name(source)}: interrupted"
    return f"{display_name(source)}: {type(e).__name__}: {one_line(str(e))}"


def located(e: aj.Error, source: str) -> str:
    if e.line is None:
        return display_name(source)
    return f"{display_name(source)}:{e.line}:{e.column}"


def without_location(e: aj.Error) -> str:
    """The message without the ``line:col:`` prefix and the quoted source line
    and caret under it that the core adds to an error found in text."""
    text = str(e)
    if e.line is None:
        return text
    text = text.split("\n", 1)[0]
    prefix = f"{e.line}:{e.column}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.strip().splitlines() if line.strip())


# --- commands: each takes the parsed arguments and returns the text to write
# (None when it wrote its output itself, as run -o does) ---


def cmd_demo(args: argparse.Namespace) -> str:
    """Parses, prints and verifies an example module, then builds the same
    function from Python and checks the two are structurally equal."""
    mod = aj.parse(examples.TRANSPOSED_MATMUL)
    lines = ["# parsed and printed (canonical text):", mod.script().rstrip("\n")]
    aj.analysis.verify(mod)
    lines.append("# verify: ok")
    if mod.script() != examples.TRANSPOSED_MATMUL:
        raise aj.Error("demo: printing the parsed example changed its text")
    lines.append("# round trip: print(parse(text)) == text")

    bb = aj.FunctionBuilder("main")
    x = bb.param("x", (3, 3), "float32")
    y = bb.param("y", (3, 3), "float32")
    aj.assert_structural_equal(mod, bb.finish(aj.op.sum(x.T @ y.T)))
    lines.append("# built from Python: structurally equal to the parsed text")
    lines.append(f"# BLAS: {aj.blas_info()['config']}")
    return "\n".join(lines) + "\n"


def cmd_print(args: argparse.Namespace) -> str:
    return read_module(args.file).script()


def cmd_verify(args: argparse.Namespace) -> str:
    mod = read_module(args.file)
    aj.analysis.verify(mod)
    return f"{display_name(args.file)}: ok ({summary(mod)})\n"


def cmd_check(args: argparse.Namespace) -> str:
    """One line per file; exit status 1 (through ``args.failed``) if any fails."""
    lines = []
    for path in args.files:
        try:
            mod = read_module(path)
            aj.analysis.verify(mod)
            lines.append(f"{display_name(path)}: ok ({summary(mod)})")
        except (aj.Error, CommandError, OSError) as e:
            if args.debug:
                raise
            lines.append(error_line(e, path))
            args.failed = True
    return "\n".join(lines) + "\n"


def cmd_grad(args: argparse.Namespace) -> str:
    grad = aj.transform.Gradient(args.func, require_grads=args.wrt, target_index=args.target_index,
                                 simplify=not args.no_simplify)
    return grad(read_module(args.file)).script()


#: What ``simplify`` runs: the clean-up Gradient applies to an adjoint.
SIMPLIFIER = aj.transform.Sequential([aj.transform.SimplifyGradient(), aj.transform.EliminateCommonSubexpr(),
                                      aj.transform.DeadCodeElimination()])


def cmd_simplify(args: argparse.Namespace) -> str:
    return SIMPLIFIER(read_module(args.file)).script()


def cmd_lift(args: argparse.Namespace) -> str:
    return aj.transform.LiftTransformParams()(read_module(args.file)).script()


def cmd_flops(args: argparse.Namespace) -> str:
    """Per function: the total, then a table of FLOPs by op."""
    mod = read_module(args.file)
    names = [args.func] if args.func is not None else list(mod)
    dims_of = {name: function_dims(mod[name], args.dims, whole=args.func is not None) for name in names}
    unused = set(args.dims) - set().union(*(d.keys() for d in dims_of.values()))
    if unused:
        raise CommandError(args.file, f"--dims names {', '.join(sorted(unused))}, which no function's shapes use")
    blocks = [flops_table(mod[name], args.compile_time_free, dims_of[name]) for name in names]
    return "\n".join(blocks)


def function_dims(fn: aj.Function, dims: dict[str, int], whole: bool) -> dict[str, int]:
    """``dims`` restricted to the symbols of ``fn``'s shapes (all of it when ``whole``:
    estimate_flops then names a symbol the function does not use)."""
    if whole:
        return dims
    used = function_symbols(fn)
    return {symbol: value for symbol, value in dims.items() if symbol in used}


def function_symbols(fn: aj.Function) -> set[str]:
    types = [p.type for p in fn.params] + [b.var.type for b in fn.bindings]
    symbols: set[str] = set()
    while types:
        t = types.pop()
        if t.is_tuple:
            types.extend(t.fields)
        else:
            for d in t.shape:
                symbols.update(aj.Dim(d).symbols)
    return symbols


def flops_table(fn: aj.Function, compile_time_free: bool, dims: dict[str, int]) -> str:
    total = aj.analysis.estimate_flops(fn, compile_time_free=compile_time_free, dims=dims)
    by_op = aj.analysis.flops_by_op(fn, compile_time_free=compile_time_free, dims=dims)
    rows = [("op", "FLOPs")] + [(op, str(count)) for op, count in by_op.items()]
    width = max(len(op) for op, _ in rows)
    lines = [f"{fn.name}: {total} FLOPs"] + [f"  {op:<{width}}  {count}" for op, count in rows]
    return "\n".join(lines) + "\n"


def cmd_run(args: argparse.Namespace) -> str | None:
    mod = read_module(args.file)
    fn = mod[args.func]
    inputs = load_inputs(args.inputs, [p.name_hint for p in fn.params])
    # only the function run: another one the executor cannot plan (a tuple param) is no concern of this run
    result = aj.build(aj.Module({args.func: fn}))[args.func](*inputs)
    if args.output is not None and args.output != STDIN:
        save_results(result, args.output)
        return None
    return format_results(result)


# --- the parser ---


def dims_arg(text: str) -> list[tuple[str, int]]:
    """``n=4096,m=1024`` -> [("n", 4096), ("m", 1024)]; anything else (an INT
    of other than the digits 0-9 too) is a usage error."""
    out = []
    for item in text.split(","):
        symbol, eq, value = item.partition("=")
        symbol, value = symbol.strip(), value.strip()
        if not eq or not symbol.isidentifier() or not DIGITS.fullmatch(value):
            raise argparse.ArgumentTypeError(f"expected SYMBOL=INT[,SYMBOL=INT...], got {item!r} in {text!r}")
        out.append((symbol, int(value)))
    return out


#: An INT of --dims: str.isdigit also takes digits int() refuses, as "²".
DIGITS = re.compile("[0-9]+")


class DimsAction(argparse.Action):
    """Merges the symbols of each --dims into one dict; a symbol given twice,
    in one --dims or in two, is a usage error."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        dims = dict(getattr(namespace, self.dest) or {})
        for symbol, value in values:  # type: ignore[attr-defined]
            if symbol in dims:
                raise argparse.ArgumentError(self, f"symbol {symbol} is given twice")
            dims[symbol] = value
        setattr(namespace, self.dest, dims)


def names_arg(text: str) -> list[str]:
    """``a,b`` -> ["a", "b"]."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME[,NAME...], got {text!r}")
    return names


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], str | None], str]] = {
    "demo": (cmd_demo, "parse, print and verify an example module"),
    "print": (cmd_print, "parse FILE and print its canonical text"),
    "verify": (cmd_verify, "parse and verify FILE"),
    "check": (cmd_check, "parse and verify each FILE, one line each"),
    "grad": (cmd_grad, "add <func>_adjoint (aj.transform.Gradient) and print the module"),
    "simplify": (cmd_simplify, "SimplifyGradient, EliminateCommonSubexpr and DeadCodeElimination"),
    "lift": (cmd_lift, "LiftTransformParams: move compile-time work into <func>_transform_params"),
    "flops": (cmd_flops, "estimated FLOPs of each function, by op"),
    "run": (cmd_run, "build one function of FILE and run it on .npy/.npz inputs"),
}


DESCRIPTION = "Work on modules written as adjoint text: print, verify, differentiate, simplify, lift, count FLOPs, run."
EPILOG = ("Every command reads FILE or - (stdin) and writes to stdout or -o FILE. A failure is one line, "
          "file:line:col: Kind: message, with exit status 1 (2 for a usage error, 130 after Ctrl-C); "
          "--debug shows the traceback.")


class Parser(argparse.ArgumentParser):
    """argparse's parser, its messages written as every other line is
    (write_stderr: an argument that came in as bytes that are not UTF-8
    goes out as those bytes), and an argument it quotes (``invalid choice:
    '...'``) showing such a byte as ``\\xff``, not as the surrogate Python
    reads it as (``\\udcff``). Its subparsers are of this class too."""

    def _print_message(self, message: str, file: object = None) -> None:
        if file is not None and file is not sys.stderr:
            super()._print_message(message, file)  # --help and --version, to stdout
        elif message:
            write_stderr(message.rstrip("\n"))

    def error(self, message: str) -> None:
        super().error(re.sub(r"\\udc([89a-f][0-9a-f])", r"\\x\1", message))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="adjoint", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"adjoint {aj.__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    common = Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {name: sub.add_parser(name, parents=[common], help=text, description=text)
                for name, (_, text) in COMMANDS.items()}
    for p in commands.values():
        p.set_defaults(command_parser=p)  # for usage errors found after parsing
    sub.add_parser("bench", add_help=False, help="run a benchmark suite: adjoint bench SUITE [--repeat N]")
    files = {name: commands[name].add_argument("file", metavar="FILE", help="adjoint text, or - for stdin")
             for name in ("print", "verify", "grad", "simplify", "lift", "flops", "run")}
    commands["check"].add_argument("files", metavar="FILE", nargs="+", help="adjoint text, or - for stdin")
    add_grad_options(commands["grad"])
    add_flops_options(commands["flops"])
    add_run_options(commands["run"])
    required_after_parsing(commands["run"], files["run"])
    return parser


def required_after_parsing(p: argparse.ArgumentParser, file: argparse.Action) -> None:
    """Makes run's FILE optional to argparse, the usage still showing it
    required, so that main, which sees the --inputs that took it, can say
    what went wrong (missing_run_file)."""
    p.usage = p.format_usage().removeprefix("usage: ").rstrip("\n")
    file.nargs, file.required = "?", False


def missing_run_file(inputs: list[str]) -> str:
    """The usage error of run without FILE: --inputs takes every argument
    after it, and so took FILE when it came last; said outright when the
    last input is a file that is no array (adjoint text, likely)."""
    hint = "put FILE before --inputs, whose list takes every argument after it, or -- between them"
    if inputs and is_other_file(split_spec(inputs[-1])[1]):
        return f"FILE is missing: --inputs took {display_name(inputs[-1])}, which is no .npy or .npz: {hint}"
    return "the following arguments are required: FILE" + (f" ({hint})" if inputs else "")


def is_other_file(path: str) -> bool:
    """Whether ``path`` is a file that does not begin as a .npy or .npz does."""
    try:
        with open(path, "rb") as f:
            return not f.read(6).startswith(ARRAY_MAGICS)
    except OSError:
        return False


def add_grad_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--func", default="main", help="the function to differentiate (default main)")
    p.add_argument("--wrt", type=names_arg, action="extend", metavar="A,B",
                   help="params or vars to differentiate by (default: float params; more than one --wrt adds up)")
    p.add_argument("--target-index", type=int, default=0, metavar="N", help="the field of a tuple result to differentiate")
    p.add_argument("--no-simplify", action="store_true", help="keep the raw reverse-mode adjoint")


def add_flops_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--func", help="only this function (default: every function)")
    p.add_argument("--compile-time-free", action="store_true", help="count work computable at compile time as free")
    p.add_argument("--dims", type=dims_arg, action=DimsAction, default={}, metavar="N=4096,...",
                   help="substitute symbol values (more than one --dims adds up)")


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--func", default="main", help="the function to run (default main)")
    p.add_argument("--inputs", nargs="*", action="extend", default=[], metavar="INPUT",
                   help="X.npy (params in order), NAME=X.npy, or an .npz of arrays named after params; - for stdin "
                        "(more than one --inputs adds up)")


def stdin_uses(args: argparse.Namespace) -> int:
    """How many of the command's inputs are ``-``: FILE (each FILE of check)
    and, for run, the --inputs."""
    paths = list(getattr(args, "files", [])) + [getattr(args, "file", None)]
    paths += [split_spec(spec)[1] for spec in getattr(args, "inputs", [])]
    return paths.count(STDIN)


def run_bench(argv: list[str]) -> int:
    from adjoint.bench.__main__ import main as bench_main

    return bench_main(argv)


def bench_split(argv: list[str]) -> tuple[bool, list[str]] | None:
    """(debug, the arguments after ``bench``) when the command is ``bench``, else None."""
    debug = False
    for i, arg in enumerate(argv):
        if arg == "--debug":
            debug = True
        elif arg == "bench":
            return debug, argv[i + 1:]
        else:
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    bench = bench_split(argv)
    if bench is not None:
        return guarded(lambda: run_bench(bench[1]), debug=bench[0], source="bench")
    args = build_parser().parse_args(argv)
    if args.command == "run" and args.file is None:
        args.command_parser.error(missing_run_file(args.inputs))
    if stdin_uses(args) > 1:
        args.command_parser.error("- (stdin) is given more than once: stdin can be read only once")
    args.failed = False
    source = args.files[0] if args.command == "check" else getattr(args, "file", args.command)

    def command() -> int:
        text = COMMANDS[args.command][0](args)
        if text is not None:  # even "": -o FILE is created or emptied whatever the output
            write_text(text, args.output)
        return 1 if args.failed else 0

    return guarded(command, debug=args.debug, source=source)


#: The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a command SIGINT ended.
INTERRUPTED = 130


def guarded(command: Callable[[], int], debug: bool, source: str) -> int:
    """Runs ``command``: a failure is one line on stderr and exit status 1,
    Ctrl-C one line and INTERRUPTED (re-raised with ``debug``)."""
    try:
        return command()
    except BrokenPipeError:
        # The reader of stdout is gone (print big.aj | head -1): no message, as the reader is what
        # would show it, and status 1, as the output was not all written. Stdout now goes nowhere,
        # so the interpreter's flush of it at exit does not fail again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):  # not a file: io.StringIO, or None
            pass
        return 1
    except (Exception, KeyboardInterrupt) as e:
        if debug:
            raise
        write_stderr(error_line(e, source))
        return INTERRUPTED if isinstance(e, KeyboardInterrupt) else 1
