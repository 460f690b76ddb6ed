"""The model protocol every classifier follows, the registry that names them, and saving/loading.

A model is made by name with options (`create("tfidf-lr", C=10)`), fitted on a corpus frame (rows of
split train, plus val used for calibration or early stopping), gives raw logits with columns in the
mapping's class order, and saves to a directory that `load_model` reads back to identical logits. `fit`
takes `progress` (a `mhaudit.core.progress.Progress`; the torch models make each epoch a stage). Built-in models
are imported on first use, so the base install never imports torch.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.models.builtin import BUILTIN, MODEL_FILE

ATTRIBUTION_METHODS = ("linear", "saliency", "integrated_gradients")


class Model(Protocol):
    name: str
    options: dict
    classes: list[str]

    def fit(self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None) -> Model: ...

    def predict_logits(self, texts: list[str]) -> np.ndarray: ...

    def save_artifacts(self, directory: Path) -> None: ...

    def load_artifacts(self, directory: Path) -> None: ...


REGISTRY: dict[str, tuple[type, dict]] = {}


def register(name: str, **defaults):
    """Class decorator: make `name` create this class with `defaults` (overridden by the caller's options)."""

    def add(cls: type) -> type:
        REGISTRY[name] = (cls, defaults)
        return cls

    return add


def register_with_defaults(name: str, **overrides):
    """`register` with every default of the class's signature (then `overrides`): its options are declared once
    and `model.options` names each one the model was made with."""

    def add(cls: type) -> type:
        defaults = {k: p.default for k, p in inspect.signature(cls).parameters.items()}
        return register(name, **(defaults | overrides))(cls)

    return add


def _entry(name: str) -> tuple[type, dict]:
    if name not in REGISTRY and name in BUILTIN:
        try:
            importlib.import_module(BUILTIN[name])
        except ImportError as exc:
            raise InputError(
                f"model '{name}' needs an optional dependency ({exc.name}); install mhaudit[transformers]"
            ) from None
    if name not in REGISTRY:
        raise InputError(f"unknown model '{name}'; known models: {', '.join(model_names())}")
    return REGISTRY[name]


def model_names() -> list[str]:
    """Every model name `create` knows: the built-in ones and those registered since."""
    return sorted(set(REGISTRY) | set(BUILTIN))


def is_deterministic(name: str) -> bool:
    """Whether model `name` is the same for every seed (its class sets `deterministic = True`); imports its module."""
    return bool(getattr(_entry(name)[0], "deterministic", False))


def training_seeds(name: str, seeds, label: str | None = None) -> tuple[list[int], str | None]:
    """The seeds to train `name` for, and a one-line note when that is fewer than asked: a deterministic
    model is trained once, for the first seed (other seeds would repeat it, giving an SD over seeds of 0)."""
    seeds = list(seeds)
    if len(seeds) > 1 and is_deterministic(name):
        return seeds[:1], f"{label or name} is deterministic: trained once (seed {seeds[0]}), not per seed"
    return seeds, None


def attribution_methods(model: Model) -> list[str]:
    """The attribution methods a trained model supports. A model may declare them itself with a method
    `attribution_methods()` returning their names (a scikit-learn pipeline: 'linear' only where it is linear); else
    'linear' where it has `explain` (the TF-IDF models), 'saliency' and 'integrated_gradients' where it holds a
    Hugging Face classifier (`hf_model`, `tokenizer`: the transformer models and Hugging Face folders)."""
    declared = getattr(model, "attribution_methods", None)
    if callable(declared):
        return [method for method in declared() if method in ATTRIBUTION_METHODS]
    methods = ["linear"] if callable(getattr(model, "explain", None)) else []
    if getattr(model, "hf_model", None) is not None and getattr(model, "tokenizer", None) is not None:
        methods += ["saliency", "integrated_gradients"]
    return methods


def check_attribution_method(model: Model, method: str) -> None:
    """InputError unless `method` is an attribution method that `model` supports and that can run here. The
    sentence gives the model's own reason where it has one (`attribution_refusal(method)`)."""
    if method not in ATTRIBUTION_METHODS:
        raise InputError(f"unknown attribution method '{method}'; choose {', '.join(ATTRIBUTION_METHODS)}")
    supported = attribution_methods(model)
    if method not in supported:
        can = f"supports only {', '.join(supported)}" if supported else "has no attribution method"
        refusal = getattr(model, "attribution_refusal", None)
        reason = (refusal(method) if callable(refusal) else None) or (
            "linear: TF-IDF models and linear scikit-learn pipelines; saliency and integrated_gradients: "
            "transformer models and Hugging Face folders"
        )
        raise InputError(f"model '{model.name}' {can}, not '{method}' ({reason})")
    if method == "integrated_gradients" and importlib.util.find_spec("captum") is None:
        raise InputError("integrated_gradients needs captum; install mhaudit[transformers]")


def check_classes(model: Model, classes: list[str], *, path: str | Path | None = None) -> None:
    """InputError unless the model's classes are `classes`, in their order (its logits' columns); for an outside
    model (a Hugging Face folder, a pipeline) the sentence says that a label mapping names its labels."""
    if list(model.classes) == list(classes):
        return
    hint = ""
    if getattr(model, "source", "mhaudit") != "mhaudit":
        hint = "; give --mapping, a label mapping from its labels to these classes in this order"
    raise InputError(f"the model's classes {model.classes} differ from the corpus's {classes}{hint}", path=path)


def option_names(name: str) -> list[str]:
    """The options model `name` takes (its class's keyword arguments); imports its module."""
    return list(inspect.signature(_entry(name)[0]).parameters)


def unknown_options(name: str, options) -> list[str]:
    """The keys of `options` that model `name` does not take (none when its class takes any keyword)."""
    known = inspect.signature(_entry(name)[0]).parameters
    if any(p.kind is p.VAR_KEYWORD for p in known.values()):
        return []
    return sorted(set(options) - set(known))


def create(name: str, **options) -> Model:
    """A new model of the registered `name`, its default options overridden by `options`."""
    cls, defaults = _entry(name)
    merged = {**defaults, **options}
    if unknown := unknown_options(name, merged):
        raise InputError(
            f"model '{name}' has no option {', '.join(unknown)}; its options: {', '.join(option_names(name))}"
        )
    model = cls(**merged)
    model.name, model.options = name, merged
    return model


def save_model(model: Model, directory: str | Path, recipe: dict | None = None, trained_on: str | None = None) -> None:
    """Write the model's artifacts, then its manifest last: a folder with a manifest is complete. `recipe`
    (how a run of an ensemble was made: `models.runs`) and `trained_on` (the platform or data set whose train and
    val rows it fitted, so prediction judges the other rows) are kept and read back as `model.recipe`,
    `model.trained_on`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MODEL_FILE).unlink(missing_ok=True)
    model.save_artifacts(directory)
    manifest = {
        "name": model.name,
        "options": model.options,
        "classes": model.classes,
        "trained_on": trained_on,
        "notes": list(getattr(model, "notes", [])),
    }
    if recipe is not None:
        manifest["recipe"] = recipe
    tmp = directory / f".{MODEL_FILE}.part"
    tmp.write_text(json.dumps(manifest, indent=2, default=list))
    tmp.replace(directory / MODEL_FILE)


def _torch_only(runtime: str, path: Path) -> None:
    if runtime != "torch":
        raise InputError(
            f"runtime '{runtime}' is only for Hugging Face folders; leave it at torch for this model", path=path
        )


def load_model(directory: str | Path, *, mapping=None, trust_pickle: bool = False, runtime: str = "torch") -> Model:
    """A trained model: a folder written by `save_model` (as `mhaudit train` does), a Hugging Face
    sequence-classification folder written by `save_pretrained` (models.hf_folder), or a scikit-learn pipeline
    saved with skops (models.skops_pipeline). `mapping` (a shipped mapping's name, a TOML path or a mapping) maps
    an outside model's labels to the audit's classes; `trust_pickle` allows pickle weights or files, which run code
    when loaded (docs/models.md); `runtime`: "torch", or "onnx" for a Hugging Face folder (models.hf_folder; another
    model given it is an InputError). A Hub id (`org/name`, no such local path) is the Hugging Face model of that
    name in the user's Hugging Face cache, downloaded there first where needed (models.hf_hub)."""
    from mhaudit.models.hf_hub import hub_folder, hub_model_id

    if model_id := hub_model_id(directory):  # a local path always wins
        from mhaudit.models.hf_folder import load_hf_folder

        snapshot = hub_folder(model_id, trust_pickle=trust_pickle)
        from_hub = load_hf_folder(snapshot, mapping=mapping, trust_pickle=trust_pickle, runtime=runtime)
        from_hub.name = f"hf:{model_id}"  # not the snapshot folder's name, a commit hash
        return from_hub
    directory = Path(directory)
    manifest_path = directory / MODEL_FILE
    if not manifest_path.exists():
        from mhaudit.models.skops_pipeline import is_pipeline_file, load_skops_pipeline

        if is_pipeline_file(directory):
            _torch_only(runtime, directory)
            return load_skops_pipeline(directory, mapping=mapping, trust_pickle=trust_pickle)
        if (directory / "config.json").is_file():  # only then import the loader, which loads torch
            from mhaudit.models.hf_folder import is_hf_folder, load_hf_folder

            if is_hf_folder(directory):
                return load_hf_folder(directory, mapping=mapping, trust_pickle=trust_pickle, runtime=runtime)
        raise InputError(
            f"no {MODEL_FILE} here; expected a folder written by mhaudit train, a Hugging Face folder written by "
            "save_pretrained (config.json) or a scikit-learn pipeline saved with skops (.skops)",
            path=directory,
        )
    _torch_only(runtime, directory)
    manifest = json.loads(manifest_path.read_text())
    # models saved before Progress reached `fit` recorded a `progress` flag among their options
    model = create(manifest["name"], **{k: v for k, v in manifest["options"].items() if k != "progress"})
    model.classes = list(manifest["classes"])
    for extra in ("recipe", "trained_on"):  # not Model attributes: the saved model's extras, read with getattr
        setattr(model, extra, manifest.get(extra))
    model.load_artifacts(directory)
    return model
