"""Fuzz scripts, outside the test suite: ``python -m adjoint.fuzz parse|exec|passes|patterns N``.

``parse`` feeds mutated texts to ``aj.parse`` (and prints, re-parses, builds
and runs what parses); ``exec`` calls compiled functions with arguments of
every wrong or odd shape, dtype, stride, alignment, byte order and kind;
``passes`` runs random pipelines of ``aj.transform`` passes on valid
programs (corpus texts, mutated until they verify, some given ``num_input``
and ``frozen`` attrs) and checks each output: it verifies, prints and parses
back equal, and runs to the results the program gave (through
``f_transform_params`` after LiftTransformParams; a new ``f_adjoint``'s
first output against ``f``); ``patterns`` checks ``adjoint.pattern`` against a
Python reference written from docs/passes/pattern.md: ``match`` (match or
not, and each capture) of random patterns on random small functions,
exact rewrite rules by ``P.Rewriter.from_pattern``/``rewrite_call`` and by
``from_text`` (agreeing, verifying, at a fixed point, computing what the
input did), and the matchings of ``P.rewrite_bindings`` on random
``PatternContext``s (brute force over tiny functions).
Input k of a run is made from (seed, k) alone. A worker process runs the
inputs; a crash (signal), a hang, an exception that is not an ``aj.Error``
or a wrong result is a finding, saved as a reproducer under ``--out``.
"""

TARGETS = {"parse": "adjoint.fuzz.parse", "exec": "adjoint.fuzz.exec", "passes": "adjoint.fuzz.passes",
           "patterns": "adjoint.fuzz.patterns"}
