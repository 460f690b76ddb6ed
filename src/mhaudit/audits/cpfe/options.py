"""The inputs and options of the cross-platform audit, checked when they are made: a bad value fails before
anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import Rule, at_least, between, check, each, one_of, option

if TYPE_CHECKING:  # imported where used: the command line imports these options for its flags alone
    import pandas as pd

    from mhaudit.tables.predictions import PredictionSet


def _pair(text: str) -> tuple[str, str]:
    """'MODEL:PLATFORM' as a pair (the --non-independent flag)."""
    model, colon, platform = text.partition(":")
    if not (colon and model and platform):
        raise InputError(f"--non-independent '{text}' must be MODEL:PLATFORM")
    return model, platform


@dataclass(frozen=True)
class CPFEOptions:
    """The cross-platform audit's options: each field's default, help and rule, shared with its command's flags."""

    reference: str = option(
        help="The models' home platform (or data set); every other one is compared with it.",
        rule=Rule(lambda v: bool(str(v).strip()), "a platform or data set name"),
    )
    n_bins: int = option(10, help="Equal-width confidence bins for ECE.", rule=at_least(1))
    n_boot_ece: int = option(1000, help="Bootstrap resamples for the ECE CIs.", rule=at_least(2))
    n_boot_significance: int = option(2000, help="Bootstrap resamples for the significance tests.", rule=at_least(2))
    # at 1M rows the resamples cost minutes and agree with DeLong's SE to about 1% (docs/cpfe.md)
    delong_min_rows: int = option(
        100_000,
        help="With at least this many rows in every group, the macro-AUC's SE "
        "comes from DeLong's placement values instead of the resamples.",
        rule=at_least(1),
    )
    seed: int = option(0, help="Seed for bootstraps and drawn calibration splits.")
    calibration_fraction: float = option(0.10, help="Calibration split drawn when none is stored.", rule=between(0, 1))
    crossfit_folds: int = option(
        5, help="Folds of the cross-fitted temperature when a target has no calibration split.", rule=at_least(2)
    )
    correction: str = option(
        "bonferroni",
        help="Multiple-testing correction: bonferroni or bh (Benjamini-Hochberg).",
        rule=one_of("bonferroni", "bh"),
    )
    alpha: float = option(0.05, help="Significance level.", rule=between(0, 1))
    max_tokens: int = option(
        64, help="Words beyond which a text counts as long (the text-length table).", rule=at_least(1)
    )
    top_ks: tuple[int, ...] = option(
        (5, 10, 15, 20), help="K of the top-K attribution Jaccard.", rule=each(at_least(1))
    )
    non_independent: tuple[tuple[str, str], ...] = option(
        (),
        help="MODEL:PLATFORM pairs where the model saw the platform's source in training (marked †).",
        parse=_pair,
        rule=each(Rule(lambda pair: len(pair) == 2, "a (model, platform) pair")),
    )
    figures: bool = option(True, help="Draw the figures.")

    def __post_init__(self) -> None:
        check(self)

    def macro_auc_method(self, sizes) -> str:
        """'DeLong' when every group (of these row counts) reaches delong_min_rows, else 'bootstrap'."""
        return "DeLong" if all(n >= self.delong_min_rows for n in sizes) else "bootstrap"


@dataclass(frozen=True)
class CPFEInputs:
    """What the cross-platform audit reads: every model's predictions on every platform and, when given, the
    texts by id (the text-length table) and the attributions table (axis 5). `synthetic` marks a synthetic
    corpus; `files`: (file, SHA-256) of the corpus and attribution files read, for the report's provenance (the
    prediction files' are in `predictions.fingerprints`)."""

    predictions: PredictionSet
    texts: pd.Series | None = None
    attributions: pd.DataFrame | None = None
    synthetic: bool = False
    files: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        from mhaudit.audits.cpfe.groups import check_labelled

        check_labelled(self.predictions)

    @classmethod
    def from_files(cls, predictions, *, corpus: str | Path | None = None, attributions=(), **read) -> CPFEInputs:
        """From prediction files (paths or globs; `read`: read_predictions' keywords: classes, columns, model,
        seed, platform, name_pattern), the corpus with their texts and attribution files (paths or globs)."""
        import pandas as pd

        from mhaudit.tables.attributions import read_attributions
        from mhaudit.tables.corpus.schema import Corpus
        from mhaudit.tables.prediction_files import expand_sources, read_predictions
        from mhaudit.tables.predictions import sha256_file

        preds = read_predictions(predictions, **read)
        texts, synthetic = None, False
        if corpus is not None:
            read_corpus = Corpus.read(corpus)
            texts, synthetic = read_corpus.frame.set_index("id")["text"], read_corpus.synthetic
        attribution_files = [Path(p) for p in expand_sources(attributions)] if attributions else []
        attribution_table = (
            pd.concat([read_attributions(p) for p in attribution_files], ignore_index=True)
            if attribution_files
            else None
        )
        extras = [Path(corpus)] if corpus is not None else []
        files = tuple((str(p), sha256_file(p)) for p in [*extras, *attribution_files])
        return cls(preds, texts, attribution_table, synthetic, files)
