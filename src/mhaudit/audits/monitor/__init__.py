"""Monitor a deployed classifier on the collected stream (docs/monitor.md).

`audit_monitor` is a function of the scored posts (weak_supervision.collect.scores.scored_posts: each post's
time, length, languages, categories and scores, never its text), the model's predictions on the labelled
sample it was validated on, and the model's name, digest and classes. It analyses the posts window by window
(audits.monitor.windows). Verdict rows name the windows that cross a threshold: the score distribution's PSI
against the reference (warn at 0.10, fail at 0.25) and the change detector's alarms. On an alert, the latest
alerting window's posts get a suggested validation sample in the result's outputs (audits.monitor.alert): post
ids, strata and design weights as `mhaudit labels sample --strategy estimate` draws them, with the window's
predictions, so `mhaudit annotate --store` shows their text from the store and `mhaudit audit certify`
certifies the model there. Scoring the posts comes first (weak_supervision.collect.scoring; `mhaudit audit monitor`
does both).

Outputs carry counts, rates and pseudonymous post ids only: no post text, no DID.
"""

from __future__ import annotations

from dataclasses import asdict

from mhaudit.audits.monitor.alert import alert_folder, suggest_sample
from mhaudit.audits.monitor.options import MonitorInputs, MonitorOptions
from mhaudit.audits.monitor.verdicts import AXIS, monitor_verdicts, summarise
from mhaudit.audits.monitor.windows import Reference, check_resolution, window_table
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report.result import AuditResult, Section, provenance
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.predictions import PredictionSet, scores

__all__ = ["AXIS", "MonitorInputs", "MonitorOptions", "alert_folder", "audit_monitor", "reference_of"]


def reference_of(reference: PredictionSet, classes: list[str], positive: str | None) -> Reference:
    if reference.classes != classes:
        raise InputError(f"the model's classes ({', '.join(classes)}) differ from the reference predictions' "
                         f"({', '.join(reference.classes)})")
    labels = reference.frame["label"]
    if labels.isna().any() or not all((labels == c).any() for c in classes):
        raise InputError("the reference predictions need a label on every row and every class present")
    if positive is not None and positive not in classes:
        raise InputError(f"the positive class '{positive}' is not a class of the model ({', '.join(classes)})")
    return Reference(reference.codes, scores(reference.frame, classes), classes,
                     classes.index(positive) if positive else len(classes) - 1)


def audit_monitor(inputs: MonitorInputs, options: MonitorOptions, *,
                  progress: Progress | None = None) -> AuditResult:
    """Analyse the scored posts by window against the reference; on an alert, suggest a validation sample
    (`result.outputs`: suggested_predictions, suggested_sample, suggested_design; `result.options["alert_window"]`
    names the window, `alert_folder` where `mhaudit audit monitor` writes them)."""
    progress = ensure(progress)
    window, classes = options.window_length, list(inputs.classes)
    ref = reference_of(inputs.reference, classes, options.positive)
    posts = inputs.posts
    if posts.empty:
        raise InputError("there are no scored posts; collect posts (mhaudit collect bluesky) and score them first")
    check_resolution(posts["created_at"], window, options.window)
    with progress.stage(f"analyse {len(posts):,} posts by window of {options.window}"):
        table = window_table(posts, ref, window, n_boot=options.n_boot, seed=options.seed, options=options,
                             baseline_posts=options.min_posts)
    verdicts = monitor_verdicts(table, options, model_name=inputs.model, target=f"stream, windows of {options.window}")
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
    alert_window, outputs = (alerts["window"].iat[-1] if len(alerts) else None), {}
    if alert_window is not None:
        note, outputs = suggest_sample(posts, alert_window, window, inputs.model, classes, inputs.reference, options)
        sections.append(Section("Suggested validation sample", note, {}))
    synthetic = " (SYNTHETIC data)" if inputs.synthetic else ""
    return AuditResult(
        title=f"Monitoring {inputs.model} on the stream{synthetic}",
        sections=sections, summary=("SYNTHETIC data. " if inputs.synthetic else "")
        + summarise(table, options, inputs.scored_now), verdicts=verdicts, synthetic=inputs.synthetic,
        options={**asdict(options), "positive": ref.classes[ref.positive], "model_digest": inputs.model_digest,
                 "classes": classes, "scored_now": inputs.scored_now, "n_posts": len(posts),
                 "alert_window": alert_window},
        outputs=outputs,
        provenance=provenance({"posts": digest_frame(posts), "reference": digest_frame(inputs.reference.frame),
                               "model": inputs.model_digest}, progress.seconds))
