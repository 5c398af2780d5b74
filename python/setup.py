"""Copies the checkout's build/libstepwise.so (`make lib`) into the package
as it is built, so that an installed stepwise finds its library beside it.
Everything else is in pyproject.toml."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "build", "libstepwise.so")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if not os.path.exists(LIB):
            raise SystemExit("build/libstepwise.so is missing: run `make lib` in the checkout first")
        shutil.copy(LIB, os.path.join(self.build_lib, "stepwise", "libstepwise.so"))


setup(cmdclass={"build_py": BuildWithLibrary})
