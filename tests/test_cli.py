"""The command line through subprocess: each command against the Python API it
wraps, stdin and -o, and every failure as one line (exit status 1, 2 for
usage) without a traceback unless --debug."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy_format

import adjoint as aj
from adjoint._cli_arrays import CommandError, load_file
from adjoint import cli
from adjoint.cli import SIMPLIFIER

MLP = """@function
def main(x: Tensor((2, 3), "float64"), w: Tensor((3, 4), "float64")) -> Tensor((), "float64"):
    lv: Tensor((2, 4), "float64") = matmul(x, w)
    lv1: Tensor((2, 4), "float64") = tanh(lv)
    gv: Tensor((), "float64") = sum(lv1)
    return gv
"""

TWO_LOSSES = """@function
def main(x: Tensor((3,), "float64"), y: Tensor((3,), "float64")) -> Tuple(Tensor((), "float64"), Tensor((), "float64")):
    lv: Tensor((3,), "float64") = multiply(x, y)
    lv1: Tensor((), "float64") = sum(lv)
    lv2: Tensor((), "float64") = sum(x)
    return (lv1, lv2)
"""

LORA = """@function(num_input=1)
def main(x: Tensor(("n", 1), "float32"), W: Tensor(("m", "n"), "float32"), A: Tensor(("r", "n"), "float32"), B: Tensor(("m", "r"), "float32")) -> Tensor(("m", 1), "float32"):
    lv: Tensor(("m", "n"), "float32") = matmul(B, A)
    lv1: Tensor(("m", "n"), "float32") = add(W, lv)
    gv: Tensor(("m", 1), "float32") = matmul(lv1, x)
    return gv
"""

UNDEFINED_VAR = """@function
def main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):
    return y
"""

WRONG_ANNOTATION = """@function
def main(x: Tensor((3,), "float32")) -> Tensor((3,), "float32"):
    y: Tensor((3,), "float32") = sum(x)
    return y
"""

FILES = {"mlp.aj": MLP, "two_losses.aj": TWO_LOSSES, "lora.aj": LORA, "undefined.aj": UNDEFINED_VAR,
         "annotation.aj": WRONG_ANNOTATION}

RNG = np.random.default_rng(0)
X, W = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    for name, text in FILES.items():
        (d / name).write_text(text)
    np.save(d / "x.npy", X)
    np.save(d / "w.npy", W)
    np.save(d / "w32.npy", W.astype(np.float32))
    np.savez(d / "xw.npz", x=X, w=W)
    np.savez(d / "x_only.npz", x=X)
    (d / "latin1.aj").write_bytes(b"# caf\xe9\n")
    (d / "huge.npy").write_bytes(npy_bytes((10**12,)))
    (d / "short.npy").write_bytes(npy_bytes((17,)))
    with zipfile.ZipFile(d / "huge.npz", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", npy_bytes((10**12,)))
    with zipfile.ZipFile(d / "text.npz", "w") as archive:
        archive.writestr("x.npy", npy_bytes((16,)))
        archive.writestr("w", b"not an array")
    (d / "encrypted.npz").write_bytes(encrypted((d / "xw.npz").read_bytes()))
    return d


def encrypted(archive: bytes) -> bytes:
    """The zip archive with its first entry marked encrypted (general purpose flag bit 0)."""
    data = bytearray(archive)
    central = data.find(b"PK\x01\x02")
    data[6] |= 1
    data[central + 8] |= 1
    return bytes(data)


def npy_bytes(shape: tuple[int, ...]) -> bytes:
    """A .npy of float32 whose header declares ``shape``, followed by 64 bytes of data whatever the shape."""
    out = io.BytesIO()
    npy_format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return out.getvalue() + bytes(64)


def adjoint(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "adjoint", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def assert_one_line_failure(out: subprocess.CompletedProcess, line: str) -> None:
    assert (out.returncode, out.stdout, out.stderr) == (1, "", line + "\n")


def test_version(work):
    out = adjoint(work, "--version")
    assert (out.returncode, out.stdout) == (0, f"adjoint {aj.__version__}\n")


def test_print_from_stdin_and_to_output_file(work):
    out = adjoint(work, "print", "-", stdin=MLP)
    assert (out.returncode, out.stdout) == (0, MLP)
    out = adjoint(work, "print", "lora.aj", "-o", "printed.aj")
    assert (out.returncode, out.stdout) == (0, "")
    assert (work / "printed.aj").read_text() == LORA


def test_output_file_is_written_even_when_the_output_is_empty(work):
    # regression: an empty output left -o alone, so an old file stayed and a new name was not created
    (work / "empty.aj").write_text("")
    (work / "old.aj").write_text(MLP)
    for name in ("old.aj", "new.aj"):
        out = adjoint(work, "print", "empty.aj", "-o", name)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
        assert (work / name).read_text() == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_write_failure_names_the_output(work):
    # regression: a failure to write was blamed on the input, "mlp.aj: no space left on device"
    assert_one_line_failure(adjoint(work, "run", "mlp.aj", "--inputs", "x.npy", "w.npy", "-o", "/dev/full"),
                            "/dev/full: no space left on device")
    assert_one_line_failure(adjoint(work, "print", "mlp.aj", "-o", "/dev/full"), "/dev/full: no space left on device")
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "adjoint", "print", "mlp.aj"], stdout=full, stderr=subprocess.PIPE,
                             text=True, cwd=work, timeout=120)
    assert (out.returncode, out.stderr) == (1, "<stdout>: no space left on device\n")


def long_chain(n: int) -> str:
    body = "".join(f"    lv{i + 1}: Tensor((3,), \"float32\") = tanh(lv{i})\n" for i in range(n))
    return ('@function\ndef main(lv0: Tensor((3,), "float32")) -> Tensor((3,), "float32"):\n'
            f"{body}    return lv{n}\n")


@pytest.mark.parametrize("lines_read", [0, 1], ids=["| true", "| head -1"])
def test_a_reader_that_goes_away_is_exit_status_1_without_a_message(work, lines_read):
    # regression: | head -1 exited 0, as the write of the rest, cut short when head left, went unnoticed
    (work / "long.aj").write_text(long_chain(5000))  # some 300 kB, more than a pipe holds
    proc = subprocess.Popen([sys.executable, "-m", "adjoint", "print", "long.aj"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=work)
    for _ in range(lines_read):
        assert proc.stdout.readline() == b"@function\n"
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert (proc.wait(timeout=120), stderr) == (1, b"")


def test_a_short_write_is_written_on(monkeypatch):
    class Short(io.BytesIO):
        def write(self, data):
            return super().write(bytes(data[:3]))

    out = Short()
    cli.write_all(out, b"0123456789")
    assert out.getvalue() == b"0123456789"


@pytest.mark.parametrize("args, closed, line", [
    (["verify", "-"], 0, "<stdin>: closed"),
    (["run", "mlp.aj", "--inputs", "-", "w.npy"], 0, "<stdin>: closed"),
    (["check", "mlp.aj"], 1, "<stdout>: closed"),
], ids=["verify - <&-", "run --inputs - <&-", "check >&-"])
def test_a_closed_stdin_or_stdout_is_one_line(work, args, closed, line):
    # regression: Python has no sys.stdin (sys.stdout) then: "AttributeError: 'NoneType' object has no attribute 'buffer'"
    out = subprocess.run([sys.executable, "-m", "adjoint", *args], stderr=subprocess.PIPE, text=True, cwd=work,
                         timeout=120, preexec_fn=lambda: os.close(closed))
    assert (out.returncode, out.stderr) == (1, line + "\n")


def adjoint_bytes(cwd: Path, *args: str, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "adjoint", *args], input=stdin, capture_output=True, cwd=cwd,
                          timeout=120, env={**os.environ, **env})


@pytest.mark.parametrize("env", [{}, {"PYTHONIOENCODING": "utf-8"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LC_ALL": "C", "PYTHONUTF8": "0"}], ids=["default", "utf-8", "latin-1", "C locale"])
def test_stdin_is_read_as_a_file_is(work, env):
    for data, line in [(b"\xff", "<stdin>: not UTF-8 text (byte 0)\n"), (b"# caf\xe9\n", "<stdin>: not UTF-8 text (byte 5)\n")]:
        out = adjoint_bytes(work, "print", "-", stdin=data, env=env)
        assert (out.returncode, out.stdout, out.stderr.decode()) == (1, b"", line)
    crlf = ("# caf\u00e9\r\n" + MLP.replace("\n", "\r\n")).encode()
    out = adjoint_bytes(work, "print", "-", stdin=crlf, env=env)
    assert (out.returncode, out.stdout.decode(), out.stderr) == (0, MLP, b"")
    out = adjoint_bytes(work, "check", "mlp.aj", "-", stdin=b"\xff", env=env)
    assert (out.returncode, out.stdout.decode()) == (1, "mlp.aj: ok (1 function, 3 bindings)\n<stdin>: not UTF-8 text (byte 0)\n")


UNICODE = MLP.replace("@function", '@function(doc="caf\u00e9 \u2192 \U0001f600")')


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LC_ALL": "C", "PYTHONUTF8": "0"}], ids=["ascii", "latin-1", "C locale"])
def test_stdout_is_utf_8_whatever_the_encoding_settings(work, env):
    # regression: stdout followed PYTHONIOENCODING, so printing a valid file was a UnicodeEncodeError
    (work / "uni.aj").write_text(UNICODE, encoding="utf-8")
    out = adjoint_bytes(work, "print", "uni.aj", stdin=b"", env=env)
    assert (out.returncode, out.stdout, out.stderr) == (0, UNICODE.encode(), b"")
    # a file name goes out as the bytes it came in as (in the C locale, Python reads them as surrogates)
    (work / "caf\u00e9.aj").write_text(MLP)
    out = adjoint_bytes(work, "check", "caf\u00e9.aj", stdin=b"", env=env)
    assert (out.returncode, out.stdout) == (0, "caf\u00e9.aj: ok (1 function, 3 bindings)\n".encode())
    with open(os.path.join(os.fsencode(work), b"latin1_\xe9.aj"), "w") as f:
        f.write(MLP)
    out = subprocess.run([sys.executable.encode(), b"-m", b"adjoint", b"check", b"latin1_\xe9.aj"], capture_output=True,
                         cwd=work, timeout=120, env={**os.environ, **env})
    assert (out.returncode, out.stdout) == (0, b"latin1_\xe9.aj: ok (1 function, 3 bindings)\n")


@pytest.mark.parametrize("env", [{}, {"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}],
                         ids=["default", "ascii", "C locale"])
def test_error_lines_name_files_as_stdout_does(work, env):
    # regression: stderr followed PYTHONIOENCODING (cafe\xe9 escaped under ascii), wrote b"\xff" as "\udcff",
    # and a newline in a name split the line in two
    def failure(name: bytes) -> tuple[int, bytes, bytes]:
        out = subprocess.run([sys.executable.encode(), b"-m", b"adjoint", b"verify", name], capture_output=True,
                             cwd=work, timeout=120, env={**os.environ, **env})
        return out.returncode, out.stdout, out.stderr

    assert failure(b"missing_\xff.aj") == (1, b"", b"missing_\xff.aj: no such file\n")
    assert failure("missing_caf\u00e9.aj".encode()) == (1, b"", "missing_caf\u00e9.aj: no such file\n".encode())
    assert failure(b"missing\nline\r\x1b.aj") == (1, b"", b"missing\\nline\\r\\x1b.aj: no such file\n")
    (work / "new\nline.aj").write_text(UNDEFINED_VAR)
    assert failure(b"new\nline.aj") == (1, b"", b"new\\nline.aj:3:12: ParseError: undefined var 'y'\n")
    (work / "new\nline.aj").write_text(MLP)
    out = adjoint_bytes(work, "check", "new\nline.aj", "missing\u2028.aj", stdin=b"", env=env)
    assert (out.returncode, out.stdout) == (1, b"new\\nline.aj: ok (1 function, 3 bindings)\nmissing\\u2028.aj: no such file\n")


@pytest.mark.parametrize("env", [{}, {"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}],
                         ids=["default", "ascii", "C locale"])
def test_usage_errors_show_bytes_that_are_not_utf8_as_error_lines_do(work, env):
    # regression: argparse's messages showed b"\xff" as "\udcff", both quoted and as it is
    def usage_error(*args: bytes) -> bytes:
        out = subprocess.run([sys.executable.encode(), b"-m", b"adjoint", *args], capture_output=True,
                             cwd=work, timeout=120, env={**os.environ, **env})
        assert (out.returncode, out.stdout) == (2, b"")
        return out.stderr.splitlines()[-1]

    assert usage_error(b"\xff").startswith(b"adjoint: error: argument COMMAND: invalid choice: '\\xff' (choose from")
    assert usage_error(b"print", b"--bogus\xff", b"x.aj").endswith(b": error: unrecognized arguments: --bogus\xff")
    assert usage_error(b"print", "--caf\u00e9".encode(), b"x.aj").endswith("--caf\u00e9".encode())


def test_output_file_gets_a_file_name_as_the_bytes_it_came_in_as(work):
    # regression: -o encoded strictly, so a name that is not UTF-8 was a UnicodeEncodeError, out.txt left empty
    with open(os.path.join(os.fsencode(work), b"latin1_\xfe.aj"), "w") as f:
        f.write(MLP)
    out = subprocess.run([sys.executable.encode(), b"-m", b"adjoint", b"verify", b"latin1_\xfe.aj", b"-o", b"named.txt"],
                         capture_output=True, cwd=work, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert (work / "named.txt").read_bytes() == b"latin1_\xfe.aj: ok (1 function, 3 bindings)\n"


def test_stdout_without_a_byte_buffer_is_written_as_text(work, monkeypatch, capsys):
    (work / "uni.aj").write_text(UNICODE, encoding="utf-8")
    assert cli.main(["print", str(work / "uni.aj")]) == 0
    assert capsys.readouterr().out == UNICODE
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    assert cli.main(["print", str(work / "uni.aj")]) == 0
    assert text.getvalue() == UNICODE


def test_print_of_a_hex_escape_above_0x7f(work):
    # "\xff" is U+00FF; the raw byte 0xff it used to give made print fail.
    text = MLP.replace("@function", '@function(doc="a\\xff")')
    out = adjoint(work, "print", "-", stdin=text)
    assert (out.returncode, out.stdout) == (0, MLP.replace("@function", '@function(doc="a\u00ff")'))


def test_grad_is_the_gradient_pass(work):
    out = adjoint(work, "grad", "mlp.aj")
    assert out.returncode == 0, out.stderr
    assert out.stdout == aj.transform.Gradient()(aj.parse(MLP)).script()
    out = adjoint(work, "grad", "two_losses.aj", "--func", "main", "--wrt", "x", "--target-index", "1", "--no-simplify")
    assert out.returncode == 0, out.stderr
    expected = aj.transform.Gradient("main", require_grads=["x"], target_index=1, simplify=False)(aj.parse(TWO_LOSSES))
    assert out.stdout == expected.script()


def test_simplify_of_the_raw_adjoint_is_the_simplified_adjoint(work):
    raw = aj.transform.Gradient(simplify=False)(aj.parse(MLP))
    out = adjoint(work, "simplify", "-", stdin=raw.script())
    assert out.returncode == 0, out.stderr
    assert out.stdout == SIMPLIFIER(raw).script()
    aj.assert_structural_equal(aj.parse(out.stdout), aj.transform.Gradient()(aj.parse(MLP)))


def test_lift_is_lift_transform_params(work):
    out = adjoint(work, "lift", "lora.aj")
    assert out.returncode == 0, out.stderr
    assert out.stdout == aj.transform.LiftTransformParams()(aj.parse(LORA)).script()


def flops_block(fn: aj.Function, **options) -> str:
    by_op = aj.analysis.flops_by_op(fn, **options)
    width = max(len("op"), *map(len, by_op))
    rows = [f"  {op:<{width}}  {count}" for op, count in [("op", "FLOPs"), *by_op.items()]]
    return "\n".join([f"{fn.name}: {aj.analysis.estimate_flops(fn, **options)} FLOPs", *rows]) + "\n"


def test_flops_of_every_function_by_op(work):
    lifted = aj.transform.LiftTransformParams()(aj.parse(LORA))
    (work / "lifted.aj").write_text(lifted.script())
    out = adjoint(work, "flops", "lora.aj")
    assert (out.returncode, out.stdout) == (0, flops_block(aj.parse(LORA)["main"]))
    assert out.stdout.startswith("main: 2*m*n*r + 3*m*n FLOPs\n")
    # each function gets the dims its shapes use: main_transform_params has r, main does not
    out = adjoint(work, "flops", "lifted.aj", "--dims", "m=64,n=32,r=4")
    dims = {"m": 64, "n": 32, "r": 4}
    assert out.returncode == 0, out.stderr
    assert out.stdout == "\n".join([flops_block(lifted["main"], dims={"m": 64, "n": 32}),
                                    flops_block(lifted["main_transform_params"], dims=dims)])


def test_flops_of_one_function_compile_time_free(work):
    out = adjoint(work, "flops", "lora.aj", "--func", "main", "--compile-time-free", "--dims", "m=4096,n=4096,r=16")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "main: 33554432 FLOPs"
    assert out.stdout == flops_block(aj.parse(LORA)["main"], compile_time_free=True,
                                     dims={"m": 4096, "n": 4096, "r": 16})


def test_check_reports_one_line_per_file(work):
    out = adjoint(work, "check", "mlp.aj", "undefined.aj", "missing.aj", "annotation.aj", "-", stdin=LORA)
    assert out.returncode == 1 and out.stderr == ""
    assert out.stdout.splitlines() == [
        "mlp.aj: ok (1 function, 3 bindings)",
        "undefined.aj:3:12: ParseError: undefined var 'y'",
        "missing.aj: no such file",
        'annotation.aj:3:8: TypeInferenceError: var \'y\' is annotated Tensor((3,), "float32") '
        'but its value has type Tensor((), "float32")',
        "<stdin>: ok (1 function, 3 bindings)",
    ]
    out = adjoint(work, "check", "mlp.aj", "lora.aj", "-o", "report.txt")
    assert (out.returncode, out.stdout) == (0, "")
    assert (work / "report.txt").read_text() == "mlp.aj: ok (1 function, 3 bindings)\nlora.aj: ok (1 function, 3 bindings)\n"


def test_verify_ok_and_failing(work):
    out = adjoint(work, "verify", "mlp.aj")
    assert (out.returncode, out.stdout) == (0, "mlp.aj: ok (1 function, 3 bindings)\n")
    assert_one_line_failure(adjoint(work, "verify", "undefined.aj"), "undefined.aj:3:12: ParseError: undefined var 'y'")


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as saved:
        return {key: saved[key] for key in saved.files}


def test_run_npy_inputs_in_order_and_by_name(work):
    expected = aj.build(aj.parse(MLP))["main"](X, W)
    out = adjoint(work, "run", "mlp.aj", "--inputs", "x.npy", "w.npy")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"result: shape (), float64\n{np.array2string(expected)}\n"
    out = adjoint(work, "run", "mlp.aj", "--inputs", "w=w.npy", "x.npy", "-o", "by_name.npz")
    assert (out.returncode, out.stdout) == (0, "")
    saved = load_npz(work / "by_name.npz")
    assert list(saved) == ["result"]
    np.testing.assert_array_equal(saved["result"], expected)


@pytest.mark.parametrize("inputs", [["x=x.npy", "w.npy"], ["w.npy", "x=x.npy"], ["x_only.npz", "w.npy"],
                                    ["w.npy", "x_only.npz"], ["x.npy", "w=w.npy"]])
def test_plain_npy_inputs_fill_the_params_left_in_order(work, inputs):
    # regression: plain files filled params from the first, so x=x.npy w.npy said "w.npy: param 'x' is given twice"
    out = adjoint(work, "run", "mlp.aj", "--inputs", *inputs)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"result: shape (), float64\n{np.array2string(aj.build(aj.parse(MLP))['main'](X, W))}\n"


def test_run_npz_inputs_on_the_adjoint_from_stdin(work):
    grad = aj.transform.Gradient()(aj.parse(MLP))
    loss, (gx, gw) = aj.build(grad)["main_adjoint"](X, W)
    out = adjoint(work, "run", "-", "--func", "main_adjoint", "--inputs", "xw.npz", "-o", "grads.npz", stdin=grad.script())
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    saved = load_npz(work / "grads.npz")
    assert list(saved) == ["result_0", "result_1_0", "result_1_1"]
    for got, want in zip(saved.values(), (loss, gx, gw)):
        np.testing.assert_array_equal(got, want)
    out = adjoint(work, "run", "-", "--func", "main_adjoint", "--inputs", "xw.npz", stdin=grad.script())
    assert out.returncode == 0, out.stderr
    assert out.stdout == (f"result_0: shape (), float64\n{np.array2string(loss)}\n"
                          f"result_1_0: shape (2, 3), float64\n{np.array2string(gx)}\n"
                          f"result_1_1: shape (3, 4), float64\n{np.array2string(gw)}\n")


def test_run_inputs_from_stdin_and_from_a_pipe(work):
    # regression: --inputs - was "<stdin>: no such file" and a pipe a NumPy message, "not seekable"
    expected = f"result: shape (), float64\n{np.array2string(aj.build(aj.parse(MLP))['main'](X, W))}\n"
    for inputs, data in [(["-", "w.npy"], "x.npy"), (["-"], "xw.npz"), (["w=w.npy", "x=-"], "x.npy")]:
        out = adjoint_bytes(work, "run", "mlp.aj", "--inputs", *inputs, stdin=(work / data).read_bytes(), env={})
        assert (out.returncode, out.stdout.decode(), out.stderr) == (0, expected, b"")
    out = adjoint_bytes(work, "run", "mlp.aj", "--inputs", "-", stdin=(work / "huge.npz").read_bytes(), env={})
    assert out.returncode == 1 and out.stderr.decode().startswith("<stdin>: cannot load a .npy or .npz array: x.npy: "
                                                                  "its header declares shape (1000000000000,)")
    if not os.path.isdir("/dev/fd"):
        pytest.skip("no /dev/fd")
    for data in ("x.npy", "xw.npz"):  # as a shell's process substitution <(cat x.npy) gives it
        read, write = os.pipe()
        os.write(write, (work / data).read_bytes())
        os.close(write)
        inputs = [f"/dev/fd/{read}"] + (["w.npy"] if data == "x.npy" else [])
        out = subprocess.run([sys.executable, "-m", "adjoint", "run", "mlp.aj", "--inputs", *inputs], pass_fds=[read],
                             capture_output=True, text=True, cwd=work, timeout=120)
        os.close(read)
        assert (out.returncode, out.stdout, out.stderr) == (0, expected, "")


EMPTY_TUPLE = """@function
def main(x: Tensor((2, 3), "float64")) -> Tuple():
    return ()
"""


def test_an_empty_npz_is_an_input_that_gives_no_param(work):
    # regression: the empty .npz run -o writes for an empty tuple was "not a .npy or .npz file"
    (work / "empty_tuple.aj").write_text(EMPTY_TUPLE)
    out = adjoint(work, "run", "empty_tuple.aj", "--inputs", "x.npy", "-o", "nothing.npz")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    assert (work / "nothing.npz").read_bytes().startswith(b"PK\x05\x06") and load_npz(work / "nothing.npz") == {}
    out = adjoint(work, "run", "mlp.aj", "--inputs", "nothing.npz", "x.npy", "w.npy")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"result: shape (), float64\n{np.array2string(aj.build(aj.parse(MLP))['main'](X, W))}\n"


TUPLE_PARAM = MLP + """
@function
def pair(t: Tuple(Tensor((2,), "float64"), Tensor((2,), "float64"))) -> Tensor((2,), "float64"):
    a: Tensor((2,), "float64") = t[0]
    return a
"""


def test_run_builds_only_the_function_it_runs(work):
    # regression: run built every function, so pair, whose tuple param the executor cannot plan, broke main
    (work / "tuple_param.aj").write_text(TUPLE_PARAM)
    out = adjoint(work, "run", "tuple_param.aj", "--inputs", "x.npy", "w.npy")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"result: shape (), float64\n{np.array2string(aj.build(aj.parse(MLP))['main'](X, W))}\n"
    assert_one_line_failure(adjoint(work, "run", "tuple_param.aj", "--func", "pair", "--inputs", "x.npy"),
                            "tuple_param.aj: ExecutionError: function 'pair', param 't': the executor takes tensor "
                            "params only, got Tuple(Tensor((2,), \"float64\"), Tensor((2,), \"float64\"))")


FAILURES = [
    (["print", "missing.aj"], "missing.aj: no such file"),
    (["grad", "."], ".: is a directory"),
    (["print", "latin1.aj"], "latin1.aj: not UTF-8 text (byte 5)"),
    (["grad", "mlp.aj", "--func", "nope"], "mlp.aj: TransformError: Gradient: the module has no function 'nope' (it has: main)"),
    (["flops", "mlp.aj", "--dims", "q=2"], "mlp.aj: --dims names q, which no function's shapes use"),
    (["run", "mlp.aj", "--inputs", "x.npy"], "--inputs: no input for param w"),
    (["run", "mlp.aj", "--inputs", "x.npy", "nothing.npy"], "nothing.npy: no such file"),
    (["run", "mlp.aj", "--inputs", "x.npy", "mlp.aj"], "mlp.aj: not a .npy or .npz file"),
    (["run", "mlp.aj", "--inputs", "xw.npz", "q=w.npy"], "q=w.npy: the function has no param 'q' (params: x, w)"),
    (["run", "mlp.aj", "--inputs", "x.npy", "w.npy", "x.npy"], "x.npy: more inputs than the 2 params (x, w)"),
    (["run", "mlp.aj", "--inputs", "x=x.npy", "w.npy", "x.npy"],
     "x.npy: more plain inputs than params left for them (w): plain files fill, in order, the params no NAME=FILE "
     "or .npz gives"),
    (["run", "mlp.aj", "--inputs", "x.npy", "xw.npz"],
     "x.npy: no param is left for a plain file: NAME=FILE and .npz inputs give every param (x, w)"),
    (["run", "mlp.aj", "--inputs", "x=x.npy", "x=w.npy"], "x=w.npy: param 'x' is given twice"),
    # regression: an .npz of one array "holds several arrays"
    (["run", "mlp.aj", "--inputs", "x=x_only.npz", "w.npy"],
     "x=x_only.npz: NAME=FILE takes a .npy file, and x_only.npz is an .npz: give it without NAME= and its arrays "
     "fill the params they are named after"),
    (["print", "mlp.aj", "-o", "nowhere/mlp.aj"], "nowhere/mlp.aj: no such file or directory"),
    (["run", "mlp.aj", "--inputs", "x.npy", "w.npy", "-o", "nowhere/out.npz"], "nowhere/out.npz: no such file or directory"),
    # regression: a header declaring more than the file holds was a MemoryError blamed on mlp.aj
    (["run", "mlp.aj", "--inputs", "huge.npy", "w.npy"],
     "huge.npy: cannot load a .npy or .npz array: its header declares shape (1000000000000,) of float32 "
     "(4,000,000,000,000 bytes), but 64 bytes follow the header"),
    (["run", "mlp.aj", "--inputs", "huge.npz"],
     "huge.npz: cannot load a .npy or .npz array: x.npy: its header declares shape (1000000000000,) of float32 "
     "(4,000,000,000,000 bytes), but 64 bytes follow the header"),
    (["run", "mlp.aj", "--inputs", "short.npy", "w.npy"],
     "short.npy: cannot load a .npy or .npz array: its header declares shape (17,) of float32 (68 bytes), "
     "but 64 bytes follow the header"),
    # regression: np.load gave the raw bytes of an entry that is not a .npy, and the executor blamed mlp.aj
    (["run", "mlp.aj", "--inputs", "text.npz"], "text.npz: cannot load a .npy or .npz array: entry 'w' is not a .npy array"),
    (["run", "mlp.aj", "--inputs", "encrypted.npz"],
     "encrypted.npz: cannot load a .npy or .npz array: File 'x.npy' is encrypted, password required for extraction"),
    (["run", "mlp.aj", "--inputs", "x.npy", "w32.npy"],
     "mlp.aj: ExecutionError: function 'main', param 'w' (#1): expected dtype float64, got float32"),
]


@pytest.mark.parametrize("args, line", FAILURES, ids=[" ".join(args) for args, _ in FAILURES])
def test_failure_is_one_line(work, args, line):
    assert_one_line_failure(adjoint(work, *args), line)


USAGE_ERRORS = [
    [],
    ["frobnicate", "mlp.aj"],
    ["print", "mlp.aj", "--frob"],
    ["flops", "lora.aj", "--dims", "m4096"],
    ["grad", "mlp.aj", "--target-index", "one"],
    ["grad", "mlp.aj", "--wrt", "x,,w"],
    # regression: check - - read stdin twice and said the second was an empty module, ok
    ["check", "-", "mlp.aj", "-"],
    ["run", "-", "--inputs", "-"],
    ["run", "mlp.aj", "--inputs", "x=-", "w=-"],
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=[" ".join(args) or "nothing" for args in USAGE_ERRORS])
def test_usage_error_exits_2(work, args):
    out = adjoint(work, *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("usage: adjoint") and "Traceback" not in out.stderr
    if args.count("-") + args.count("x=-") + args.count("w=-") > 1:
        assert out.stderr.endswith(": error: - (stdin) is given more than once: stdin can be read only once\n")


DIMS_ERRORS = [
    # regression: isdigit took "²", int() refused it, and argparse said "invalid dims_arg value"
    (["--dims", "m=\u00b2"], "expected SYMBOL=INT[,SYMBOL=INT...], got 'm=\u00b2' in 'm=\u00b2'"),
    # regression: a symbol given twice kept its last value
    (["--dims", "m=1,n=2,m=3"], "symbol m is given twice"),
    (["--dims", "m=1", "--dims", "n=2,m=3"], "symbol m is given twice"),
]


@pytest.mark.parametrize("args, message", DIMS_ERRORS, ids=[" ".join(args) for args, _ in DIMS_ERRORS])
def test_dims_errors_say_what_is_wrong(work, args, message):
    out = adjoint(work, "flops", "lora.aj", *args)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("usage: adjoint flops") and out.stderr.endswith(f"error: argument --dims: {message}\n")


def test_repeated_list_options_add_up(work):
    # regression: a second --dims, --inputs or --wrt silently replaced the first
    one = adjoint(work, "flops", "lora.aj", "--dims", "m=64,n=32,r=4")
    assert one.returncode == 0, one.stderr
    assert adjoint(work, "flops", "lora.aj", "--dims", "m=64", "--dims", "n=32,r=4").stdout == one.stdout
    one = adjoint(work, "run", "mlp.aj", "--inputs", "x.npy", "w.npy")
    assert one.returncode == 0, one.stderr
    assert adjoint(work, "run", "mlp.aj", "--inputs", "x.npy", "--inputs", "w.npy").stdout == one.stdout
    one = adjoint(work, "grad", "mlp.aj", "--wrt", "x,w")
    assert one.returncode == 0, one.stderr
    assert adjoint(work, "grad", "mlp.aj", "--wrt", "x", "--wrt", "w").stdout == one.stdout


HINT = "put FILE before --inputs, whose list takes every argument after it, or -- between them"
MISSING_FILE = [
    # regression: FILE after --inputs went into the inputs, and the error said only that FILE was required
    (["--inputs", "x.npy", "w.npy", "mlp.aj"], f"FILE is missing: --inputs took mlp.aj, which is no .npy or .npz: {HINT}"),
    (["--inputs", "x.npy", "w.npy"], f"the following arguments are required: FILE ({HINT})"),
    ([], "the following arguments are required: FILE"),
]


@pytest.mark.parametrize("args, message", MISSING_FILE, ids=[" ".join(args) or "nothing" for args, _ in MISSING_FILE])
def test_run_without_file_says_where_it_went(work, args, message):
    out = adjoint(work, "run", *args)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == ("usage: adjoint run [-h] [-o FILE] [--func FUNC] [--inputs [INPUT ...]] FILE\n"
                          f"adjoint run: error: {message}\n")


def test_run_file_after_inputs_and_double_dash(work):
    out = adjoint(work, "run", "--inputs", "x.npy", "w.npy", "--", "mlp.aj")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout == f"result: shape (), float64\n{np.array2string(aj.build(aj.parse(MLP))['main'](X, W))}\n"


def test_debug_shows_the_traceback(work):
    out = adjoint(work, "--debug", "print", "missing.aj")
    assert out.returncode == 1 and out.stderr.startswith("Traceback") and "FileNotFoundError" in out.stderr
    out = adjoint(work, "grad", "undefined.aj", "--debug")
    assert out.returncode == 1 and "Traceback" in out.stderr and "adjoint.errors.ParseError" in out.stderr


def test_interrupt_is_one_line(work):
    # SIGINT as a terminal delivers it, even when this suite runs as a background job (which ignores it)
    proc = subprocess.Popen([sys.executable, "-m", "adjoint", "print", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    syscall = Path(f"/proc/{proc.pid}/syscall")
    deadline = time.monotonic() + 60
    while not syscall_reads_stdin(syscall):  # so the interrupt lands in the command, not in start-up
        if time.monotonic() > deadline:
            proc.kill()
            pytest.skip("cannot see the process block on reading stdin")
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    # regression: the exit status was 1; 130 (128 + SIGINT) is what a shell reports for a command Ctrl-C ended
    assert (proc.returncode, stdout, stderr) == (130, "", "<stdin>: interrupted\n")


def syscall_reads_stdin(syscall: Path) -> bool:
    """True when the process is blocked in read(0, ...) (syscall 0 on x86-64, 63 on arm64)."""
    try:
        fields = syscall.read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] in ("0", "63") and fields[1] == "0x0"


def test_memory_for_an_input_that_cannot_be_had_is_blamed_on_the_input(work, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 3.64 TiB for an array with shape (1000000000000,)")

    monkeypatch.setattr(np, "load", no_memory)
    with pytest.raises(CommandError) as e:
        load_file(str(work / "x.npy"))
    assert str(e.value) == (f"{work / 'x.npy'}: cannot load a .npy or .npz array: "
                            "Unable to allocate 3.64 TiB for an array with shape (1000000000000,)")


def test_bench_passes_its_arguments_to_the_bench_suite(work):
    out = adjoint(work, "bench", "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: python -m adjoint.bench")
    out = adjoint(work, "bench", "nosuch")
    assert out.returncode == 2 and "invalid choice: 'nosuch'" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("repeat", ["0", "-3", "two", "1.5"])
def test_bench_repeat_must_be_a_positive_int(work, repeat):
    # regression: --repeat 0 ran the suite, then failed with "StatisticsError: no median for empty data"
    out = adjoint(work, "bench", "gradcheck", f"--repeat={repeat}")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith("usage: python -m adjoint.bench")
    assert out.stderr.endswith(f"error: argument --repeat: expected a positive int, got '{repeat}'\n")


def test_console_script(work):
    script = Path(sys.executable).parent / "adjoint"
    if not script.exists():
        pytest.skip("the adjoint script is not installed next to this interpreter")
    out = subprocess.run([str(script), "check", "mlp.aj"], capture_output=True, text=True, cwd=work, timeout=120)
    assert (out.returncode, out.stdout) == (0, "mlp.aj: ok (1 function, 3 bindings)\n")
