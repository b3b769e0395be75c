"""The README's Python tour runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_block_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no python block"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_readme_error_table_lists_every_error_class():
    import adjoint as aj

    text = README.read_text()
    table = text[text.index("## Errors"):]
    for name in aj.errors.__all__:
        assert f"`aj.{name}`" in table, f"aj.{name} is missing from the README's error table"
