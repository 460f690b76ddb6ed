"""Classical baselines: TF-IDF features + logistic regression (scikit-learn)."""

from __future__ import annotations

import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.models.base import register
from mhaudit.models.linear_attributions import linear_attributions
from mhaudit.stats.calibration import fit_temperature
from mhaudit.tables.corpus.schema import label_codes


def _check_options(analyzer, ngram_range, C, class_weight, min_df, calibrate) -> None:
    """InputError for an option scikit-learn would reject only at fit time (or misread), named."""

    def number(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if analyzer not in ("word", "char", "char_wb"):
        raise InputError(f"TF-IDF option analyzer must be word, char or char_wb, got {analyzer!r}")
    if (
        not isinstance(ngram_range, (list, tuple))
        or len(ngram_range) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in ngram_range)
        or ngram_range[0] > ngram_range[1]
    ):
        raise InputError(
            f"TF-IDF option ngram_range must be two positive integers [low, high] with low <= high, got {ngram_range!r}"
        )
    if not number(C) or not 0 < C < float("inf"):
        raise InputError(f"TF-IDF option C must be a positive number, got {C!r}")
    if class_weight not in (None, "balanced") and not isinstance(class_weight, dict):
        raise InputError(f"TF-IDF option class_weight must be null, 'balanced' or a mapping, got {class_weight!r}")
    if (
        not number(min_df)
        or (isinstance(min_df, int) and min_df < 1)
        or (isinstance(min_df, float) and not 0 < min_df <= 1)
    ):
        raise InputError(f"TF-IDF option min_df must be a document count >= 1 or a share in (0, 1], got {min_df!r}")
    if not isinstance(calibrate, bool):
        raise InputError(f"TF-IDF option calibrate must be true or false, got {calibrate!r}")


def _checked_weights(column: pd.Series) -> np.ndarray:
    """The training rows' `weight` column as floats: each finite and >= 0, their sum above 0."""
    weights = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise InputError("the training rows' weight column must hold finite numbers >= 0, not all 0")
    return weights


@register("tfidf-lr")
@register("char-tfidf-lr", analyzer="char_wb", ngram_range=(3, 5))
class TfidfLogistic:
    """Word uni+bigram TF-IDF + multinomial logistic regression; logits are the decision function."""

    deterministic = True  # lbfgs on fixed features: `seed` changes nothing, so one fit stands for every seed
    sample_weights = True  # `fit` reads a `weight` column (soft labels); model-selection refuses them to other models

    def __init__(
        self,
        *,
        analyzer: str = "word",
        ngram_range: tuple[int, int] = (1, 2),
        C: float = 10.0,
        class_weight: str | None = None,
        seed: int = 0,
        min_df: int = 2,
        calibrate: bool = True,
    ):
        _check_options(analyzer, ngram_range, C, class_weight, min_df, calibrate)
        ngrams = tuple(ngram_range)  # TOML and JSON give lists
        self.params = dict(
            analyzer=analyzer,
            ngram_range=ngrams,
            C=C,
            class_weight=class_weight,
            seed=seed,
            min_df=min_df,
            calibrate=calibrate,
        )
        self.temperature = 1.0
        self.notes: list[str] = []
        # token_pattern keeps '#tags' whole so a hashtag is one feature, as a reader sees it
        pattern = r"(?u)#?\b\w\w+\b" if analyzer == "word" else None
        self.pipeline = make_pipeline(
            TfidfVectorizer(
                analyzer=analyzer,
                ngram_range=ngrams,
                min_df=min_df,
                sublinear_tf=True,
                token_pattern=pattern,
                lowercase=True,
            ),
            LogisticRegression(C=C, class_weight=class_weight, max_iter=2000, random_state=seed),
        )
        self.classes: list[str] = []

    def fit(self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None) -> TfidfLogistic:
        """Fit on the train rows (weighted by their `weight` column where there is one: `_fit_weighted`); with
        `calibrate` and a val split present, fit a temperature on val (unweighted) so the model is calibrated on
        its home platform (regularised TF-IDF models are underconfident).
        `progress` is not told anything: a fit takes seconds."""
        self.classes = list(classes)
        val = train["split"] == "val" if "split" in train else pd.Series(False, index=train.index)
        fit_rows = train[~val] if self.params["calibrate"] and val.any() else train
        y = label_codes(fit_rows["label"], self.classes)
        missing = [c for i, c in enumerate(self.classes) if not (y == i).any()]
        if missing:
            raise InputError(
                f"the training rows have no example of class(es) {', '.join(missing)}; "
                "every class needs training examples"
            )
        texts = fit_rows["text"].astype(str).tolist()
        if "weight" in fit_rows:
            self._fit_weighted(texts, y, _checked_weights(fit_rows["weight"]))
        else:
            self.pipeline.fit(texts, y)
        if self.params["calibrate"] and val.any():
            held = train[val]
            self.temperature = 1.0
            logits = self.predict_logits(held["text"].astype(str).tolist())
            with warnings.catch_warnings(record=True) as caught:  # e.g. a separable val set: T at its bound
                warnings.simplefilter("always")
                self.temperature = fit_temperature(logits, label_codes(held["label"], self.classes))
            self.notes = [str(w.message) for w in caught]
        elif self.params["calibrate"]:
            self.notes = [
                "no home temperature: the training platform has no val rows to fit it on, so its "
                "probabilities are the raw model's (draw a val split with mhaudit data split)"
            ]
            warnings.warn(self.notes[0], stacklevel=2)
        return self

    def _fit_weighted(self, texts: list[str], y: np.ndarray, weights: np.ndarray) -> None:
        """Fit with a weight per row (soft labels: a post enters as two rows, class 1 weighted p and class 0
        weighted 1 - p). The vectorizer learns its vocabulary and idf from the distinct texts, so a post entered
        twice counts as one document; the logistic regression takes the weights as `sample_weight`."""
        vectorizer, logistic = self.pipeline[0], self.pipeline[-1]
        vectorizer.fit(list(dict.fromkeys(texts)))
        logistic.fit(vectorizer.transform(texts), y, sample_weight=weights)

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        scores = self.pipeline.decision_function(list(texts))
        if scores.ndim == 1:  # binary: sklearn gives one margin; make it two logits
            scores = np.column_stack([np.zeros_like(scores), scores])
        # columns follow the classes seen in training; place them in mapping order
        out = np.full((len(texts), len(self.classes)), -np.inf)
        out[:, self.pipeline[-1].classes_] = scores / self.temperature
        return out

    def explain(self, texts: list[str]) -> pd.DataFrame:
        """Linear attributions: per class and word, the mean over `texts` of coefficient x TF-IDF value
        (`linear_attributions`). Columns: class, word, score, count, method 'linear'."""
        vectorizer, logistic = self.pipeline[0], self.pipeline[-1]
        names = [self.classes[c] for c in logistic.classes_]
        return linear_attributions(vectorizer, vectorizer, logistic.coef_, names, texts)

    def save_artifacts(self, directory: Path) -> None:
        joblib.dump({"pipeline": self.pipeline, "temperature": self.temperature}, directory / "pipeline.joblib")

    def load_artifacts(self, directory: Path) -> None:
        state = joblib.load(directory / "pipeline.joblib")
        self.pipeline, self.temperature = state["pipeline"], state["temperature"]
