"""Models: a small protocol, a registry by name, the built-in baselines and transformer fine-tuning.

Names load from `mhaudit.models.base` on first use, so importing a light submodule (`models.builtin`,
for the CLI's help) does not load numpy and pandas.
"""

from __future__ import annotations

import importlib

__all__ = ["REGISTRY", "Model", "create", "is_deterministic", "load_model", "model_names", "register", "save_model",
           "training_seeds"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'mhaudit.models' has no attribute '{name}'")
    value = getattr(importlib.import_module("mhaudit.models.base"), name)
    globals()[name] = value
    return value
