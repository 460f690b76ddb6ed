"""Models: a small protocol, a registry by name, the built-in baselines and transformer fine-tuning."""

from mhaudit.models.base import REGISTRY, Model, create, load_model, register, save_model

__all__ = ["REGISTRY", "Model", "create", "load_model", "register", "save_model"]
