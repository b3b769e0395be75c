"""The installed package: OpenBLAS is linked and works, the CLI demo runs,
and it runs on what a plain ``pip install .`` installs."""

import subprocess
import sys
import textwrap

import numpy as np

import adjoint as aj
from adjoint import examples


def test_blas_is_linked_from_the_wheel():
    info = aj.blas_info()
    assert info["provider"] in ("scipy-openblas32", "system")
    assert "OpenBLAS" in info["config"] or info["provider"] == "system"
    assert info["num_threads"] >= 1


def test_one_matmul_through_openblas():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 3))
    np.testing.assert_allclose(aj._core.blas_smoke_matmul(a, b), a @ b, rtol=1e-12)


def test_extension_is_imported_from_site_packages_not_the_tree():
    assert "site-packages" in aj._core.__file__ or "dist-packages" in aj._core.__file__


def test_demo_command_succeeds():
    out = subprocess.run([sys.executable, "-m", "adjoint", "demo"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "verify: ok" in out.stdout and "structurally equal" in out.stdout


# Runs the demo with imports refused for every module whose distribution a
# plain install would not bring: those outside the closure of adjoint's own
# requirements without extras (markers evaluated as for this interpreter).
_DEMO_ON_BASE_REQUIREMENTS = textwrap.dedent("""
    import importlib.abc, importlib.metadata as md, runpy, sys
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def base_closure(name):
        seen, todo = set(), [name]
        while todo:
            dist = canonicalize_name(todo.pop())
            if dist in seen:
                continue
            seen.add(dist)
            for text in md.requires(dist) or []:
                req = Requirement(text)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    todo.append(req.name)
        return seen

    allowed = base_closure("adjoint")
    owners = md.packages_distributions()
    refused = {top for top, dists in owners.items() if not any(canonicalize_name(d) in allowed for d in dists)}

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.partition(".")[0] in refused:
                raise ImportError(f"{name} comes only with an extra of adjoint (not in a plain pip install .)")
            return None

    sys.meta_path.insert(0, Refuse())
    sys.argv = ["adjoint", "demo"]
    runpy.run_module("adjoint", run_name="__main__")
""")


def test_demo_runs_on_what_a_plain_install_brings():
    # CI builds the package once, with the test extras; this stands for the
    # README's plain `pip install . && python -m adjoint demo`.
    out = subprocess.run([sys.executable, "-c", _DEMO_ON_BASE_REQUIREMENTS], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "verify: ok" in out.stdout


def test_cli_print_and_verify(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text(examples.TRANSPOSED_MATMUL)
    out = subprocess.run([sys.executable, "-m", "adjoint", "print", str(f)], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == examples.TRANSPOSED_MATMUL
    f.write_text("@function\ndef main(x: Tensor((3,), \"float32\")) -> Tensor((3,), \"float32\"):\n    return y\n")
    out = subprocess.run([sys.executable, "-m", "adjoint", "verify", str(f)], capture_output=True, text=True)
    assert (out.returncode, out.stderr) == (1, f"{f}:3:12: ParseError: undefined var 'y'\n")
