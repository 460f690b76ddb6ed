"""`mhaudit demo`: the whole job on the built-in synthetic corpora, offline, as one trust report.

`run_trust_demo` writes three audits of the same two models, the label-free estimate and the report that
combines them; docs/report.md ("The demo") says what each folder holds. The folders come from `run_demo`
(cross-platform/), `run_divergence_demo` (label-source/), `run_estimate_demo` (expected/) and
`run_validation_demo` (validation/).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.core.progress import Progress, ensure
from mhaudit.models import create
from mhaudit.report import AuditResult, Section, write_report
from mhaudit.synthetic.simulate import SimulationConfig, simulate
from mhaudit.tables.corpus.describe import describe
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.io import read_table, write_table
from mhaudit.tables.predictions import PredictionSet, logit_column, predict_corpus

DEMO_MODELS = ("tfidf-lr", "char-tfidf-lr")
# The divergence demo keeps every table but trims the slow parts: two masks (plus none) refitted for C
# only, leave-one-domain-out for A and C, fewer resamples.
DIVERGENCE_DEMO: dict = dict(
    human=("synthetic_forum", "synthetic_tweets_gold"),
    auto=("synthetic_tweets_auto", "synthetic_forum_auto"),
    masks=("none", "pos_only", "random_pos"),
    mask_channels=("C",),
    lodo_channels=("A", "C"),
    n_boot=2000,
    n_boot_clusters=30,
)


def label_source_agreement(frame: pd.DataFrame) -> pd.DataFrame:
    """Agreement of each synthetic automatic data set with the true labels of the same posts."""
    truth = frame[frame["label_source"] == "synthetic-true"].set_index("id")["label"]
    rows = []
    for dataset, auto in frame[frame["label_source"] == "synthetic-auto"].groupby("dataset"):
        paired = auto.assign(truth=auto["id"].str.removeprefix("auto-").map(truth)).dropna(subset=["truth"])
        rows.append(
            {
                "dataset": dataset,
                "n": len(paired),
                "agreement": float((paired["label"] == paired["truth"]).mean()),
                "cohen_kappa": float(cohen_kappa_score(paired["truth"], paired["label"])),
            }
        )
    return pd.DataFrame(rows)


def run_demo(
    out: Path,
    *,
    seed: int = 0,
    n_per_platform: int = 2000,
    n_boot: int = 2000,
    n_boot_ece: int = 1000,
    progress: Progress | None = None,
) -> AuditResult:
    """The cross-platform half of the demo; stages (and the audit's own) are told to `progress`."""
    progress = ensure(progress)
    config = SimulationConfig(seed=seed, n_per_platform=n_per_platform)
    with progress.stage(f"synthetic corpus, seed {seed}"):
        corpus = simulate(config)
        corpus.write(out / "corpus.parquet")
    reference = next(p.name for p in config.platforms if p.register == config.reference)
    frame = corpus.frame
    true_rows = frame[frame["label_source"] == "synthetic-true"]
    train = true_rows[(true_rows["platform"] == reference) & true_rows["split"].isin(["train", "val"])]
    test = frame[frame["split"] == "test"]
    predictions, attributions = [], []
    for name in DEMO_MODELS:
        with progress.stage(f"train {name} seed {seed} on {reference}"):
            model = create(name, seed=seed).fit(train, corpus.classes, progress=progress)
        predictions.append(predict_corpus(model, corpus, model_name=name, seed=seed, splits=("test",)))
        for (platform, dataset), rows in test.groupby(["platform", "dataset"]):  # each data set is a place of its own
            attributions.append(
                model.explain(rows["text"].tolist()).assign(model=name, seed=seed, platform=platform, dataset=dataset)
            )
    predictions = pd.concat(predictions, ignore_index=True)
    attributions = pd.concat(attributions, ignore_index=True)
    write_table(predictions, out / "predictions.parquet")
    write_table(attributions, out / "attributions.parquet")
    inputs = CPFEInputs(
        PredictionSet(predictions, corpus.classes),
        frame.drop_duplicates("id").set_index("id")["text"],
        attributions,
        synthetic=True,
    )
    audit = audit_cpfe(
        inputs,
        CPFEOptions(reference=reference, seed=seed, n_boot_significance=n_boot, n_boot_ece=n_boot_ece),
        progress=progress,
    )
    settings = pd.DataFrame([{"setting": k, "value": str(v)} for k, v in corpus.meta["simulation"].items()])
    result = AuditResult(
        title="mhaudit demo: cross-platform audit of a baseline on the synthetic corpus",
        summary=audit.summary,
        verdicts=audit.verdicts,
        provenance=audit.provenance,
        synthetic=True,
        options={"seed": seed, "n_per_platform": n_per_platform, "models": list(DEMO_MODELS), **audit.options},
        sections=[
            *audit.sections,
            Section(
                "Synthetic corpus",
                "Generated by mhaudit.synthetic.simulate with the settings below; "
                "shifts are put in on purpose so the audit has something to find.",
                {"simulation settings": settings, **describe(corpus)},
            ),
            Section(
                "Label sources",
                "The automatic label source against the true labels of the same texts.",
                {"agreement": label_source_agreement(frame)},
            ),
        ],
    )
    write_report(result, out)
    return result


def run_divergence_demo(
    out: Path, *, seed: int = 0, models: tuple[str, ...] = DEMO_MODELS, progress: Progress | None = None
) -> tuple[AuditResult, PredictionSet]:
    """The label-source audit on the SYNTHETIC divergence corpus (human labels follow style, auto labels a
    keyword rule), `models` (TF-IDF models, without a temperature: the split has no val rows) fitted to its human
    training split as baselines: writes out/corpus.parquet,
    out/predictions.parquet, the report and the conflict sample. Returns the audit and the predictions."""
    from mhaudit.audits.divergence import DivergenceInputs, DivergenceOptions, audit_divergence
    from mhaudit.audits.divergence.baselines import baselines_from_predictions
    from mhaudit.audits.divergence.conflicts import write_conflicts
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    progress = ensure(progress)
    corpus = simulate_divergence(DivergenceConfig(seed=seed))
    corpus.write(out / "corpus.parquet")
    train = corpus.frame[(corpus.frame["dataset"] == DIVERGENCE_DEMO["human"][0]) & (corpus.frame["split"] == "train")]
    parts = []
    for name in models:
        with progress.stage(f"train {name} seed {seed} on the human labels"):  # train split only: no temperature
            model = create(name, seed=seed, calibrate=False).fit(train, corpus.classes, progress=progress)
        parts.append(predict_corpus(model, corpus, model_name=name, seed=seed, splits=("test",)))
    predictions = PredictionSet(pd.concat(parts, ignore_index=True), corpus.classes)
    write_table(predictions.frame, out / "predictions.parquet")
    inputs = DivergenceInputs(corpus, baselines_from_predictions(predictions, corpus.classes[-1]))
    audit = audit_divergence(inputs, DivergenceOptions(**DIVERGENCE_DEMO, seed=seed), progress=progress)
    write_conflicts(audit.outputs["conflict_counts"], audit.outputs["conflict_sample"], out)
    write_report(audit, out)
    return audit, predictions


VALIDATION_DATASET = "synthetic_tweets_gold"  # the posts the synthetic annotators label
WEAK_LABELER = "keyword-rule"


def validation_labels(
    corpus: pd.DataFrame, predictions: PredictionSet, *, n_items: int = 300, seed: int = 0
) -> pd.DataFrame:
    """A SYNTHETIC labels table for `n_items` posts of VALIDATION_DATASET: the keyword rule (kind lexicon,
    the weak labeler), each model's predicted class (kind model), two annotators who flip the post's
    human label with 5% and 8% error, and an adjudicator who resolves their disagreements."""
    from mhaudit.synthetic.simulate_divergence import mentions_stress_topic
    from mhaudit.synthetic.simulate_labels import labels_rows, simulate_annotators

    rng = np.random.default_rng(seed)
    pool = corpus[corpus["dataset"] == VALIDATION_DATASET]
    posts = pool.iloc[np.sort(rng.choice(len(pool), size=min(n_items, len(pool)), replace=False))]
    items = posts["id"].astype(str).to_numpy()
    positive = predictions.classes[-1]
    truth = (posts["label"] == positive).to_numpy(dtype=int)
    values = {WEAK_LABELER: ("lexicon", posts["text"].map(mentions_stress_topic).to_numpy(dtype=int))}
    frame = predictions.frame.set_index("id")
    for model, rows in frame.groupby("model", sort=False):
        logits = rows.loc[items, [logit_column(c) for c in predictions.classes]].to_numpy()
        values[str(model)] = ("model", (logits.argmax(axis=1) == predictions.classes.index(positive)).astype(int))
    return pd.concat(
        [labels_rows(items, values, "stress"), simulate_annotators(items, truth, (0.05, 0.08), "stress", rng)],
        ignore_index=True,
    )


def run_validation_demo(
    out: Path, corpus: pd.DataFrame, predictions: PredictionSet, *, seed: int = 0, progress: Progress | None = None
) -> AuditResult:
    """The weak-label validation on `validation_labels`: the keyword rule and each model against the
    annotators' reference; writes out/labels.parquet and the report."""
    from mhaudit.audits.agreement import AgreementInputs, AgreementOptions, audit_agreement

    labels = validation_labels(corpus, predictions, seed=seed)
    write_table(labels, out / "labels.parquet")
    models = tuple(dict.fromkeys(predictions.frame["model"].astype(str)))
    audit = audit_agreement(
        AgreementInputs(labels, synthetic=True),
        AgreementOptions(task="stress", weak_labeler=WEAK_LABELER, models=models, seed=seed),
        progress=progress,
    )
    write_report(audit, out)
    return audit


def run_estimate_demo(
    out: Path, predictions: PredictionSet, reference: str, *, seed: int = 0, progress: Progress | None = None
) -> AuditResult:
    """The label-free estimate on the cross-platform predictions: the reference platform's labelled test rows
    calibrate; every other platform's rows are targets with their labels hidden."""
    from mhaudit.audits.estimate import EstimateInputs, EstimateOptions, audit_estimate

    frame = predictions.frame
    home = frame["platform"] == reference
    hidden = frame[~home].assign(label=None)
    inputs = EstimateInputs(
        PredictionSet(frame[home].reset_index(drop=True), predictions.classes),
        PredictionSet(hidden.reset_index(drop=True), predictions.classes),
        synthetic=True,
    )
    audit = audit_estimate(inputs, EstimateOptions(n_boot=500, seed=seed), progress=progress)
    write_report(audit, out)
    return audit


def run_trust_demo(
    out: Path, *, seed: int = 0, n_per_platform: int = 2000, progress: Progress | None = None
) -> dict[str, AuditResult]:
    """The four audits of the demo's models into out/cross-platform, out/expected, out/label-source and
    out/validation, and their combined report into out. Returns the four results by folder name ("" for the
    combined one)."""
    from mhaudit.report.combine import combine_results

    results = {
        "cross-platform": run_demo(out / "cross-platform", seed=seed, n_per_platform=n_per_platform, progress=progress)
    }
    cross, options = read_table(out / "cross-platform" / "predictions.parquet"), results["cross-platform"].options
    results["expected"] = run_estimate_demo(
        out / "expected", PredictionSet(cross, options["classes"]), options["reference"], seed=seed, progress=progress
    )
    results["label-source"], predictions = run_divergence_demo(out / "label-source", seed=seed, progress=progress)
    corpus = Corpus.read(out / "label-source" / "corpus.parquet").frame
    results["validation"] = run_validation_demo(out / "validation", corpus, predictions, seed=seed, progress=progress)
    combined = combine_results(
        list(results.values()), title="mhaudit demo: trust report for tfidf-lr and char-tfidf-lr"
    )
    write_report(combined, out)
    return {**results, "": combined}
