"""Binary targets: a corpus scored as a two-class problem by the experiment's multi-class models (docs/models.md).

Each model's logits on a target's test and calibration rows are collapsed to one binary logit
(`collapse_binary`), and a CPFE audit runs on the two-class problem against the reference platform's rows
collapsed the same way (rows of classes on neither side dropped). Its tables join the report as `binary_*`
(`binary_section`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy.special import logsumexp

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import BinarySpec, CorpusSpec, Experiment
from mhaudit.report import Section
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.predictions import KEY_COLUMNS, PredictionSet, logit_column, scores


@dataclass
class BinaryTarget:
    """A corpus scored as a two-class problem by multi-class models (see `collapse_binary`)."""

    spec: CorpusSpec
    corpus: Corpus  # two classes: negative, positive
    key: str
    path: Path  # where the imported corpus is cached

    @property
    def binary(self) -> BinarySpec:
        return self.spec.binary

    def describe(self) -> str:
        negative, positive = self.corpus.classes
        return f"{positive} vs {negative} ({self.binary.describe()})"


def collapse_binary(
    predictions: pd.DataFrame, classes: list[str], binary: BinarySpec, names: list[str], relabel: bool
) -> pd.DataFrame:
    """Multi-class predictions (one `logit_<class>` per model class) as a binary problem `names` =
    [negative, positive]: `logit_<positive>` = logsumexp(positive classes' logits) - logsumexp(negative
    classes' logits), `logit_<negative>` = 0, so the softmax of the two is P(positive side) over
    P(positive side) + P(negative side) under the model's softmax (with negative "rest", exactly the sum
    of the positive classes' probabilities). `relabel`: the labels are model classes (the reference
    platform) and become `names` by side, rows of a class on neither side dropped; else they already
    are `names` (a binary target)."""
    negative = binary.negative_classes(classes)
    z = logsumexp(scores(predictions, binary.positive), axis=1) - logsumexp(scores(predictions, negative), axis=1)
    labels = predictions["label"].astype(str)
    if relabel:
        side = {**{c: names[0] for c in negative}, **{c: names[1] for c in binary.positive}}
        labels = labels.map(side)
    keep = labels.notna().to_numpy()
    out = predictions.loc[keep, list(KEY_COLUMNS)].assign(label=labels[keep]).reset_index(drop=True)
    out[logit_column(names[0])] = 0.0
    out[logit_column(names[1])] = z[keep]
    return out


BINARY_TABLES = (
    "verdicts",
    "discrimination",
    "per_class_auc",
    "calibration",
    "temperature_scaling",
    "significance",
    "equity_summary",
    "equity",
    "label_shift",
)


def binary_section(
    exp: Experiment,
    classes: list[str],
    reference: pd.DataFrame,
    targets: list[BinaryTarget],
    predictions: dict[str, list[pd.DataFrame]],
) -> Section:
    """One CPFE audit per binary problem (targets sharing the collapse and class names are audited
    together): the reference platform's rows collapsed and relabelled, the targets' rows collapsed."""
    from mhaudit.audits.cpfe import CPFEInputs, audit_cpfe

    problems: dict[tuple, list[BinaryTarget]] = {}
    for t in targets:
        problems.setdefault(
            (tuple(t.binary.positive), tuple(t.binary.negative_classes(classes)), tuple(t.corpus.classes)), []
        ).append(t)
    home = reference[(reference["platform"] == exp.reference) | (reference["dataset"] == exp.reference)]
    datasets = sorted(home["dataset"].unique())
    if len(datasets) != 1:
        raise InputError(
            f"binary targets need one data set on the reference platform '{exp.reference}'; it holds "
            f"{', '.join(datasets) or 'none'}"
        )
    tables: dict[str, list[pd.DataFrame]] = {}
    for group in problems.values():
        first = group[0]
        names = list(first.corpus.classes)
        ref = collapse_binary(home, classes, first.binary, names, relabel=True)
        missing = sorted(set(names) - set(ref.loc[ref["split"].isin(["test", "calibration"]), "label"]))
        if missing:
            raise InputError(
                f"binary target {first.describe()}: the reference platform's test rows have no "
                f"row for {', '.join(missing)} once collapsed; its AUC is undefined"
            )
        rows = [
            collapse_binary(pd.concat(predictions[t.key], ignore_index=True), classes, t.binary, names, relabel=False)
            for t in group
        ]
        # the reference's data set names the reference, as a target may share its platform (Dreaddit is
        # Reddit); where a target's platform or data set has that name too, the reference's is marked
        reference_name = datasets[0]
        if any(((r["platform"] == reference_name) | (r["dataset"] == reference_name)).any() for r in rows):
            reference_name = f"{reference_name} (reference)"
            ref = ref.assign(dataset=reference_name)
        rows.insert(0, ref)
        options = exp.cpfe_options(reference_name, figures=False)
        audit = audit_cpfe(CPFEInputs(PredictionSet(pd.concat(rows, ignore_index=True), names)), options)
        label = f"{names[1]} vs {names[0]}: {first.binary.describe()}"
        for name in BINARY_TABLES:
            try:
                table = audit.table(name)
            except KeyError:
                continue
            if not table.empty:
                tables.setdefault(name, []).append(table.assign(binary=label)[["binary", *table.columns]])
    text = (
        "Binary targets scored by the multi-class models: each model's binary logit is log-sum-exp of the "
        "positive classes' logits minus log-sum-exp of the negative ones (P(positive) / (P(positive) + "
        "P(negative)) under its softmax). The reference platform's rows are collapsed the same way (rows of "
        "classes on neither side dropped) and serve as the reference; the CPFE axes run on the two-class "
        "problem (binary_discrimination: AUC of the positive class)."
    )
    return Section(
        "Binary targets",
        text,
        {f"binary_{name}": pd.concat(parts, ignore_index=True) for name, parts in tables.items()},
    )
