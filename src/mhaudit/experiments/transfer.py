"""The all-pairs design's report: every model trained on each platform and scored on every platform."""

from __future__ import annotations

import pandas as pd

from mhaudit.experiments.config import Experiment
from mhaudit.report import AuditResult, Section
from mhaudit.tables.corpus.schema import Corpus


def transfer_matrix(predictions: dict[str, list[pd.DataFrame]], classes: list[str], n_bins: int = 10) -> pd.DataFrame:
    """Macro-AUC, macro-F1 and ECE of every (model, training platform) on every evaluation platform,
    mean and SD over seeds; the diagonal (train = evaluation platform) is in-platform."""
    from mhaudit.stats.auc import macro_auc
    from mhaudit.stats.calibration import ece, softmax
    from mhaudit.stats.f1 import macro_f1, tallies
    from mhaudit.tables.corpus.schema import label_codes
    from mhaudit.tables.predictions import scores

    rows = []
    for train_platform, tables in predictions.items():
        frame = pd.concat(tables, ignore_index=True)
        for (model, seed, platform, dataset), g in frame.groupby(["model", "seed", "platform", "dataset"]):
            y = label_codes(g["label"], classes)
            probs = softmax(scores(g, classes))
            rows.append(
                {
                    "model": model,
                    "seed": seed,
                    "train_platform": train_platform,
                    "platform": platform,
                    "dataset": dataset,
                    "n": len(g),
                    "macro_auc": macro_auc(y, probs, len(classes)),
                    "macro_f1": float(macro_f1(tallies(y, probs.argmax(1), len(classes)))),
                    "ece": ece(probs, y, n_bins),
                }
            )
    per_seed = pd.DataFrame(rows)
    keys = ["model", "train_platform", "platform", "dataset"]
    table = (
        per_seed.groupby(keys)
        .agg(
            n=("n", "first"),
            n_seeds=("seed", "nunique"),
            macro_auc=("macro_auc", "mean"),
            macro_auc_sd=("macro_auc", "std"),
            macro_f1=("macro_f1", "mean"),
            ece=("ece", "mean"),
        )
        .reset_index()
    )
    table["in_platform"] = table["train_platform"] == table["platform"]
    return table


def transfer_report(exp: Experiment, corpus: Corpus, predictions: dict[str, list[pd.DataFrame]]) -> AuditResult:
    from mhaudit.audits.cpfe.figures import heatmap

    table = transfer_matrix(predictions, corpus.classes, exp.audit.n_bins)
    figures = {
        f"Transfer matrix, macro-AUC ({model})": heatmap(
            rows, "macro_auc", f"{model}: macro-AUC", index="train_platform", columns="platform"
        )
        for model, rows in table.groupby("model")
    }
    home = table[table["in_platform"]].set_index(["model", "train_platform"])["macro_auc"]
    away = table[~table["in_platform"]].groupby(["model", "train_platform"])["macro_auc"].mean()
    gap = (home - away).dropna()
    text = (
        f"Every model trained on each of {table['train_platform'].nunique()} platforms and judged on every "
        "platform: on its own the test rows, elsewhere every row (mean over seeds). "
        + (
            f"Macro-AUC falls by {gap.min():.3f} to {gap.max():.3f} from in-platform to the mean of the "
            "other platforms."
            if len(gap)
            else ""
        )
    )
    return AuditResult(
        f"{exp.name}: all-pairs transfer",
        [Section("Transfer matrix", text, {"transfer": table}, figures)],
        synthetic=corpus.synthetic,
        options={"experiment": exp.model_dump(mode="json")},
    )
