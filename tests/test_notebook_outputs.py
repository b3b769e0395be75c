"""The outputs saved in notebooks/*.ipynb are what their code prints today.

nbmake runs each notebook and fails on an error, but never reads the saved
outputs, so a change to printed IR (a pass that simplifies more, a fresh
name numbered differently) left readers of the saved notebooks looking at a
program the code no longer gives. Here each notebook is run (nbclient, as
nbmake runs it) and every code cell's text output is compared with the one
saved, except in cells tagged "output-varies" (timings).

After a change that alters what a notebook prints, save fresh outputs with
``python tests/test_notebook_outputs.py`` and review the diff.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
VARIES = "output-varies"


def text_of(outputs) -> str:
    """What a cell printed and displayed, as text (HTML and images left out)."""
    parts = []
    for out in outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.data.get("text/plain", ""))
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
    return "".join(parts)


def executed(path: Path):
    """The notebook at path, run in a fresh kernel from its folder."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_saved_outputs_are_what_the_notebook_prints(path):
    saved = nbformat.read(path, as_version=4)
    fresh = executed(path)
    for k, (old, new) in enumerate(zip(saved.cells, fresh.cells)):
        if old.cell_type != "code" or VARIES in old.metadata.get("tags", []):
            continue
        assert text_of(new.outputs) == text_of(old.outputs), (
            f"{path.name}, code cell {k}: the saved output is not what the cell prints now; "
            f"save fresh outputs with `python tests/test_notebook_outputs.py`")


def save_fresh_outputs(paths) -> None:
    for path in paths:
        fresh = executed(path)
        saved = nbformat.read(path, as_version=4)
        for old, new in zip(saved.cells, fresh.cells):
            if old.cell_type == "code":
                old.outputs, old.execution_count = new.outputs, new.execution_count
        nbformat.write(saved, path)
        print(f"saved fresh outputs of {path}")


if __name__ == "__main__":
    save_fresh_outputs([Path(p) for p in sys.argv[1:]] or NOTEBOOKS)
