"""Compiles the kernels with Cython when the package is built (``pip install .``): the timeline
tokenizer and pairer, and the analysis loops. They are plain Python files (Cython's pure-Python
mode), so uncompiled they are the reference implementation the tests check the compiled modules
against. The rest of the build is declared in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import setup

KERNELS = [
    "parsers/timeline/_tokenize.py",
    "parsers/timeline/_pair.py",
    "parsers/nccl/_lines.py",
    "parsers/nccl/_foreign.py",
    "parsers/_paste_lines.py",
    "analyzer/timeline/_kernels.py",
    "analyzer/timeline/_lateness_loops.py",
]
DIRECTIVES = {
    "language_level": 3,
    "infer_types": True,  # C types for untyped locals, as the kernels were written (64-bit ints)
    "boundscheck": False,  # the kernels check their own bounds (each output's room, each pid)
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}

setup(ext_modules=cythonize(KERNELS, compiler_directives=DIRECTIVES, quiet=True))
