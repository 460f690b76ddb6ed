"""`mhaudit run EXPERIMENT.toml`: corpora -> models x seeds -> predictions -> attributions -> audit -> report.

Every step writes under the output folder, keyed by a hash of its inputs and options, so a re-run skips what is
finished (the corpora, `mhaudit.experiments.corpora`; a trained seed, its predictions, its attributions). Training
jobs go through the executor seam (`mhaudit.core.executors`). The designs ('reference', 'all-pairs') and binary
targets (`mhaudit.experiments.binary_targets`): docs/models.md. A deterministic model
(`mhaudit.models.is_deterministic`) is trained once, for the first seed. With `[label_source]` and `[validation]`
the other audits run beside the cross-platform one (`mhaudit.experiments.other_audits`), their combination, the
trust report, in the output folder (docs/report.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.executors import run_jobs
from mhaudit.core.progress import Progress, ensure
from mhaudit.experiments.binary_targets import BinaryTarget, binary_section
from mhaudit.experiments.checks import check_models_and_files, check_names
from mhaudit.experiments.config import OUTSIDE_KEYS, Experiment, ModelSpec
from mhaudit.experiments.corpora import build_binary_targets, build_corpus, import_corpora, keep, step_key
from mhaudit.experiments.explain import explain_corpus
from mhaudit.experiments.outside_models import (
    OUTSIDE_SEED,
    check_outside_classes,
    check_outside_models,
    model_loader,
    outside_digest,
    outside_loading,
    score_job,
)
from mhaudit.experiments.transfer import transfer_report
from mhaudit.report import AuditResult, Section, verdict_table, write_report
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.predictions import PredictionSet


def train_job(corpus_path: str, platform: str, spec: dict, seed: int, folder: str) -> str:
    """One model x seed x training platform (a top-level function so any executor can run it)."""
    from mhaudit.models import create, save_model
    from mhaudit.models.seeds import subsample_training, training_rows

    corpus = Corpus.read(corpus_path)
    rows = training_rows(corpus, platform)
    if spec.get("subsample"):
        rows = subsample_training(rows, spec["subsample"], seed)
    model = create(spec["name"], **{**spec["options"], "seed": seed}).fit(rows, corpus.classes)
    save_model(model, folder, trained_on=platform)
    return folder


def _predict_and_explain(
    folder: Path, spec: ModelSpec, corpus: Corpus, seed: int, binary_targets: list[BinaryTarget], load_model: Callable
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict]:
    """Predictions on the corpus, attributions, and raw predictions (model-class logits, the target's own
    labels) on each binary target by its key; each cached in the model's folder (an outside model's: the folder
    of its predictions). `load_model()` loads the model."""
    from mhaudit.tables.io import write_table
    from mhaudit.tables.predictions import predict_corpus

    preds_path, attr_path = folder / "predictions.parquet", folder / f"attributions-{spec.explain}.parquet"
    model = None
    if not preds_path.exists():
        model = load_model()
        write_table(predict_corpus(model, corpus, model_name=spec.key, seed=seed), preds_path)
    if spec.explain != "none" and not attr_path.exists():
        model = model or load_model()
        write_table(explain_corpus(model, corpus, spec.explain, n=spec.explain_sample, model_name=spec.key), attr_path)
    binary = {}
    for target in binary_targets:
        path = folder / f"binary-{target.key}.parquet"
        if not path.exists():
            model = model or load_model()
            scored = Corpus(target.corpus.frame, corpus.classes, {})  # the model's classes name the logits
            write_table(predict_corpus(model, scored, model_name=spec.key, seed=seed), path)
        binary[target.key] = pd.read_parquet(path)
    return (pd.read_parquet(preds_path), pd.read_parquet(attr_path) if spec.explain != "none" else None, binary)


def run_experiment(
    exp: Experiment, out: Path, *, executor: str = "local", workers: int = 1, progress: Progress | None = None
) -> AuditResult:
    """Run `exp` into `out`. The whole experiment is checked first (models, files, every platform and data set it
    names), so a mistake is one sentence with nothing written; then each long step is a stage of `progress`, what
    was cached or written a note."""
    progress = ensure(progress)
    out = Path(out)
    check_models_and_files(exp)
    outside = check_outside_models(exp)  # every outside model loads, before any work
    imported = {"cross-platform": build_corpus(exp, out, progress)} if exp.corpus else {}
    binary_targets = (
        build_binary_targets(exp, out, imported["cross-platform"][0].classes, progress) if exp.corpus else []
    )
    if exp.label_source:
        imported["label-source"] = import_corpora(exp, exp.label_source.corpus, out, progress)
    if exp.validation and exp.validation.items:
        imported["validation"] = import_corpora(exp, [exp.validation.items], out, progress)
    check_names(exp, *(imported[k][0] if k in imported else None for k in ("cross-platform", "label-source")))
    if exp.corpus:
        check_outside_classes(outside, imported["cross-platform"][0].classes)
    for corpus, path in [(c, p) for c, p, _ in imported.values()] + [(t.corpus, t.path) for t in binary_targets]:
        keep(corpus, path)
    result, classes = None, []
    places: list[tuple] = []  # (spec, platform, seed, folder) of each trained model
    if exp.corpus:
        result, places = _cross_platform(
            exp, out, imported["cross-platform"], binary_targets, executor, workers, progress
        )
        classes = imported["cross-platform"][0].classes
    if exp.label_source or exp.validation or exp.audits:
        result = _with_other_audits(exp, out, result, classes, places, imported, progress)
    assert result is not None, "Experiment's validator requires an audit to run"
    write_report(result, out)
    progress.note(f"report: {out / 'report.html'}")
    return result


def _cross_platform(
    exp: Experiment,
    out: Path,
    imported: tuple[Corpus, Path, str],
    binary_targets: list[BinaryTarget],
    executor: str,
    workers: int,
    progress: Progress,
) -> tuple[AuditResult, list]:
    """Train, predict, explain and audit; the result and each model's (spec, platform, seed, folder)."""
    corpus, corpus_path, corpus_key = imported
    platforms = (
        [exp.reference]
        if exp.design == "reference" and exp.reference
        else sorted(corpus.frame.loc[corpus.frame["split"] == "train", "platform"].unique())
    )
    places, jobs, scoring = _plan(exp, out, imported, platforms, progress)
    with progress.stage(f"train {len(jobs)} model x seed job(s) of {exp.name}", total=len(jobs)):
        run_jobs(train_job, jobs, executor=executor, workers=workers, progress=progress)
    for job in jobs:
        progress.note(
            f"trained {job['spec']['label'] or job['spec']['name']} seed {job['seed']} on "
            f"{job['platform']}: {job['folder']}"
        )
    if scoring:  # the outside models' predictions, through the same executor as the training
        with progress.stage(f"predict with {len(scoring)} outside model(s) of {exp.name}", total=len(scoring)):
            run_jobs(score_job, scoring, executor=executor, workers=workers, progress=progress)
    predictions: dict[str, list[pd.DataFrame]] = {}  # by platform
    binary: dict[str, list[pd.DataFrame]] = {}  # by binary target
    attributions = []
    with progress.stage(f"predict and explain {len(places)} model(s) of {exp.name}", total=len(places)):
        for spec, platform, seed, folder in places:
            load = model_loader(exp, spec, folder, platform)
            preds, attr, on_binary = _predict_and_explain(folder, spec, corpus, seed, binary_targets, load)
            predictions.setdefault(platform, []).append(preds)
            for key, table in on_binary.items():
                binary.setdefault(key, []).append(table)
            if attr is not None:
                attributions.append(attr)
            progress.advance()
    if exp.design != "reference":
        return transfer_report(exp, corpus, predictions), places
    reference = pd.concat(predictions[platforms[0]], ignore_index=True)  # the reference design's one platform
    result = _reference_audit(
        exp, corpus, reference, pd.concat(attributions, ignore_index=True) if attributions else None, progress
    )
    return _with_extras(exp, corpus, result, reference, binary_targets, binary, places), places


def _plan(
    exp: Experiment, out: Path, imported: tuple[Corpus, Path, str], platforms: list[str], progress: Progress
) -> tuple[list, list[dict], list[dict]]:
    """Each model's (spec, platform, seed, folder), the training jobs and the outside models' scoring jobs still to
    run (a finished step is kept). An outside model has one place, on the reference, seed 0, its folder keyed by
    the content hash of its files."""
    from mhaudit.models import training_seeds

    _, corpus_path, corpus_key = imported
    places, jobs, scoring = [], [], []
    for spec in exp.model:
        if spec.outside:
            key = step_key(corpus_key, spec.model_dump(exclude={"label"}), outside_digest(exp, spec), platforms[0])
            folder = out / "models" / spec.key / platforms[0] / key / "outside"
            places.append((spec, platforms[0], OUTSIDE_SEED, folder))
            if (folder / "predictions.parquet").exists():
                progress.note(f"predict with {spec.key} on the corpus: done before (same model files), kept")
            else:
                folder.mkdir(parents=True, exist_ok=True)
                scoring.append(
                    {
                        "loading": outside_loading(exp, spec),
                        "corpus_path": str(corpus_path),
                        "platform": platforms[0],
                        "model_name": spec.key,
                        "out_file": str(folder / "predictions.parquet"),
                    }
                )
            continue
        seeds, note = training_seeds(spec.name, exp.seeds, spec.key)  # a deterministic model: the first seed only
        if note:
            progress.note(note)
        for platform in platforms:
            trained = spec.model_dump(exclude=set(OUTSIDE_KEYS))  # unset for a trained model: earlier keys hold
            key = step_key(corpus_key, trained, platform)
            for seed in seeds:
                folder = out / "models" / spec.key / platform / key / f"seed-{seed}"
                places.append((spec, platform, seed, folder))
                if (folder / "mhaudit-model.json").exists():
                    progress.note(f"train {spec.key} seed {seed} on {platform}: done before, kept")
                else:
                    jobs.append(
                        {
                            "corpus_path": str(corpus_path),
                            "platform": platform,
                            "spec": trained,
                            "seed": seed,
                            "folder": str(folder),
                        }
                    )
    return places, jobs, scoring


def _with_extras(
    exp: Experiment,
    corpus: Corpus,
    result: AuditResult,
    reference: pd.DataFrame,
    binary_targets,
    binary: dict,
    places: list,
) -> AuditResult:
    """The cross-platform result with the binary targets' section and verdicts and the fine-tuning comparison: a
    new result (the audit's stays as it returned)."""
    sections, verdicts = [], result.verdicts
    if binary_targets:
        section = binary_section(exp, corpus.classes, reference, binary_targets, binary)
        found = section.tables.pop("binary_verdicts", None)  # one verdicts table: the binary problems' join it
        if found is not None:
            found = found.assign(target=found["target"] + " [" + found["binary"] + "]").drop(columns="binary")
            verdicts = verdict_table([*verdicts.to_dict("records"), *found.to_dict("records")])
        sections.append(section)
    adapted = [
        _adaptation(folder, spec, corpus, seed, exp) for spec, _, seed, folder in places if spec.adapt_epochs > 0
    ]
    if adapted:
        sections.append(
            Section(
                "Temperature scaling vs fine-tuning",
                "On each target's stored calibration split: a temperature "
                "fitted there (ts) vs the model fine-tuned there (ft), both evaluated on the target's other rows "
                "(CPFE paper, section 4.6).",
                {"temperature_vs_finetuning": pd.concat(adapted, ignore_index=True)},
            )
        )
    return replace(
        result,
        title=f"{exp.name}: {result.title}",
        verdicts=verdicts,
        sections=[*result.sections, *sections],
        options={**result.options, "experiment": exp.model_dump(mode="json")},
    )


def _with_other_audits(
    exp: Experiment,
    out: Path,
    cross: AuditResult | None,
    classes: list[str],
    places: list,
    imported: dict,
    progress: Progress,
) -> AuditResult:
    """[label_source], [validation] and [[audits]]: each audit's report in its own folder (cross-platform/,
    label-source/, validation/, <audit>/) and their combination returned, for the trust report in `out`; alone, the
    one audit's result."""
    from mhaudit.experiments import file_audits, other_audits
    from mhaudit.report.combine import combine_results

    first: dict[str, tuple[int, Path, Callable]] = {}  # each model's first seed on the reference: in the other audits
    for spec, platform, seed, folder in places:
        first.setdefault(spec.key, (seed, folder, model_loader(exp, spec, folder, platform)))
    results = {"cross-platform": cross} if cross is not None else {}
    if exp.label_source:
        corpus, _, key = imported["label-source"]
        with progress.stage(f"label-source audit of {exp.name}"):
            results["label-source"] = other_audits.label_source(exp, corpus, key, classes, first)
    if exp.validation:
        items = (imported["validation"][0], imported["validation"][2]) if "validation" in imported else None
        with progress.stage(f"validation report of {exp.name}"):
            results["validation"] = other_audits.validation(exp, items, classes, first)
    for i, spec in enumerate(exp.audits):
        with progress.stage(f"{spec.audit} audit of {exp.name}"):
            name = spec.audit if [s.audit for s in exp.audits].count(spec.audit) == 1 else f"{spec.audit}-{i + 1}"
            results[name] = file_audits.run(spec, exp.folder, progress)
    if len(results) == 1:
        return next(iter(results.values()))
    for name, result in results.items():
        write_report(result, out / name)
    return combine_results(list(results.values()), title=f"{exp.name}: trust report")


def _adaptation(folder: Path, spec: ModelSpec, corpus: Corpus, seed: int, exp: Experiment) -> pd.DataFrame:
    from mhaudit.audits.cpfe.adaptation import adaptation_rows, has_adapt
    from mhaudit.models import load_model
    from mhaudit.tables.io import write_table

    path = folder / f"adaptation-{spec.adapt_epochs}.parquet"
    if not path.exists():
        model = load_model(folder)
        if not has_adapt(model):
            raise InputError(
                f"model '{spec.key}' cannot be fine-tuned on a target (adapt_epochs); only transformer models can"
            )
        targets = sorted(set(corpus.frame["platform"]) - {exp.reference})
        write_table(
            pd.DataFrame(
                [
                    adaptation_rows(
                        model,
                        spec.key,
                        seed,
                        corpus.frame,
                        corpus.classes,
                        p,
                        epochs=spec.adapt_epochs,
                        n_bins=exp.audit.n_bins,
                    )
                    for p in targets
                ]
            ),
            path,
        )
    return pd.read_parquet(path)


def _reference_audit(
    exp: Experiment, corpus: Corpus, predictions: pd.DataFrame, attributions: pd.DataFrame | None, progress: Progress
) -> AuditResult:
    from mhaudit.audits.cpfe import CPFEInputs, audit_cpfe

    options = exp.cpfe_options()
    inputs = CPFEInputs(
        PredictionSet(predictions, corpus.classes), corpus.frame.set_index("id")["text"], attributions, corpus.synthetic
    )
    return audit_cpfe(inputs, options, progress=progress)
