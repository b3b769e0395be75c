"""Fuzz scripts, outside the test suite: ``python -m adjoint.fuzz parse|exec N``.

``parse`` feeds mutated texts to ``aj.parse`` (and prints, re-parses, builds
and runs what parses); ``exec`` calls compiled functions with arguments of
every wrong or odd shape, dtype, stride, alignment, byte order and kind.
Input k of a run is made from (seed, k) alone. A worker process runs the
inputs; a crash (signal), a hang, an exception that is not an ``aj.Error``
or a wrong result is a finding, saved as a reproducer under ``--out``.
"""

TARGETS = {"parse": "adjoint.fuzz.parse", "exec": "adjoint.fuzz.exec"}
