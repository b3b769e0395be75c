"""Makes docs/ a package, so pytest imports docs/conftest.py as docs.conftest
and it does not shadow tests/conftest.py, which tests import as `conftest`."""
