"""``python -m adjoint``: the command line of adjoint.cli (also the ``adjoint`` script)."""

import sys

from adjoint.cli import main

if __name__ == "__main__":
    sys.exit(main())
