"""Fuzz scripts, outside the test suite: ``python -m adjoint.fuzz parse|exec|passes N``.

``parse`` feeds mutated texts to ``aj.parse`` (and prints, re-parses, builds
and runs what parses); ``exec`` calls compiled functions with arguments of
every wrong or odd shape, dtype, stride, alignment, byte order and kind;
``passes`` runs random pipelines of ``aj.transform`` passes on valid
programs (corpus texts, mutated until they verify, some given ``num_input``
and ``frozen`` attrs) and checks each output: it verifies, prints and parses
back equal, and runs to the results the program gave (through
``f_transform_params`` after LiftTransformParams; a new ``f_adjoint``'s
first output against ``f``).
Input k of a run is made from (seed, k) alone. A worker process runs the
inputs; a crash (signal), a hang, an exception that is not an ``aj.Error``
or a wrong result is a finding, saved as a reproducer under ``--out``.
"""

TARGETS = {"parse": "adjoint.fuzz.parse", "exec": "adjoint.fuzz.exec", "passes": "adjoint.fuzz.passes",
           "patterns": "adjoint.fuzz.patterns"}
