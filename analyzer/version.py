"""hvd-analyze's version (``analyzer.__version__``), in a module of its own so that the modules that
write it into reports and stores do not import the package face, which names them."""

from __future__ import annotations

__version__ = "0.1.0"  # the project's version in pyproject.toml; a test checks they agree
