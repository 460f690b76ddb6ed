"""A researcher's scikit-learn pipeline (text in, `predict_proba` out) as an mhaudit `Model`.

The pipeline is a file saved with skops (`skops.io.dump`), the scikit-learn ecosystem's secure format: loading
it builds only the types it is allowed to. mhaudit allows scikit-learn, NumPy and SciPy types; any other type
(a custom transformer, a function from another module) is refused with one sentence naming it, because the
user has not said it is safe. joblib and pickle files (.joblib, .pkl, .pickle) run code when loaded, so they are
read only with `trust_pickle=True`.

Classes: the pipeline's `classes_` are the audit's classes when they are strings; integer classes (0/1, as
most data sets publish them) need a label mapping from the registry the data sets use
(`tables.corpus.mappings`: a shipped name such as `depression-binary`, or a path to a TOML file). Each raw
class is looked up as its string ("0", "1"); a class the mapping does not cover, or drops, is refused, and
several classes mapped to one class sum their probabilities. `predict_logits` gives log-probabilities (the
logits of a softmax that returns the probabilities themselves), with a zero probability as log of the smallest
positive float (about -708) so no logit is infinite.

Attributions ('linear', CPFE axis 5): for a linear pipeline, whose steps before the last turn texts into the
features of a text vectorizer (`TfidfVectorizer`, or `CountVectorizer` then `TfidfTransformer`; named by
`get_feature_names_out`) and whose last step is a linear classifier (`coef_`, `classes_`: LogisticRegression,
SGDClassifier with log loss), `explain` gives the mean over texts of coefficient x feature value per class and word
(`models.linear_attributions`, as mhaudit's own TF-IDF models; the words by the vectorizer's analyzer).
Refused, with the reason in one sentence (`attribution_refusal`): a last step without `coef_` (a random forest, a
CalibratedClassifierCV), features that are not the vectorizer's terms, and a mapping that merges several classes
into one (a sum of probabilities is no coefficient's score).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError, first_line
from mhaudit.core.progress import Progress
from mhaudit.models.linear_attributions import linear_attributions
from mhaudit.tables.corpus import mappings
from mhaudit.tables.corpus.mappings import Mapping
from mhaudit.weak_supervision.collect.scoring import model_digest

__all__ = ["SKOPS_SUFFIX", "PICKLE_SUFFIXES", "SkopsPipeline", "is_pipeline_file", "load_skops_pipeline"]

SKOPS_SUFFIX = ".skops"
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
TRUSTED_PACKAGES = ("sklearn", "numpy", "scipy")
SMALLEST_LOG = float(np.log(np.finfo(float).tiny))  # log of a zero probability: finite, so softmax stays defined


def is_pipeline_file(path: str | Path) -> bool:
    """Whether `path` is a file this module reads: a skops file, or a joblib/pickle file (read only when trusted)."""
    path = Path(path)
    return path.is_file() and path.suffix.lower() in (SKOPS_SUFFIX, *PICKLE_SUFFIXES)


def _trusted_package(type_name: str) -> bool:
    return type_name.split(".", 1)[0] in TRUSTED_PACKAGES


def _read_skops(path: Path):
    import skops.io

    try:
        untrusted = skops.io.get_untrusted_types(file=path)
    except Exception as exc:  # a zip that is not skops's, a truncated file: skops's own reason, in one sentence
        raise InputError(f"is not a readable skops file ({first_line(exc)})", path=path) from None
    refused = sorted(t for t in untrusted if not _trusted_package(t))
    if refused:
        raise InputError(
            f"holds types that are not scikit-learn, NumPy or SciPy and that skops does not trust: "
            f"{', '.join(refused)}; mhaudit loads only those packages' types from a skops file",
            path=path,
        )
    return skops.io.load(path, trusted=list(untrusted))


def _read_pickle(path: Path, trust_pickle: bool):
    if not trust_pickle:
        raise InputError(
            f"is a pickle ({path.suffix}) and loading a pickle runs code: pass trust_pickle=True (--trust-pickle) "
            "only for a file you trust, or save the pipeline with skops.io.dump",
            path=path,
        )
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:  # a trusted pickle that still fails (a missing module, a truncated file)
        raise InputError(f"could not be unpickled ({first_line(exc)})", path=path) from None


def _class_matrix(raw_classes: list, mapping: Mapping | None, path: Path) -> tuple[list[str], np.ndarray]:
    """The audit's classes and the 0/1 matrix (raw class x audit class) that sums raw probabilities into them."""
    if mapping is None:
        if any(isinstance(c, (int, np.integer)) for c in raw_classes):
            raise InputError(
                f"has integer classes ({', '.join(map(str, raw_classes))}) and no label mapping to name them; "
                "pass mapping= a shipped mapping (e.g. depression-binary) or a mapping TOML file",
                path=path,
            )
        classes = [str(c) for c in raw_classes]
        return classes, np.eye(len(classes))
    uncovered = [str(c) for c in raw_classes if not mapping.knows(str(c)) or mapping.target(str(c)) is None]
    if uncovered:
        raise InputError(
            f"has classes that mapping '{mapping.name}' does not map to a class: {', '.join(uncovered)}; "
            f"it maps {', '.join(sorted(mapping.targets))}",
            path=path,
        )
    matrix = np.zeros((len(raw_classes), len(mapping.classes)))
    for row, raw in enumerate(raw_classes):
        matrix[row, mapping.classes.index(mapping.targets[str(raw)])] = 1.0
    return list(mapping.classes), matrix


def _linear_parts(pipeline) -> tuple | str:
    """(the steps that make the features, the text vectorizer among them, the linear classifier) of a linear
    pipeline, or why it is not one."""
    steps = getattr(pipeline, "steps", None)
    if not steps or len(steps) < 2:
        return f"it holds a {type(pipeline).__name__}, not a pipeline of a text vectorizer then a linear classifier"
    classifier, featurize = pipeline[-1], pipeline[:-1]
    if getattr(classifier, "coef_", None) is None:
        return (
            f"its last step, {type(classifier).__name__}, has no coef_, so it is not a linear classifier; linear "
            "attributions need one, e.g. LogisticRegression or SGDClassifier with log loss after a TfidfVectorizer"
        )
    vectorizer = next((step for _, step in featurize.steps if callable(getattr(step, "build_analyzer", None))), None)
    if vectorizer is None or not callable(getattr(vectorizer, "get_feature_names_out", None)):
        return "no step before its classifier is a text vectorizer with named terms (TfidfVectorizer, CountVectorizer)"
    try:
        names, terms = featurize.get_feature_names_out(), set(vectorizer.get_feature_names_out())
    except (AttributeError, ValueError, TypeError) as exc:
        return f"its features have no names ({first_line(exc)})"
    if not set(names) <= terms or np.shape(classifier.coef_)[-1] != len(names):
        return "its classifier's features are not the vectorizer's terms, so its coefficients name no words"
    return featurize, vectorizer, classifier


class SkopsPipeline:
    """A fitted scikit-learn pipeline loaded from a file; its `source` ("skops" or "pickle") and `digest` (SHA-256
    of the file, as `model_digest` hashes model folders) name it in reports and provenance."""

    name = "skops-pipeline"

    def __init__(self, pipeline, classes: list[str], class_matrix: np.ndarray, path: Path, options: dict):
        self.pipeline = pipeline
        self.classes = classes
        self.class_matrix = class_matrix
        self.path = path
        self.options = options
        self.source = "skops" if path.suffix.lower() == SKOPS_SUFFIX else "pickle"
        self.digest = model_digest(path)
        self.notes: list[str] = []

    def predict_probabilities(self, texts: list[str]) -> np.ndarray:
        """The pipeline's `predict_proba`, its columns summed into the audit's classes (in `classes` order)."""
        probabilities = np.asarray(self.pipeline.predict_proba(list(texts)), dtype=float)
        return probabilities @ self.class_matrix

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        """Log-probabilities: their softmax is the probabilities (each row sums to one)."""
        with np.errstate(divide="ignore"):
            return np.maximum(np.log(self.predict_probabilities(texts)), SMALLEST_LOG)

    def attribution_methods(self) -> list[str]:
        """'linear' where the pipeline is linear and each class is one of its classes; otherwise none."""
        return [] if self.attribution_refusal("linear") else ["linear"]

    def attribution_refusal(self, method: str) -> str | None:
        """Why `method` cannot explain this pipeline (part of one sentence), None where it can."""
        if method != "linear":
            return f"a scikit-learn pipeline gets linear attributions only, where it is linear ({self.path.name})"
        if isinstance(parts := _linear_parts(self.pipeline), str):
            return f"{self.path.name}: {parts}"
        merged = [k for k in range(len(self.classes)) if self.class_matrix[:, k].sum() > 1]
        if merged:
            raw = [str(c) for c, row in zip(self.pipeline.classes_, self.class_matrix) if row[merged[0]]]
            return (
                f"mapping '{self.options['mapping']}' merges the pipeline's classes {', '.join(raw)} into "
                f"{self.classes[merged[0]]}, whose probability is their sum, which no coefficient times a feature gives"
            )
        return None

    def explain(self, texts: list[str]) -> pd.DataFrame:
        """Linear attributions (see the module docstring): per class and word, the mean over `texts` of coefficient
        x feature value. Columns class, word, score, count, method 'linear'. InputError where the pipeline is not
        linear or its mapping merges classes."""
        if reason := self.attribution_refusal("linear"):
            raise InputError(f"no linear attributions for this pipeline: {reason}")
        featurize, vectorizer, classifier = cast(tuple, _linear_parts(self.pipeline))  # a reason was refused above
        names = [self.classes[int(np.argmax(row))] for row in self.class_matrix]  # per raw class, its class
        return linear_attributions(featurize, vectorizer, classifier.coef_, names, texts)

    def fit(self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None) -> SkopsPipeline:
        raise InputError(f"the pipeline in {self.path} is already fitted; refit it with scikit-learn and save again")

    def save_artifacts(self, directory: Path) -> None:
        raise InputError(f"the pipeline in {self.path} is its own file; give that file as the model")

    def load_artifacts(self, directory: Path) -> None:
        raise InputError("a scikit-learn pipeline is loaded from its file with load_skops_pipeline")


def load_skops_pipeline(
    path: str | Path, *, mapping: str | Mapping | None = None, trust_pickle: bool = False
) -> SkopsPipeline:
    """The pipeline in `path` (.skops; .joblib/.pkl/.pickle only with `trust_pickle`) as a Model whose classes are
    its `classes_`, or the classes of `mapping` (a shipped mapping's name, a TOML path or a `Mapping`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file; expected a scikit-learn pipeline saved with skops (.skops)", path=path)
    suffix = path.suffix.lower()
    if suffix == SKOPS_SUFFIX:
        pipeline = _read_skops(path)
    elif suffix in PICKLE_SUFFIXES:
        pipeline = _read_pickle(path, trust_pickle)
    else:
        raise InputError(
            f"is not a pipeline file; expected {SKOPS_SUFFIX} (or {', '.join(PICKLE_SUFFIXES)} with trust_pickle)",
            path=path,
        )
    if not callable(getattr(pipeline, "predict_proba", None)) or getattr(pipeline, "classes_", None) is None:
        raise InputError(
            f"holds a {type(pipeline).__name__}, not a fitted classifier with predict_proba and classes_", path=path
        )
    resolved = mappings.load(mapping) if isinstance(mapping, str) else mapping
    classes, matrix = _class_matrix(list(pipeline.classes_), resolved, path)
    options = {"path": str(path), "mapping": resolved.name if resolved else None, "trust_pickle": trust_pickle}
    return SkopsPipeline(pipeline, classes, matrix, path, options)
