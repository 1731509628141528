"""Loading a module by its file: the tests are no package, and the bench scripts are not either, so a test
that reuses another test module's generators or a bench script's functions loads it by path."""

import importlib.util
from pathlib import Path
from types import ModuleType


def module_at(path: Path, name: str) -> ModuleType:
    """The module in ``path``, executed once under ``name`` (not entered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
