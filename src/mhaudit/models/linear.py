"""Classical baselines: TF-IDF features + logistic regression (scikit-learn)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from mhaudit.models.base import register


class TfidfLogistic:
    """Word uni+bigram TF-IDF + multinomial logistic regression; logits are the decision function."""

    def __init__(self, *, analyzer: str = "word", ngram_range: tuple[int, int] = (1, 2), C: float = 1.0,
                 class_weight: str | None = None, seed: int = 0, min_df: int = 2):
        self.params = dict(analyzer=analyzer, ngram_range=ngram_range, C=C, class_weight=class_weight,
                           seed=seed, min_df=min_df)
        # token_pattern keeps '#tags' whole so a hashtag is one feature, as a reader sees it
        pattern = r"(?u)#?\b\w\w+\b" if analyzer == "word" else None
        self.pipeline = make_pipeline(
            TfidfVectorizer(analyzer=analyzer, ngram_range=ngram_range, min_df=min_df, sublinear_tf=True,
                            token_pattern=pattern, lowercase=True),
            LogisticRegression(C=C, class_weight=class_weight, max_iter=2000, random_state=seed),
        )
        self.classes: list[str] = []

    def fit(self, train: pd.DataFrame, classes: list[str]) -> TfidfLogistic:
        self.classes = list(classes)
        y = pd.Categorical(train["label"], categories=self.classes).codes
        self.pipeline.fit(train["text"].astype(str).tolist(), y)
        return self

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        scores = self.pipeline.decision_function(list(texts))
        if scores.ndim == 1:  # binary: sklearn gives one margin; make it two logits
            scores = np.column_stack([np.zeros_like(scores), scores])
        # columns follow the classes seen in training; place them in mapping order
        out = np.full((len(texts), len(self.classes)), -np.inf)
        out[:, self.pipeline[-1].classes_] = scores
        return out


register("tfidf-lr")(TfidfLogistic)
register("char-tfidf-lr")(lambda **kw: TfidfLogistic(analyzer="char_wb", ngram_range=(3, 5), **kw))
