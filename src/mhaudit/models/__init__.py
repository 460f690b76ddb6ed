"""Models: a small protocol, a registry by name, the built-in baselines and transformer fine-tuning."""

from mhaudit.models.base import (
    REGISTRY,
    Model,
    create,
    is_deterministic,
    load_model,
    model_names,
    register,
    save_model,
    training_seeds,
)

__all__ = ["REGISTRY", "Model", "create", "is_deterministic", "load_model", "model_names", "register", "save_model",
           "training_seeds"]
