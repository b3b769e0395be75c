"""The fuzz scripts (python -m adjoint.fuzz parse|exec|passes N), run for a few
hundred inputs in subprocesses: the summary and the exit status, and the
crash catcher: an input that aborts the worker, one that hangs and one that
raises are saved as findings and the run goes on. Also: inputs are made from
(seed, k) alone, and the exec oracle notices wrong results and accepted
invalid calls."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from adjoint.fuzz import exec as fuzz_exec
from adjoint.fuzz import parse as fuzz_parse
from adjoint.fuzz import passes as fuzz_passes
from adjoint.fuzz.runner import Finding, Options, fuzz

RUNS = {
    "parse": ["parse", "300", "--seed", "1"],
    "exec": ["exec", "300", "--seed", "1"],
    "passes": ["passes", "300", "--seed", "1"],
    # the crash catcher: input 7 aborts the worker, input 12 raises, input 20 hangs
    "selftest": ["exec", "40", "--seed", "1", "--selftest-crash", "7", "--selftest-raise", "12",
                 "--selftest-hang", "20", "--timeout", "1"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[int, str, Path]]:
    """Every run above, started at once: name -> (exit status, stdout, findings dir)."""
    procs = {}
    for name, argv in RUNS.items():
        out = tmp_path_factory.mktemp(name) / "findings"
        procs[name] = (subprocess.Popen([sys.executable, "-m", "adjoint.fuzz", *argv, "--out", str(out)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out)
    results = {}
    for name, (proc, out) in procs.items():
        stdout, _ = proc.communicate(timeout=120)
        results[name] = (proc.returncode, stdout, out)
    return results


def summary(stdout: str) -> tuple[int, dict[str, int]]:
    """The input count of the summary's first line and its outcome table."""
    total = int(re.search(r"^adjoint\.fuzz \w+: (\d+) inputs \(seed", stdout, re.M).group(1))
    table = stdout[stdout.index("outcome  count"):stdout.index("reached:")]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(\S[^\n]*?)\s+(\d+)$", table, re.M)}
    return total, counts


@pytest.mark.parametrize("name", ["parse", "exec", "passes"])
def test_a_clean_run_sums_up_and_exits_0(runs, name):
    status, stdout, out = runs[name]
    assert status == 0, stdout
    total, counts = summary(stdout)
    assert total == 300 == sum(counts.values())
    assert counts["finding"] == 0 and counts["ok"] > 0
    assert any(label.startswith("aj.") and n > 0 for label, n in counts.items())
    assert re.search(r"in [\d.]+ s, \d+ inputs/s, 1 worker start\(s\)", stdout)
    assert "findings: none" in stdout and not out.exists()


def test_crashing_raising_and_hanging_inputs_are_saved_and_the_run_goes_on(runs):
    status, stdout, out = runs["selftest"]
    assert status == 1
    total, counts = summary(stdout)
    assert total == 40 == sum(counts.values()) and counts["finding"] == 3
    assert "3 worker start(s)" in stdout  # after the crash and after the hang, a new worker went on
    assert "findings: 3 (3 kind(s))" in stdout
    files = {kind: out / f"exec-s1-i{k}-{kind}.py" for k, kind in ((7, "crash"), (12, "exception"), (20, "hang"))}
    for path in files.values():
        assert f"      {path}" in stdout
    crash = files["crash"].read_text()
    assert "killed by SIGABRT" in crash and "--selftest-crash 7" in crash
    assert "rerun: python -m adjoint.fuzz exec 1 --seed 1 --start 7" in crash
    exception = files["exception"].read_text()
    assert "Traceback (most recent call last)" in exception and "RuntimeError: --selftest-raise 12" in exception
    assert "no progress for 1 s on this input" in files["hang"].read_text()


def test_an_exec_reproducer_recreates_the_call_by_itself(runs):
    _, _, out = runs["selftest"]
    ran = subprocess.run([sys.executable, str(out / "exec-s1-i7-crash.py")], capture_output=True, text=True,
                         timeout=60)
    # input 7 is conv2d given a float and -2**63 for its arrays: the call raises ExecutionError
    assert ran.returncode == 1 and "adjoint.errors.ExecutionError: function 'main'" in ran.stderr, ran.stderr


def test_a_parse_finding_is_saved_as_its_exact_text(tmp_path):
    fuzzer = fuzz_parse.Fuzzer(1)
    inp = dict(fuzzer.make(0), text="@function\r\ndef main(\x00\ud800")
    aj_file, note = fuzzer.save(inp, str(tmp_path / "p"), "adjoint fuzz finding: crash\n")
    with open(aj_file, encoding="utf-8", errors="surrogatepass", newline="") as f:
        assert f.read() == inp["text"]
    assert note.endswith(".txt") and repr(inp["text"]) in Path(note).read_text()


@pytest.mark.parametrize("target", [fuzz_parse, fuzz_exec, fuzz_passes])
def test_input_k_is_made_from_seed_and_k_alone(target):
    a, b = target.Fuzzer(3), target.Fuzzer(3)
    assert [a.make(k) for k in (0, 1, 50)] == [b.make(k) for k in (50, 1, 0)][::-1]
    assert a.make(7) != target.Fuzzer(4).make(7)


def first_input(fuzzer, program: str, valid: bool, plain: bool = False) -> dict:
    """The first input of a program whose call is valid (or invalid), passed
    by position; `plain`: made of random data alone (writable C arrays)."""
    for k in range(5000):
        inp = fuzzer.make(k)
        if inp["program"] == program and not inp["call_kwargs"] and \
                (not plain or all(code.startswith("rand(") for code in inp["args"])):
            _, args, kwargs = fuzzer.values(inp)
            judged = fuzz_exec.judge(fuzzer.programs[program], args, kwargs)
            if judged.valid == valid and not judged.huge:
                return inp
    raise AssertionError("no such input")


def test_exec_oracle_notices_a_wrong_result():
    fuzzer = fuzz_exec.Fuzzer(1)
    fn, ret_type = fuzzer.function("add_broadcast")
    fuzzer.compiled["add_broadcast"] = (lambda x, y: np.asarray(fn(x, y)) + np.float32(0.5), ret_type)
    with pytest.raises(Finding) as info:
        fuzzer.run(first_input(fuzzer, "add_broadcast", valid=True), lambda stage: None)
    assert info.value.kind in ("wrong-result", "layout-mismatch")


def test_exec_oracle_notices_an_accepted_invalid_call():
    fuzzer = fuzz_exec.Fuzzer(1)
    _, ret_type = fuzzer.function("add_broadcast")
    fuzzer.compiled["add_broadcast"] = (lambda *args, **kwargs: np.zeros((3, 4), np.float32), ret_type)
    with pytest.raises(Finding) as info:
        fuzzer.run(first_input(fuzzer, "add_broadcast", valid=False), lambda stage: None)
    assert info.value.kind == "accepted-invalid"


def test_exec_oracle_notices_a_modified_input():
    fuzzer = fuzz_exec.Fuzzer(1)
    fn, ret_type = fuzzer.function("unary_f64")

    def overwrite(x):
        out = fn(x)
        if isinstance(x, np.ndarray) and x.flags.writeable:
            x[...] = 0
        return out

    fuzzer.compiled["unary_f64"] = (overwrite, ret_type)
    with pytest.raises(Finding) as info:
        fuzzer.run(first_input(fuzzer, "unary_f64", valid=True, plain=True), lambda stage: None)
    assert info.value.kind == "input-modified"


BAD_OPTIONS = [
    (["--timeout", "0"], "argument --timeout: expected a finite number > 0, got '0'"),
    # regression: nan (and inf) passed the > 0 check, and a hang was never detected
    (["--timeout", "nan"], "argument --timeout: expected a finite number > 0, got 'nan'"),
    (["--timeout", "inf"], "argument --timeout: expected a finite number > 0, got 'inf'"),
    (["--memory-limit", "-1"], "argument --memory-limit: expected an int >= 0, got '-1'"),
    (["--max-saved", "-2"], "argument --max-saved: expected an int >= 0, got '-2'"),
    (["--start", "x"], "argument --start: expected an int >= 0, got 'x'"),
]


@pytest.mark.parametrize("options, message", BAD_OPTIONS, ids=[" ".join(o) for o, _ in BAD_OPTIONS])
def test_the_cli_refuses_bad_options(capsys, options, message):
    from adjoint.fuzz.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["exec", "10", *options])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("usage: python -m adjoint.fuzz") and err.endswith(f"error: {message}\n")
    with pytest.raises(SystemExit) as info:
        main(["exec", "-1"])
    assert info.value.code == 2 and capsys.readouterr().err.endswith("error: argument N: expected an int >= 0, got '-1'\n")


def test_an_unusable_out_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    # regression: the first finding's save raised FileExistsError or PermissionError, a traceback mid-run
    from adjoint.fuzz.__main__ import main

    (tmp_path / "file").write_text("")
    (tmp_path / "ro").mkdir(mode=0o555)
    access = os.access  # as a user who is not root sees a directory of mode 555 (root writes anywhere)
    monkeypatch.setattr(os, "access", lambda path, mode: access(path, mode) and os.path.basename(path) != "ro")
    cases = [(tmp_path / "file", f"{tmp_path / 'file'} is not a directory"),
             (tmp_path / "file" / "sub", f"cannot make {tmp_path / 'file' / 'sub'}: {tmp_path / 'file'} is not a directory"),
             (tmp_path / "ro", f"{tmp_path / 'ro'} is not writable"),
             (tmp_path / "ro" / "new" / "er", f"cannot make {tmp_path / 'ro' / 'new' / 'er'}: {tmp_path / 'ro'} is not writable")]
    for out, message in cases:
        with pytest.raises(SystemExit) as info:
            main(["exec", "1", "--out", str(out)])
        assert info.value.code == 2 and capsys.readouterr().err.endswith(f"error: argument --out: {message}\n")


def test_a_finding_that_cannot_be_saved_is_one_line_and_the_run_goes_on(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    status = fuzz(Options("exec", 2, seed=1, out=str(tmp_path / "file"), selftest={"crash": 0}))
    out, err = capsys.readouterr()
    assert status == 1 and "Traceback" not in err
    assert f"adjoint.fuzz: cannot save the finding of input 0 under {tmp_path / 'file'}: [Errno 17] File exists" in err
    assert "2 inputs" in out and "findings: 1 (1 kind(s))" in out


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``, from /proc."""
    kids = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            kids.append(int(entry))
    return kids


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie waiting for a parent to reap it counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def wait_until(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def hanging_run(tmp_path):
    """A fuzz run (in a session of its own, SIGINT handled as at a terminal) whose worker hangs on input 0:
    (the parent, its worker's pid, its temporary directory)."""
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("needs /proc")
    proc = subprocess.Popen([sys.executable, "-m", "adjoint.fuzz", "exec", "10", "--selftest-hang", "0", "--timeout", "600",
                             "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)}, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: len(children(proc.pid)) == 1, "the worker")
        worker = children(proc.pid)[0]
        page = next(tmp_path.glob("adjoint-fuzz-exec-*/page"))
        wait_until(lambda: np.frombuffer(page.read_bytes()[:8], np.int64)[0] == 0, "the worker to reach input 0")
        yield proc, worker, page.parent
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_the_worker_dies_with_a_killed_parent(hanging_run):
    # regression: kill -9 of the parent left its worker running, reparented to init
    proc, worker, _ = hanging_run
    proc.kill()
    proc.wait()
    wait_until(lambda: gone(worker), "the worker to die", seconds=20)


@pytest.mark.parametrize("signum, status, why", [(signal.SIGINT, 130, "interrupted"),
                                                 (signal.SIGTERM, 143, "stopped by SIGTERM")], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_run_is_one_line_and_cleans_up(hanging_run, signum, status, why):
    # regression: Ctrl-C was a KeyboardInterrupt traceback, and SIGTERM left the worker and the temporary directory
    proc, worker, tmp = hanging_run
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)  # as Ctrl-C at a terminal: to the parent and its worker
    else:
        proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stdout) == (status, "")
    assert stderr == f"adjoint.fuzz exec: {why} after 0 of 10 inputs; 0 finding(s)\n"
    assert gone(worker) and not tmp.exists()


def test_the_help_shows_the_defaults(capsys):
    # regression: --help did not say the defaults of --timeout, --memory-limit and --max-saved
    from adjoint.fuzz.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert info.value.code == 0
    for default in ("(default 0)", "(default 0;", "(default fuzz-findings/)", "hang (default 10)", "(default 4096; 0: none)",
                    "finding (default 5)"):
        assert default in help_text, default
