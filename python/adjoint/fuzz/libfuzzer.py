"""``python -m adjoint.fuzz.libfuzzer DIR``: the seed corpus and dictionary
of the coverage-guided fuzz targets of the C++ core (cpp/fuzz/*.cc).

Writes ``DIR/seeds/``, one file per valid text of the ``parse`` and
``passes`` targets' corpora and per text rule of the ``passes`` and
``patterns`` targets followed by a program to rewrite (named by a hash of
the text), and
``DIR/adjoint.dict``, the format's words in libFuzzer's dictionary syntax
(op and attr names, keywords, dtypes, odd dim strings) so that mutations
insert whole tokens. The README's "Fuzzing" section shows the run.
"""

from __future__ import annotations

import argparse
import hashlib
import os

import adjoint as aj
from adjoint.fuzz.parse import STRINGS, TYPE_NAMES, _corpus
from adjoint.fuzz.passes_corpus import PASS_TEXTS
from adjoint.fuzz.passes_pipeline import RULES as PIPELINE_RULES
from adjoint.fuzz.patterns_rules import RULES as PATTERN_RULES

PUNCTUATION = ["@function", "def ", "return ", "->", "num_input=", "doc=", "frozen=", ": ", " = ", ", ", "\n    ",
               "\n\n", "(", ")", "[", "]", "Tensor((", "Tuple(", "const(", "keepdims=True", "# "]


def seed_texts() -> list[str]:
    """The valid texts the targets start from, each once: programs, and
    modules of a text rule (``pattern`` and ``replacement``), a function
    ``target`` that is the pattern's copy (so the rule fires) and a program."""
    programs = _corpus() + PASS_TEXTS
    rules = list(PIPELINE_RULES.values()) + [rule.text for rule in PATTERN_RULES]
    with_rules = [rule + "\n" + rule.split("\n\n")[0].replace("def pattern(", "def target(", 1) + "\n\n"
                  + programs[i % len(programs)] for i, rule in enumerate(rules)]
    return list(dict.fromkeys(programs + with_rules))


def dictionary_words() -> list[str]:
    """Op names, attr names, keywords, dtypes and dim strings, each once."""
    words = list(PUNCTUATION) + TYPE_NAMES + STRINGS
    for name in aj._core.op_names():
        words.append(name + "(")
        words += [attr["name"] + "=" for attr in aj._core.op_schema(name)["attrs"]]
    return list(dict.fromkeys(words))


def dictionary_entry(word: str) -> str:
    """``word`` quoted as libFuzzer reads it: printable ASCII as is, but
    for ``"`` and ``\\``, other bytes of its UTF-8 as ``\\xNN``."""
    body = "".join(chr(b) if 0x20 <= b < 0x7F and chr(b) not in '"\\' else f"\\x{b:02X}"
                   for b in word.encode("utf-8", "surrogatepass"))
    return f'"{body}"'


def write(directory: str) -> tuple[int, int]:
    """Writes the seeds and the dictionary under ``directory``; returns how many of each."""
    seeds = os.path.join(directory, "seeds")
    os.makedirs(seeds, exist_ok=True)
    texts = seed_texts()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        with open(os.path.join(seeds, hashlib.sha1(data).hexdigest()[:16] + ".aj"), "wb") as f:
            f.write(data)
    words = dictionary_words()
    with open(os.path.join(directory, "adjoint.dict"), "w", encoding="ascii") as f:
        f.writelines(f"w{i}={dictionary_entry(word)}\n" for i, word in enumerate(words))
    return len(texts), len(words)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m adjoint.fuzz.libfuzzer", description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="where seeds/ and adjoint.dict are written (made if missing)")
    args = parser.parse_args(argv)
    n_texts, n_words = write(args.directory)
    print(f"{n_texts} seed texts in {os.path.join(args.directory, 'seeds')}, "
          f"{n_words} words in {os.path.join(args.directory, 'adjoint.dict')}")


if __name__ == "__main__":
    main()
