"""Outside models in an experiment: a `[[model]]` table with `path` (a Hugging Face folder written by
`save_pretrained`, or a scikit-learn pipeline saved with skops), predicted with on every platform, never trained.

The path, and a mapping `.toml` file, are read from the experiment file's folder. The model is checked before any
work (it exists, it loads, its classes are the corpus's, it supports the attributions asked of it). Its predictions
are cached under a key made of the SHA-256 of its files (`model_digest`) and of its mapping file, so a changed model
or mapping is scored again. The model is judged on the rows a model trained on the reference platform is judged
on, so every model of the experiment is compared on the same rows (docs/models.md).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import Experiment, ModelSpec
from mhaudit.experiments.corpora import resolved_mapping

__all__ = ["outside_path", "outside_loading", "load_outside", "check_outside_models", "outside_digest", "score_job"]

OUTSIDE_SEED = 0  # an outside model's seed in the predictions, as `mhaudit predict` gives it


def outside_path(exp: Experiment, spec: ModelSpec) -> Path:
    """The outside model's folder or file, read from the experiment file's folder; a Hugging Face Hub id
    (`org/name`) where no such path exists there (models.hf_hub)."""
    from mhaudit.models.hf_hub import hub_model_id

    assert spec.path is not None, "called for an outside model"
    local = exp.folder / spec.path
    return Path(spec.path) if not local.exists() and hub_model_id(spec.path) else local


def outside_loading(exp: Experiment, spec: ModelSpec) -> dict:
    """`load_outside`'s arguments for `spec`, plain values (a job's arguments travel to other processes)."""
    return {
        "path": str(outside_path(exp, spec)),
        "mapping": resolved_mapping(exp, spec.mapping),
        "trust_pickle": spec.trust_pickle,
    }


def load_outside(path: str, mapping: str | None, trust_pickle: bool, trained_on: str | None = None):
    """The outside model, judged (`judged_rows`) as if trained on `trained_on`: the experiment's reference."""
    from mhaudit.models import load_model

    model = load_model(path, mapping=mapping, trust_pickle=trust_pickle)
    model.trained_on = trained_on  # type: ignore[attr-defined]  # a saved model's extra, read with getattr
    return model


def model_loader(exp: Experiment, spec: ModelSpec, folder: Path, platform: str) -> Callable:
    """What loads the model of a place: an outside model from its path, a trained one from its folder."""
    if spec.outside:
        return partial(load_outside, **outside_loading(exp, spec), trained_on=platform)
    from mhaudit.models import load_model

    return partial(load_model, folder)


def check_outside_models(exp: Experiment) -> dict[str, list[str]]:
    """Every outside model exists and loads, and supports the attributions asked of it; its classes by key."""
    from mhaudit.models.base import check_attribution_method

    classes = {}
    for spec in (s for s in exp.model if s.outside):
        path = outside_path(exp, spec)
        if not path.exists() and path == exp.folder / str(spec.path):  # neither here nor a Hub id
            raise InputError(
                f"[[model]] {spec.key}: path '{spec.path}' does not exist (paths are read from the experiment "
                f"file's folder, {exp.folder})"
            )
        try:
            model = load_outside(**outside_loading(exp, spec))
            if spec.explain != "none":
                check_attribution_method(model, spec.explain)
        except InputError as exc:
            raise InputError(f"[[model]] {spec.key}: {exc}") from None
        classes[spec.key] = list(model.classes)
    return classes


def check_outside_classes(found: dict[str, list[str]], classes: list[str]) -> None:
    """Each outside model's classes are the corpus's, in its order (the logits' columns)."""
    for key, model_classes in found.items():
        if model_classes != list(classes):
            raise InputError(
                f"[[model]] {key}: its classes ({', '.join(model_classes)}) differ from the corpus's "
                f"({', '.join(classes)}); give a mapping that maps its labels to them"
            )


def outside_digest(exp: Experiment, spec: ModelSpec) -> dict[str, str]:
    """The content hashes that key an outside model's predictions: its files, and its mapping's .toml files."""
    from mhaudit.models.hf_hub import model_files
    from mhaudit.tables.predictions import sha256_file
    from mhaudit.weak_supervision.collect.scoring import model_digest

    mapping = resolved_mapping(exp, spec.mapping) or ""
    files = {p: sha256_file(Path(p)) for p in mapping.split("+") if p.endswith(".toml") and Path(p).exists()}
    files_of = model_files(outside_path(exp, spec), trust_pickle=spec.trust_pickle)  # a Hub id's: its snapshot's
    return {"model": model_digest(files_of), **files}


def score_job(loading: dict, corpus_path: str, platform: str, model_name: str, out_file: str) -> str:
    """One outside model's predictions on the corpus, written to `out_file` (a top-level function so any executor
    can run it)."""
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.io import write_table
    from mhaudit.tables.predictions import predict_corpus

    model = load_outside(**loading, trained_on=platform)
    corpus = Corpus.read(corpus_path)
    write_table(predict_corpus(model, corpus, model_name=model_name, seed=OUTSIDE_SEED), out_file)
    return out_file
