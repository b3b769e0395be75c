"""The seeds and dictionary of the libFuzzer targets (python -m
adjoint.fuzz.libfuzzer DIR): every seed is a valid program, each once, and
every dictionary line is in libFuzzer's syntax (a line it cannot read ends
the run before it starts). The targets themselves need clang: .ci/libfuzzer."""

from __future__ import annotations

import re
import subprocess
import sys

import adjoint as aj
from adjoint.fuzz.libfuzzer import dictionary_entry, dictionary_words, seed_texts

# libFuzzer's dictionary line: name="..." where the quoted bytes are
# printable ASCII other than " and \, or escapes \\, \" and \xNN.
DICT_LINE = re.compile(r'^\w+="(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\\\|\\"|\\x[0-9A-Fa-f]{2})*"$')


def test_dictionary_entry_escapes_what_libfuzzer_reads_as_escapes():
    assert dictionary_entry("sum(") == '"sum("'
    assert dictionary_entry('"n"') == r'"\x22n\x22"'
    assert dictionary_entry("a\\b") == r'"a\x5Cb"'
    assert dictionary_entry("\n    ") == r'"\x0A    "'
    assert dictionary_entry("é") == r'"\xC3\xA9"'
    assert dictionary_entry("\ud800") == r'"\xED\xA0\x80"'  # a lone surrogate, as the Python target writes it


def test_seeds_are_valid_programs_each_once():
    texts = seed_texts()
    assert len(texts) == len(set(texts)) > 50
    for text in texts:
        aj.analysis.verify(aj.parse(text))


def test_dictionary_holds_every_op_and_attr_once():
    words = dictionary_words()
    assert len(words) == len(set(words))
    for name in aj._core.op_names():
        assert name + "(" in words
        assert all(attr["name"] + "=" in words for attr in aj._core.op_schema(name)["attrs"])


def test_command_writes_seeds_and_a_dictionary_libfuzzer_reads(tmp_path):
    out = subprocess.run([sys.executable, "-m", "adjoint.fuzz.libfuzzer", str(tmp_path / "lf")],
                         capture_output=True, text=True, check=True).stdout
    seeds = sorted((tmp_path / "lf" / "seeds").iterdir())
    lines = (tmp_path / "lf" / "adjoint.dict").read_text(encoding="ascii").splitlines()
    assert out == (f"{len(seeds)} seed texts in {tmp_path / 'lf' / 'seeds'}, "
                   f"{len(lines)} words in {tmp_path / 'lf' / 'adjoint.dict'}\n")
    assert {p.read_bytes().decode("utf-8", "surrogatepass") for p in seeds} == set(seed_texts())
    assert [line for line in lines if not DICT_LINE.match(line)] == []
