"""The optional C extension, kxtx.fast.native (kxtx/fast/native.c); everything else is in pyproject.toml.

Here and not in pyproject.toml: setuptools' `[tool.setuptools.ext-modules]` table is still
experimental (every build warns that it is likely to change), `Extension` is its stable API.
`optional=True`: where no C compiler or no Python headers are found, the build goes on without the
module and kxtx runs the same loops in Python (kxtx.fast.speedups). A wheel built here is for this
platform and Python version.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kxtx.fast.native", sources=["kxtx/fast/native.c"], optional=True)])
