"""Models: a small protocol, a registry by name, the built-in baselines and transformer fine-tuning.

Names load from `mhaudit.models.base` on first use, so importing a light submodule (`models.builtin`,
for the CLI's help) does not load numpy and pandas.
"""

from mhaudit.core.lazy import lazy_names

__all__, __getattr__, __dir__ = lazy_names(
    __name__,
    dict.fromkeys(
        [
            "REGISTRY",
            "Model",
            "create",
            "is_deterministic",
            "load_model",
            "model_names",
            "register",
            "save_model",
            "training_seeds",
        ],
        ".base",
    ),
)
