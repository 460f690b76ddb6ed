"""`mhaudit run EXPERIMENT.toml`: corpora -> models x seeds -> predictions -> attributions -> audit -> report.

Every step writes under the output folder, keyed by a hash of its inputs and options, so a re-run
skips what is finished (a trained seed, its predictions, its attributions). Training jobs go through
the executor seam (`mhaudit.parallel`). Two designs: 'reference' (train on one platform, audit every
other: the CPFE paper's) and 'all-pairs' (train on every platform, evaluate on every platform: a
transfer matrix whose diagonal is in-platform).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from mhaudit.config import Experiment, ModelSpec
from mhaudit.corpus.importing import import_source
from mhaudit.corpus.labelling import MultiLabelPolicy
from mhaudit.corpus.schema import Corpus
from mhaudit.corpus.sources import ReadOptions
from mhaudit.corpus.splits import assign_calibration
from mhaudit.errors import InputError
from mhaudit.parallel import run_jobs
from mhaudit.predictions import PredictionSet, sha256_file
from mhaudit.report import Result, Section, write_report


def step_key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def build_corpus(exp: Experiment, out: Path, log=print) -> tuple[Corpus, Path, str]:
    """Import and merge the experiment's corpora once; cached by the specs and the files' contents."""
    files = {p: sha256_file(exp.folder / p) if (exp.folder / p).exists() else "missing"
             for spec in exp.corpus for p in spec.paths}
    calibration = (exp.design, exp.reference, exp.audit.calibration_fraction, exp.audit.seed)
    key = step_key([c.model_dump() for c in exp.corpus], files, calibration)
    path = out / "corpus" / f"{key}.parquet"
    if path.exists():
        log(f"corpus: cached {path}")
        return Corpus.read(path), path, key
    corpora = []
    for spec in exp.corpus:
        options = ReadOptions(encoding=spec.encoding, platform=spec.platform, dataset=spec.dataset,
                              text_col=spec.text_col, label_col=spec.label_col, id_col=spec.id_col,
                              label_source=spec.label_source)
        result = import_source(spec.source, [exp.folder / p for p in spec.paths], mapping=spec.mapping,
                               options=options, policy=MultiLabelPolicy(spec.multi_label), priority=spec.priority,
                               split=spec.split, seed=spec.seed, drop_empty=spec.drop_empty)
        corpora.append(result.corpus)
        log(f"corpus: {spec.source} -> {len(result.corpus.frame)} rows ({result.corpus.meta['mapping']})")
    classes = corpora[0].classes
    for spec, c in zip(exp.corpus[1:], corpora[1:]):
        if c.classes != classes:
            raise InputError(f"corpus '{spec.source}' maps to classes {c.classes}, not {classes}; every corpus of "
                             "an experiment must map to the same classes")
    frame = pd.concat([c.frame for c in corpora], ignore_index=True)
    if exp.design == "reference":  # one stored calibration split per target: TS and fine-tuning share it
        for platform in sorted(set(frame["platform"]) - {exp.reference}):
            if not (frame.loc[frame["platform"] == platform, "split"] == "calibration").any():
                frame = assign_calibration(frame, platform, fraction=exp.audit.calibration_fraction,
                                           seed=exp.audit.seed)
    merged = Corpus.build(frame, classes,
                          meta={"mapping": " | ".join(c.meta["mapping"] for c in corpora), "synthetic": False})
    merged.write(path)
    return merged, path, key


def train_job(corpus_path: str, platform: str, spec: dict, seed: int, folder: str) -> str:
    """One model x seed x training platform (a top-level function so any executor can run it)."""
    from mhaudit.models import create, save_model
    from mhaudit.training import training_rows

    corpus = Corpus.read(corpus_path)
    rows = training_rows(corpus, platform)
    if spec.get("subsample") and spec["subsample"] < len(rows):
        share = spec["subsample"] / len(rows)
        rows = rows.groupby(["split", "label"], group_keys=False).sample(frac=share, random_state=seed)
    model = create(spec["name"], **{**spec["options"], "seed": seed}).fit(rows, corpus.classes)
    save_model(model, folder)
    return folder


def _explain(model, spec: ModelSpec, corpus: Corpus, seed: int) -> pd.DataFrame:
    test = corpus.frame[corpus.frame["split"] == "test"]
    tables = []
    for (platform, dataset), rows in test.groupby(["platform", "dataset"]):
        rows = rows.sample(n=min(spec.explain_sample, len(rows)), random_state=seed)
        if spec.explain == "linear":
            table = model.explain(rows["text"].tolist())
        else:
            from mhaudit.attribution.gradients import attribution_table

            table = attribution_table(model.hf_model, model.tokenizer, rows["text"].tolist(), corpus.classes,
                                      method=spec.explain, labels=rows["label"].tolist(), sample=len(rows),
                                      seed=seed, max_length=model.options.get("max_length", 64))
        tables.append(table.assign(model=spec.key, seed=seed, platform=platform, dataset=dataset))
    return pd.concat(tables, ignore_index=True)


def _predict_and_explain(folder: Path, spec: ModelSpec, corpus: Corpus, seed: int) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    from mhaudit.models import load_model
    from mhaudit.predictions import predict_corpus
    from mhaudit.training import write_table

    preds_path, attr_path = folder / "predictions.parquet", folder / f"attributions-{spec.explain}.parquet"
    model = None
    if not preds_path.exists():
        model = load_model(folder)
        write_table(predict_corpus(model, corpus, model_name=spec.key, seed=seed), preds_path)
    if spec.explain != "none" and not attr_path.exists():
        model = model or load_model(folder)
        write_table(_explain(model, spec, corpus, seed), attr_path)
    return pd.read_parquet(preds_path), pd.read_parquet(attr_path) if spec.explain != "none" else None


def run_experiment(exp: Experiment, out: Path, *, executor: str = "local", workers: int = 1, log=print) -> Result:
    out = Path(out)
    corpus, corpus_path, corpus_key = build_corpus(exp, out, log)
    platforms = [exp.reference] if exp.design == "reference" else sorted(
        corpus.frame.loc[corpus.frame["split"] == "train", "platform"].unique())
    places, jobs = [], []
    for spec in exp.model:
        for platform in platforms:
            key = step_key(corpus_key, spec.model_dump(), platform)
            for seed in exp.seeds:
                folder = out / "models" / spec.key / platform / key / f"seed-{seed}"
                places.append((spec, platform, seed, folder))
                if (folder / "mhaudit-model.json").exists():
                    log(f"train {spec.key} on {platform}, seed {seed}: done before, kept")
                else:
                    jobs.append({"corpus_path": str(corpus_path), "platform": platform, "spec": spec.model_dump(),
                                 "seed": seed, "folder": str(folder)})
    for folder in run_jobs(train_job, jobs, executor=executor, workers=workers):
        log(f"trained {folder}")
    predictions, attributions = {}, []
    for spec, platform, seed, folder in places:
        preds, attr = _predict_and_explain(folder, spec, corpus, seed)
        predictions.setdefault(platform, []).append(preds)
        if attr is not None:
            attributions.append(attr)
    if exp.design == "reference":
        result = _reference_audit(exp, corpus, pd.concat(predictions[exp.reference], ignore_index=True),
                                  pd.concat(attributions, ignore_index=True) if attributions else None)
        adapted = [_adaptation(folder, spec, corpus, seed, exp) for spec, _, seed, folder in places
                   if spec.adapt_epochs > 0]
        if adapted:
            result.sections.append(Section(
                "Temperature scaling vs fine-tuning", "On each target's stored calibration split: a temperature "
                "fitted there (ts) vs the model fine-tuned there (ft), both evaluated on the target's other test "
                "rows (CPFE paper, section 4.6).", {"temperature_vs_finetuning": pd.concat(adapted, ignore_index=True)}))
    else:
        result = _transfer_report(exp, corpus, predictions)
    write_report(result, out)
    log(f"report: {out / 'report.html'}")
    return result


def _adaptation(folder: Path, spec: ModelSpec, corpus: Corpus, seed: int, exp: Experiment) -> pd.DataFrame:
    from mhaudit.audits.adaptation import adaptation_rows, has_adapt
    from mhaudit.models import load_model
    from mhaudit.training import write_table

    path = folder / f"adaptation-{spec.adapt_epochs}.parquet"
    if not path.exists():
        model = load_model(folder)
        if not has_adapt(model):
            raise InputError(f"model '{spec.key}' cannot be fine-tuned on a target (adapt_epochs); only "
                             "transformer models can")
        targets = sorted(set(corpus.frame["platform"]) - {exp.reference})
        write_table(pd.DataFrame([adaptation_rows(model, spec.key, seed, corpus.frame, corpus.classes, p,
                                                  epochs=spec.adapt_epochs, n_bins=exp.audit.n_bins)
                                  for p in targets]), path)
    return pd.read_parquet(path)


def _reference_audit(exp: Experiment, corpus: Corpus, predictions: pd.DataFrame,
                     attributions: pd.DataFrame | None) -> Result:
    from mhaudit.audits.cpfe import CPFEOptions, audit_cpfe

    a = exp.audit
    options = CPFEOptions(reference=exp.reference, n_bins=a.n_bins, n_boot_ece=a.n_boot_ece,
                          n_boot_significance=a.n_boot, seed=a.seed, calibration_fraction=a.calibration_fraction,
                          correction=a.correction, non_independent=tuple(tuple(p) for p in a.non_independent))
    result = audit_cpfe(PredictionSet(predictions, corpus.classes), options,
                        texts=corpus.frame.set_index("id")["text"], attributions=attributions,
                        synthetic=corpus.synthetic)
    result.title = f"{exp.name}: {result.title}"
    result.options["experiment"] = exp.model_dump(mode="json")
    return result


def transfer_matrix(predictions: dict[str, list[pd.DataFrame]], classes: list[str], n_bins: int = 10) -> pd.DataFrame:
    """Macro-AUC, macro-F1 and ECE of every (model, training platform) on every evaluation platform,
    mean and SD over seeds; the diagonal (train = evaluation platform) is in-platform."""
    from sklearn.metrics import f1_score

    from mhaudit.predictions import scores
    from mhaudit.stats.auc import macro_auc
    from mhaudit.stats.calibration import ece, softmax

    rows = []
    for train_platform, tables in predictions.items():
        frame = pd.concat(tables, ignore_index=True)
        for (model, seed, platform, dataset), g in frame.groupby(["model", "seed", "platform", "dataset"]):
            y = pd.Categorical(g["label"], categories=classes).codes
            probs = softmax(scores(g, classes))
            rows.append({"model": model, "seed": seed, "train_platform": train_platform, "platform": platform,
                         "dataset": dataset, "n": len(g), "macro_auc": macro_auc(y, probs, len(classes)),
                         "macro_f1": f1_score(y, probs.argmax(1), average="macro", zero_division=0),
                         "ece": ece(probs, y, n_bins)})
    per_seed = pd.DataFrame(rows)
    keys = ["model", "train_platform", "platform", "dataset"]
    table = per_seed.groupby(keys).agg(n=("n", "first"), n_seeds=("seed", "nunique"),
                                       macro_auc=("macro_auc", "mean"), macro_auc_sd=("macro_auc", "std"),
                                       macro_f1=("macro_f1", "mean"), ece=("ece", "mean")).reset_index()
    table["in_platform"] = table["train_platform"] == table["platform"]
    return table


def _transfer_report(exp: Experiment, corpus: Corpus, predictions: dict[str, list[pd.DataFrame]]) -> Result:
    from mhaudit.audits.cpfe.figures import heatmap

    table = transfer_matrix(predictions, corpus.classes, exp.audit.n_bins)
    figures = {f"Transfer matrix, macro-AUC ({model})": heatmap(rows, "macro_auc", f"{model}: macro-AUC",
                                                               index="train_platform", columns="platform")
               for model, rows in table.groupby("model")}
    home = table[table["in_platform"]].set_index(["model", "train_platform"])["macro_auc"]
    away = table[~table["in_platform"]].groupby(["model", "train_platform"])["macro_auc"].mean()
    gap = (home - away).dropna()
    text = (f"Every model trained on each of {table['train_platform'].nunique()} platforms and scored on every "
            "platform's test split (mean over seeds). " + (
                f"Macro-AUC falls by {gap.min():.3f} to {gap.max():.3f} from in-platform to the mean of the "
                "other platforms." if len(gap) else ""))
    return Result(f"{exp.name}: all-pairs transfer", [Section("Transfer matrix", text, {"transfer": table}, figures)],
                  synthetic=corpus.synthetic, options={"experiment": exp.model_dump(mode="json")})

