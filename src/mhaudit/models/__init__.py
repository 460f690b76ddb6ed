"""Models: a small protocol, a registry by name, and the built-in baselines."""

from mhaudit.models.base import REGISTRY, Model, create, register

__all__ = ["REGISTRY", "Model", "create", "register"]
