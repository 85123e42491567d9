"""Names of a package loaded on first use (PEP 562), so a light submodule imports fast."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for `package` that imports each name of `where` from its module.

    `where` maps a name to the module that defines it; a loaded name is kept in the package, so
    the lookup runs once per name.
    """

    def __getattr__(name: str) -> Any:
        source = where.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
