"""Runs every ```python block of the Markdown pages under docs/ as a test
(Sybil): the blocks of one page share a namespace, in page order. A page's
blocks that need torch sit between `<!-- skip: start if(not HAS_TORCH, ...) -->`
and `<!-- skip: end -->`, so they skip cleanly without it. Each page runs in
a fresh temporary directory, so files its examples save do not land in the tree."""

import importlib.util

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

import adjoint as aj


def _setup(namespace: dict) -> None:
    namespace["HAS_TORCH"] = importlib.util.find_spec("torch") is not None


def _teardown(namespace: dict) -> None:
    """A page whose examples leave a FunctionBuilder active (unfinished
    outside a with block) fails: later tests in the process would build into it."""
    left = aj.builder._deactivate_all()
    if left:
        raise AssertionError(f"the page's examples left active: {', '.join(left)}")


@pytest.fixture
def in_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(), SkipParser()],
    patterns=["*.md"],
    setup=_setup,
    teardown=_teardown,
    fixtures=["in_temporary_directory"],
).pytest()
