"""A package whose names load from its modules on first use (PEP 562): importing one module of an audit (its
options, which the command line's flags are made from) does not import the whole audit."""

from __future__ import annotations

import importlib
import sys


def lazy_names(package: str, where: dict[str, str]):
    """`__all__`, `__getattr__` and `__dir__` for `package`: each name of `where` is read from its module (relative
    to the package; "module:attribute" where the attribute has another name) when first asked for, then kept."""
    module = sys.modules[package]

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        path, _, attribute = where[name].partition(":")
        value = getattr(importlib.import_module(path, package), attribute or name)
        setattr(module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *where})

    return sorted(where), __getattr__, __dir__
