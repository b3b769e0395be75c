"""The fuzz runner shared by the targets: the parent loop that starts a worker
process and watches it, the worker loop, the saving of findings and the
summary.

A target is a module with ``LABELS`` (its outcomes besides the ``aj.Error``
classes and ``finding``), ``REACHED`` (stages counted along the way) and a
class ``Fuzzer(seed)`` with ``make(k)`` (input k, plain data made from
(seed, k) alone), ``run(inp, reach)`` (runs it, returns a label, raises
:class:`Finding` for a wrong result), ``describe(inp)`` and
``save(inp, stem, header)`` (writes a reproducer, returns its paths) and
``group(inp)`` (what crashes are grouped by, "" for none).

The worker writes the index of the input it is about to run, and its outcome
counts, into a page of shared memory (no system call per input); the parent
polls that page. When the worker dies by a signal, or stays on one input
longer than the timeout, the parent saves that input, starts a new worker at
the next input and goes on.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import mmap
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adjoint import errors
from adjoint.fuzz import TARGETS

ERROR_LABELS = ["aj." + name for name in errors.__all__]
FINDING = "finding"
POLL_SECONDS = 0.02
STARTUP_SECONDS = 120.0
PROGRESS_SECONDS = 15.0


class Finding(Exception):
    """A wrong outcome that raised nothing: a wrong result, an invalid input
    accepted, a valid one refused, a print that does not parse back."""

    def __init__(self, kind: str, detail: str, signature: str | None = None):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.signature = signature or kind


def error_label(e: BaseException) -> str:
    """The outcome label of an aj.Error: its class, as ``aj.ParseError``."""
    label = "aj." + type(e).__name__
    return label if label in ERROR_LABELS else "aj.Error"


def normalize(message: str) -> str:
    """A message with its numbers and quoted names blurred, to group findings."""
    message = re.sub(r"'[^']*'", "'_'", message.splitlines()[0] if message else "")
    return re.sub(r"\d+", "N", message)[:160]


def labels_of(target: Any) -> list[str]:
    return list(target.LABELS) + ERROR_LABELS + [FINDING]


class Page:
    """The shared page: [0] the input about to run (-1 before the worker is
    ready), [1] the inputs done, then one count per label and per stage."""

    def __init__(self, path: str, labels: list[str], reached: list[str], create: bool = False):
        self.labels, self.reached = labels, reached
        size = 8 * (2 + len(labels) + len(reached))
        if create:
            with open(path, "wb") as f:
                f.write(b"\0" * size)
        with open(path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), size)
        self.slots = np.frombuffer(self._map, dtype=np.int64)
        self._label_at = {name: 2 + i for i, name in enumerate(labels)}
        self._stage_at = {name: 2 + len(labels) + i for i, name in enumerate(reached)}

    def count(self, label: str) -> None:
        self.slots[self._label_at[label]] += 1

    def reach(self, stage: str) -> None:
        self.slots[self._stage_at[stage]] += 1

    def counts(self) -> dict[str, int]:
        return {name: int(self.slots[i]) for name, i in self._label_at.items()}

    def stages(self) -> dict[str, int]:
        return {name: int(self.slots[i]) for name, i in self._stage_at.items()}


# ---------------------------------------------------------------- the worker


def worker_main() -> None:
    """Entry point of the worker process: runs inputs start..end-1 of the
    target and reports through the page and the report file."""
    config = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the worker
    _die_with_parent(config["parent"])
    import faulthandler

    faulthandler.enable()  # a crash prints the Python stack to the worker's log
    faulthandler.register(signal.SIGUSR1)  # the parent asks for the stack of a hang
    if config["memory_mb"]:
        limit = config["memory_mb"] << 20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    target = importlib.import_module(TARGETS[config["target"]])
    fuzzer = target.Fuzzer(config["seed"])
    page = Page(config["page"], labels_of(target), list(target.REACHED))
    selftest = config.get("selftest", {})
    with open(config["report"], "a", encoding="utf-8") as report:
        for k in range(config["start"], config["end"]):
            page.slots[0] = k
            if selftest.get("crash") == k:
                os.abort()
            if selftest.get("hang") == k:
                time.sleep(3600)
            try:
                if selftest.get("raise") == k:
                    raise RuntimeError(f"--selftest-raise {k}")
                label = fuzzer.run(fuzzer.make(k), page.reach)
            except KeyboardInterrupt:
                raise
            except Finding as f:
                _report(report, k, f.kind, f.detail, f.signature)
                label = FINDING
            except errors.Error as e:  # a target lets one through: still an aj.Error
                label = error_label(e)
            except BaseException as e:  # noqa: BLE001 (anything else is a finding)
                _report(report, k, "exception", traceback.format_exc(), f"{type(e).__name__}: {normalize(str(e))}")
                label = FINDING
            page.count(label)
            page.slots[1] = k + 1
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: its crashes are not the inputs'


#: prctl's option to have a signal sent when the parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Makes this worker end when its parent does, however the parent ends
    (kill -9 too, which runs none of its clean-up), so that no worker goes on
    alone: on Linux by prctl(PR_SET_PDEATHSIG, SIGKILL), which works even
    while the worker is stuck in native code; elsewhere by a thread that
    polls the parent's pid."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _report(report, k: int, kind: str, detail: str, signature: str) -> None:
    report.write(json.dumps({"index": k, "kind": kind, "detail": detail, "signature": f"{kind}: {signature}"}) + "\n")
    report.flush()


# ---------------------------------------------------------------- the parent


@dataclass
class Options:
    target: str
    n: int
    seed: int = 0
    start: int = 0
    out: str = "fuzz-findings"
    timeout: float = 10.0
    memory_mb: int = 4096
    max_saved: int = 5
    selftest: dict[str, int] = field(default_factory=dict)


@dataclass
class Run:
    opts: Options
    target: Any
    tmp: str
    page: Page
    report_pos: int = 0
    workers: int = 0
    proc: subprocess.Popen | None = None  # the current worker
    findings: list[dict] = field(default_factory=list)
    signatures: dict[str, int] = field(default_factory=dict)
    _fuzzer: Any = None

    def fuzzer(self) -> Any:
        if self._fuzzer is None:  # made only when a finding is saved
            self._fuzzer = self.target.Fuzzer(self.opts.seed)
        return self._fuzzer

    def record(self, index: int, kind: str, detail: str, signature: str) -> None:
        """Counts a finding and saves its reproducer (the first few of each signature)."""
        count = self.signatures.get(signature, 0) + 1
        self.signatures[signature] = count
        entry = {"index": index, "kind": kind, "signature": signature, "files": []}
        if count <= self.opts.max_saved:
            try:
                entry["files"] = self.save(index, kind, detail)
            except OSError as e:  # --out was checked at the start; it may have gone since, or the disk filled up
                print(f"adjoint.fuzz: cannot save the finding of input {index} under {self.opts.out}: {e}",
                      file=sys.stderr, flush=True)
        self.findings.append(entry)

    def save(self, index: int, kind: str, detail: str) -> list[str]:
        """Saves the reproducer of a finding under --out; returns its paths."""
        o = self.opts
        rerun = f"rerun: python -m adjoint.fuzz {o.target} 1 --seed {o.seed} --start {index}"
        os.makedirs(o.out, exist_ok=True)
        stem = os.path.join(o.out, f"{o.target}-s{o.seed}-i{index}-{kind}")
        try:
            inp = self.fuzzer().make(index)
            header = (f"adjoint fuzz finding: {kind}\ntarget {o.target}, seed {o.seed}, input {index}: "
                      f"{self.fuzzer().describe(inp)}\n{rerun}\n\n{detail.rstrip()}\n")
            return self.fuzzer().save(inp, stem, header)
        except Exception:  # noqa: BLE001 (the input cannot be made again here: save what is known)
            with open(stem + ".txt", "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(f"adjoint fuzz finding: {kind}\ntarget {o.target}, seed {o.seed}, input {index}\n{rerun}\n\n"
                        f"{detail.rstrip()}\n\nmaking the input again failed:\n{traceback.format_exc()}")
            return [stem + ".txt"]

    def read_reports(self) -> None:
        with open(os.path.join(self.tmp, "report.jsonl"), encoding="utf-8") as f:
            f.seek(self.report_pos)
            while True:
                line = f.readline()
                if not line.endswith("\n"):
                    break
                self.report_pos = f.tell()
                r = json.loads(line)
                self.record(r["index"], r["kind"], r["detail"], r["signature"])


def _start_worker(run: Run, start: int, end: int) -> tuple[subprocess.Popen, str]:
    o = run.opts
    run.page.slots[0] = -1
    run.workers += 1
    log = os.path.join(run.tmp, f"worker-{run.workers}.log")
    env, memory_mb = _memory_limit_env(o.memory_mb)
    config = {"target": o.target, "seed": o.seed, "start": start, "end": end, "page": os.path.join(run.tmp, "page"),
              "report": os.path.join(run.tmp, "report.jsonl"), "memory_mb": memory_mb, "selftest": o.selftest,
              "parent": os.getpid()}
    # The worker starts with SIGINT ignored (an ignored signal stays ignored across exec, and Python then
    # installs no handler): Ctrl-C, which a terminal sends to both, is the parent's to handle.
    sigint = signal.getsignal(signal.SIGINT) if _in_main_thread() else None  # None: not one Python can set back
    if sigint is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with open(log, "wb") as out:
            run.proc = subprocess.Popen(
                [sys.executable, "-c", "from adjoint.fuzz.runner import worker_main; worker_main()", json.dumps(config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    finally:
        if sigint is not None:
            signal.signal(signal.SIGINT, sigint)
    return run.proc, log


def _in_main_thread() -> bool:
    """Whether this is the main thread, the only one that may set signal handlers."""
    return threading.current_thread() is threading.main_thread()


def _memory_limit_env(memory_mb: int) -> tuple[dict[str, str], int]:
    """The worker's environment and the address-space limit it sets itself.
    Under AddressSanitizer (.ci/sanitize preloads its runtime), which reserves
    terabytes of shadow memory, an address-space limit breaks the runtime:
    ASan's own largest-allocation option takes its place."""
    env = dict(os.environ)
    if not memory_mb or "libasan" not in env.get("LD_PRELOAD", ""):
        return env, memory_mb
    options = [env.get("ASAN_OPTIONS", ""), f"max_allocation_size_mb={memory_mb}", "allocator_may_return_null=1"]
    env["ASAN_OPTIONS"] = ":".join(opt for opt in options if opt)
    return env, 0


def _tail(path: str, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    text = data[-limit:].decode("utf-8", "replace")
    # an editable install's rebuild check writes to the worker's stdout; drop it
    return "\n".join(line for line in text.splitlines() if not re.match(
        r"(Running cmake --build|\[\d+/\d+\] Re-checking|ninja: no work|-- Install configuration|-- Up-to-date)", line))


def _how_it_died(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


class Stopped(BaseException):
    """Raised in the parent by SIGTERM or SIGHUP (as KeyboardInterrupt is by
    SIGINT), so that the run ends as after Ctrl-C: the worker killed, the
    temporary directory removed, one line on stderr."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped(signum)


def _catch_stop_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP raise Stopped; returns the handlers they had. Only
    in the main thread, the only one that may set a handler."""
    if not _in_main_thread():
        return {}
    signums = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    return {signum: signal.signal(signum, _raise_stopped) for signum in signums}


def fuzz(opts: Options) -> int:
    """Runs inputs opts.start .. opts.start + opts.n - 1, prints the summary;
    returns the exit status (1 if anything was found, 2 if no worker could
    start, 128 + the signal after Ctrl-C, SIGTERM or SIGHUP, which end the
    run with one line on stderr). However the run ends, its worker is killed
    and its temporary directory removed; a worker whose parent is killed
    otherwise (SIGKILL) dies with it (see _die_with_parent)."""
    target = importlib.import_module(TARGETS[opts.target])
    previous = _catch_stop_signals()
    tmp = None
    run = None
    try:
        tmp = tempfile.mkdtemp(prefix=f"adjoint-fuzz-{opts.target}-")
        open(os.path.join(tmp, "report.jsonl"), "w").close()
        run = Run(opts, target, tmp, Page(os.path.join(tmp, "page"), labels_of(target), list(target.REACHED), create=True))
        return _run_inputs(run)
    except KeyboardInterrupt:
        print(_stopped_line(opts, run, "interrupted"), file=sys.stderr, flush=True)
        return 128 + signal.SIGINT
    except Stopped as e:
        print(_stopped_line(opts, run, f"stopped by {signal.Signals(e.signum).name}"), file=sys.stderr, flush=True)
        return 128 + e.signum
    finally:
        if run is not None and run.proc is not None and run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _stopped_line(opts: Options, run: Run | None, why: str) -> str:
    """One line for a run that ended early: where, and what it found."""
    if run is None:
        return f"adjoint.fuzz {opts.target}: {why} before the first input"
    done = sum(run.page.counts().values())
    saved = sum(len(e["files"]) for e in run.findings)
    return (f"adjoint.fuzz {opts.target}: {why} after {done} of {opts.n} inputs; "
            f"{len(run.findings)} finding(s)" + (f", {saved} file(s) saved under {opts.out}/" if saved else ""))


def _run_inputs(run: Run) -> int:
    """The parent loop of fuzz: starts workers, watches them, records what they find."""
    opts = run.opts
    end = opts.start + opts.n
    start = opts.start
    t0 = time.perf_counter()
    next_progress = t0 + PROGRESS_SECONDS
    while start < end:
        proc, log = _start_worker(run, start, end)
        last_index, last_change = -1, time.monotonic()
        while True:
            rc = proc.poll()
            run.read_reports()
            index = int(run.page.slots[0])
            if rc is not None:
                done = int(run.page.slots[1])
                if rc == 0 and done >= end:
                    start = end
                    break
                if index < 0:
                    print(f"adjoint.fuzz: the worker could not start ({_how_it_died(rc)}):\n{_tail(log)}", file=sys.stderr)
                    return 2
                after = " after it returned" if done > index else ""
                detail = f"the worker was {_how_it_died(rc)} on this input{after}\n--- worker log:\n{_tail(log)}"
                _crash_finding(run, index, "crash", detail, _how_it_died(rc))
                start = index + 1
                break
            now = time.monotonic()
            if index != last_index:
                last_index, last_change = index, now
            elif now - last_change > (STARTUP_SECONDS if index < 0 else opts.timeout):
                if index >= 0:
                    proc.send_signal(signal.SIGUSR1)  # faulthandler: the Python stack, into the log
                    time.sleep(0.3)
                proc.kill()
                proc.wait()
                if index < 0:
                    print(f"adjoint.fuzz: the worker did not start in {STARTUP_SECONDS:.0f} s:\n{_tail(log)}", file=sys.stderr)
                    return 2
                detail = f"no progress for {opts.timeout:g} s on this input\n--- worker log:\n{_tail(log)}"
                _crash_finding(run, index, "hang", detail, f"timeout {opts.timeout:g} s")
                start = index + 1
                break
            if time.perf_counter() > next_progress:
                next_progress += PROGRESS_SECONDS
                done = int(run.page.slots[1]) - opts.start
                print(f"adjoint.fuzz {opts.target}: {done}/{opts.n} inputs, {done / (time.perf_counter() - t0):.0f}/s, "
                      f"{len(run.findings)} finding(s)", file=sys.stderr, flush=True)
            time.sleep(POLL_SECONDS)
    run.read_reports()
    elapsed = time.perf_counter() - t0
    _summary(run, elapsed)
    return 1 if run.findings else 0


def _crash_finding(run: Run, index: int, kind: str, detail: str, signature: str) -> None:
    run.page.count(FINDING)
    if index in run.opts.selftest.values():
        detail = f"(a self-test: --selftest-{kind if kind == 'hang' else 'crash'} {index})\n{detail}"
    group = run.fuzzer().group(run.fuzzer().make(index))
    run.record(index, kind, detail, f"{kind}: {signature}" + (f" ({group})" if group else ""))


def _summary(run: Run, elapsed: float) -> None:
    from adjoint.bench import print_table

    o = run.opts
    counts = run.page.counts()
    total = sum(counts.values())
    print(f"adjoint.fuzz {o.target}: {total} inputs (seed {o.seed}, inputs {o.start}..{o.start + o.n - 1}) "
          f"in {elapsed:.1f} s, {total / elapsed:.0f} inputs/s, {run.workers} worker start(s)")
    print_table(["outcome", "count"], [[name, n] for name, n in counts.items() if n or name in ("ok", FINDING)])
    stages = run.page.stages()
    print("reached: " + ", ".join(f"{name} {n}" for name, n in stages.items()))
    if not run.findings:
        print("findings: none")
        return
    print(f"findings: {len(run.findings)} ({len(run.signatures)} kind(s)), saved under {o.out}/")
    for sig, n in run.signatures.items():
        files = [f for e in run.findings if e["signature"] == sig for f in e["files"]]
        print(f"  {n} x {sig}")
        for path in files:
            print(f"      {path}")
