"""The audit's prediction vectors: every channel fitted on the human training rows (once per cross-fitting
repeat), its masked refits, channel A with the other n-gram kind, and external baselines joined by id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mhaudit.audits.divergence.baselines import join_baseline
from mhaudit.audits.divergence.design import Design
from mhaudit.audits.divergence.fitting import (
    ChannelFit,
    FittedChannel,
    combine,
    fit_channel,
    fit_many,
    stratified_folds,
)
from mhaudit.audits.divergence.views import FeatureMemo, View, build_view, masked_texts
from mhaudit.text.parse import Parses, cache_parses

if TYPE_CHECKING:
    from mhaudit.audits.divergence.options import DivergenceOptions

__all__ = ["Runs", "fit_channels", "fit_masked", "fit_other_lexical", "add_baselines"]


class Runs:
    """Prediction vectors by key ("C", "BC/pos_only", "baseline:x"), each with scores on every data set."""

    def __init__(self, datasets: list[str]):
        self.keys: list[str] = []
        self.probs: dict[str, list[np.ndarray]] = {d: [] for d in datasets}
        self.preds: dict[str, list[np.ndarray]] = {d: [] for d in datasets}

    def add(
        self,
        key: str,
        probs: dict[str, np.ndarray],
        threshold: float | None = None,
        preds: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.keys.append(key)
        for d in self.probs:
            self.probs[d].append(probs[d])
            self.preds[d].append(preds[d] if preds is not None else (probs[d] >= threshold).astype(np.int8))

    def prob(self, key: str, dataset: str) -> np.ndarray:
        return self.probs[dataset][self.keys.index(key)]

    def pred(self, key: str, dataset: str) -> np.ndarray:
        return self.preds[dataset][self.keys.index(key)]


def _scores(model, view, datasets) -> dict[str, np.ndarray]:
    return {d: model.prob(combine(view.evaluation[d], model.letters)) for d in datasets}


def fit_channels(
    design: Design, channels: list[str], parses: Parses, options: DivergenceOptions, say, memo: FeatureMemo
) -> tuple[Runs, dict[str, FittedChannel], dict[str, View], list[tuple]]:
    """Fit every channel in each repeat (its own folds and seed). Repeat 0 gives the runs, the fitted models
    and the unmasked view ("none"); every repeat's (channel, data set, repeat, probabilities, threshold)
    feeds the training variance."""
    datasets = design.human + design.auto
    letters = tuple(sorted({c for ch in channels for c in ch}))
    runs, fitted, views, repeat_scores = Runs(datasets), {}, {}, []
    for r in range(options.repeats):
        folds = stratified_folds(design.y_train, options.n_folds, options.seed + r)
        say(f"fitting channels {', '.join(channels)} (repeat {r + 1} of {options.repeats})")
        view = build_view(
            design,
            letters,
            "none",
            datasets,
            folds,
            lexical=options.lexical,
            seed=options.seed + r,
            original=parses,
            memo=memo,
        )
        models = fit_many([ChannelFit(ch, view.train, design.y_train, folds) for ch in channels])
        for ch, model in zip(channels, models):
            scores = _scores(model, view, datasets)
            repeat_scores += [(ch, d, r, scores[d], model.threshold) for d in datasets]
            if r == 0:
                runs.add(ch, scores, model.threshold)
                fitted[ch] = model
        if r == 0:
            views["none"] = view
    return runs, fitted, views, repeat_scores


def fit_masked(
    runs: Runs,
    design: Design,
    mask_channels: list[str],
    masks: list[str],
    folds: np.ndarray,
    parses: Parses,
    options: DivergenceOptions,
    say,
    memo: FeatureMemo,
) -> dict[str, View]:
    """Refit `mask_channels` on each masked view of the human-labelled data; adds runs "<channel>/<mask>"
    and returns the views by mask."""
    human = design.human
    mask_letters = tuple(sorted({c for ch in mask_channels for c in ch}))
    human_parses = parses.take(np.arange(len(design.train) + sum(len(design.evaluation[d]) for d in human)))
    if not masks:
        return {}
    say(f"masks {', '.join(masks)}: masking, re-parsing and featurising")
    # Every mask's texts in one parse call (one start of the parser's workers, full batches); the views
    # below then read them from the cache.
    cache_parses([t for m in masks for t in masked_texts(design, m, human, options.seed, human_parses)])
    views = {
        m: build_view(
            design,
            mask_letters,
            m,
            human,
            folds,
            lexical=options.lexical,
            seed=options.seed,
            original=human_parses,
            memo=memo,
        )
        for m in masks
    }
    say(f"masks: refitting {', '.join(mask_channels)} on each")
    pairs = [(m, ch) for m in masks for ch in mask_channels]
    models = fit_many([ChannelFit(ch, views[m].train, design.y_train, folds) for m, ch in pairs])
    for (mask, ch), model in zip(pairs, models):
        # Masking is run on human-labelled data only; auto data sets carry the unmasked run's scores as
        # placeholders, which no table reads (the masking table covers human data sets only).
        scores = _scores(model, views[mask], human) | {d: runs.prob(ch, d) for d in design.auto}
        runs.add(f"{ch}/{mask}", scores, model.threshold)
    return views


def fit_other_lexical(
    runs: Runs, design: Design, folds: np.ndarray, parses: Parses, options: DivergenceOptions, say, memo: FeatureMemo
) -> None:
    """Channel A with the other lexical representation (word vs char n-grams), as run "A_<kind>"."""
    datasets = design.human + design.auto
    other = "word" if options.lexical == "char" else "char"
    say(f"channel A with {other} n-grams, for comparison")
    view = build_view(
        design, ("A",), "none", datasets, folds, lexical=other, seed=options.seed, original=parses, memo=memo
    )
    model = fit_channel("A", view.train, design.y_train, folds)
    runs.add(f"A_{other}", _scores(model, view, datasets), model.threshold)


def add_baselines(runs: Runs, baselines: Mapping[str, pd.DataFrame], design: Design) -> None:
    """Each baseline's scores and predictions joined to the scored rows by id, as run "baseline:<name>"."""
    datasets = design.human + design.auto
    for name, table in baselines.items():
        joined = {d: join_baseline(name, table, design.evaluation[d]) for d in datasets}
        runs.add(
            f"baseline:{name}",
            {d: j["score"].to_numpy(dtype=float) for d, j in joined.items()},
            preds={d: j["pred"].to_numpy(dtype=np.int8) for d, j in joined.items()},
        )
