"""Monitor a deployed classifier on the collected stream (docs/monitor.md).

`monitor_stream` scores the posts of a post store the model has not scored (audits.monitor.scores), then
reads every scored post's time, length, languages, categories and scores (never its text) and analyses them
window by window (audits.monitor.windows). Verdict rows name the windows that cross a threshold: the score
distribution's PSI against the reference (warn at 0.10, fail at 0.25) and the change detector's alarms. On an
alert, the latest alerting window's posts get a suggested validation sample (`alert/<window>/`): post ids, strata
and design weights as `labels sample --strategy estimate` draws them, with the window's predictions, so
`mhaudit annotate --store` shows their text from the store and `audit certify` certifies the
model there.

Outputs carry counts, rates and pseudonymous post ids only: no post text, no DID.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mhaudit.audits.estimate import EstimateOptions
from mhaudit.audits.monitor.scores import ensure_scores_table, model_digest, read_scored, score_posts
from mhaudit.audits.monitor.verdicts import AXIS, monitor_verdicts, summarise
from mhaudit.audits.monitor.windows import Reference, check_resolution, parse_window, window_table
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report.result import AuditResult, Section, digest_frame, provenance
from mhaudit.tables.predictions import PredictionSet, scores

__all__ = ["AXIS", "MonitorOptions", "monitor_stream", "reference_of"]


@dataclass(frozen=True)
class MonitorOptions:
    window: str = "1d"
    positive: str | None = None  # the class the prevalence and change detector follow (default: the last)
    n_boot: int = 200  # bootstrap resamples of each window's label-free estimate
    seed: int = 0
    batch_size: int = 256
    psi_warn: float = 0.10
    psi_fail: float = 0.25
    suggest_budget: int = 200  # labels in the suggested validation sample on an alert
    min_posts: int = 100  # fewer posts in a window: its drift statistics are shown, never judged (noise)
    figures: bool = True


def reference_of(reference: PredictionSet, classes: list[str], positive: str | None) -> Reference:
    if reference.classes != classes:
        raise InputError(f"the model's classes ({', '.join(classes)}) differ from the reference predictions' "
                         f"({', '.join(reference.classes)})")
    labels = reference.frame["label"]
    if labels.isna().any() or not all((labels == c).any() for c in classes):
        raise InputError("the reference predictions need a label on every row and every class present")
    if positive is not None and positive not in classes:
        raise InputError(f"--positive '{positive}' is not a class of the model ({', '.join(classes)})")
    return Reference(reference.codes, scores(reference.frame, classes), classes,
                     classes.index(positive) if positive else len(classes) - 1)


def monitor_stream(store, model, model_dir: str | Path, reference: PredictionSet, options: MonitorOptions = MonitorOptions(),
                   *, executor=None, out: str | Path | None = None, progress: Progress | None = None) -> AuditResult:
    """Score the new posts of `store` (a PostStore) with `model` (loaded from `model_dir`), then analyse every
    scored post by window. `executor`: see scores.score_posts. `out`: where to write the suggested validation
    sample on an alert (the report folder)."""
    progress = ensure(progress)
    window = parse_window(options.window)
    ref = reference_of(reference, list(model.classes), options.positive)
    if store.count() == 0:
        raise InputError("the post store has no posts; collect some first (mhaudit collect bluesky)",
                         path=store.location)
    check_resolution([t for (t,) in store.read("SELECT created_at FROM posts")], window, options.window)
    digest = model_digest(model_dir)
    ensure_scores_table(store)
    with progress.stage("score new posts"):
        scored_now = score_posts(store, model, digest, batch_size=options.batch_size, executor=executor)
    rows = read_scored(store, digest)
    estimate_options = EstimateOptions()
    with progress.stage(f"analyse {len(rows):,} posts by window of {options.window}"):
        table = window_table(rows, ref, window, n_boot=options.n_boot, seed=options.seed, options=estimate_options,
                             baseline_posts=options.min_posts)
    verdicts = monitor_verdicts(table, options, model_name=model.name, target=f"stream, windows of {options.window}")
    sections = [Section("Windows", f"One row per window of {options.window} by the posts' createdAt (the window's "
                        "start, UTC). Score "
                        "drift is against the reference predictions; length and language drift against the stream's "
                        f"first {options.min_posts} posts. Windows with fewer than {options.min_posts} posts are "
                        "shown but not judged (their PSI is mostly noise). Counts, rates and statistics only: no "
                        "post text, no author.", {"windows": table})]
    if options.figures:
        from mhaudit.audits.monitor.figures import window_figures
        sections[0].figures = window_figures(table, ref.classes[ref.positive], options)
    alerts = table[(table["change_alarm"] | (table["psi_score"] >= options.psi_warn))
                   & (table["n_posts"] >= options.min_posts)]
    if len(alerts) and out is not None:
        from mhaudit.audits.monitor.alert import suggest_sample
        note = suggest_sample(store, digest, rows, alerts["window"].iat[-1], window, model, ref, reference, options, out)
        sections.append(Section("Suggested validation sample", note, {}))
    return AuditResult(
        title=f"Monitoring {model.name} on the stream",
        sections=sections, summary=summarise(table, options, scored_now), verdicts=verdicts, synthetic=False,
        options={"window": options.window, "model_digest": digest, "n_boot": options.n_boot,
                 "psi_warn": options.psi_warn, "psi_fail": options.psi_fail, "min_posts": options.min_posts,
                 "classes": ref.classes,
                 "positive": ref.classes[ref.positive], "scored_now": scored_now, "n_posts": len(rows)},
        provenance=provenance({"reference": digest_frame(reference.frame), "model": digest},
                              progress.seconds))
