"""The audit itself, `audit_monitor` (the package's docstring says what it does)."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from mhaudit.audits.monitor.alert import suggest_sample
from mhaudit.audits.monitor.alerts import alert_status, alerts_shown, alerts_text, window_alerts
from mhaudit.audits.monitor.coverage import coverage_section
from mhaudit.audits.monitor.ensemble import (
    MonitorEnsemble,
    WindowEnsemble,
    deployed_reference,
    ensemble_reference,
    runs_table,
)
from mhaudit.audits.monitor.options import MonitorInputs, MonitorOptions
from mhaudit.audits.monitor.reuse import WindowReuse, window_context
from mhaudit.audits.monitor.verdicts import monitor_verdicts, summarise
from mhaudit.audits.monitor.windows import Reference, check_resolution, in_history, parse_times, window_table
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.core.threads import thread_budget
from mhaudit.report.result import AuditResult, Section, provenance
from mhaudit.report.trust import line_rule
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.pairing import check_reference_labels
from mhaudit.tables.predictions import PredictionSet, scores


def reference_of(reference: PredictionSet, classes: list[str], positive: str | None) -> Reference:
    if reference.classes != classes:
        raise InputError(
            f"the model's classes ({', '.join(classes)}) differ from the reference predictions' "
            f"({', '.join(reference.classes)})"
        )
    check_reference_labels(reference.codes, classes, "the reference predictions")
    if positive is not None and positive not in classes:
        raise InputError(f"the positive class '{positive}' is not a class of the model ({', '.join(classes)})")
    return Reference(
        reference.codes,
        scores(reference.frame, classes),
        classes,
        classes.index(positive) if positive else len(classes) - 1,
    )


def check_reference(
    reference: PredictionSet, classes: list[str], positive: str | None, ensemble: MonitorEnsemble | None = None
) -> None:
    """The InputError `audit_monitor` would raise on these reference predictions (classes, labels, the positive
    class, every run of the ensemble), said before any post is scored."""
    reference_of(deployed_reference(reference, ensemble), list(classes), positive)
    if ensemble is not None:
        ensemble_reference(reference, ensemble)


def audit_monitor(inputs: MonitorInputs, options: MonitorOptions, *, progress: Progress | None = None) -> AuditResult:
    """Analyse the scored posts by window against the reference; on an alert, suggest a validation sample
    (`result.outputs`: suggested_predictions, suggested_sample, suggested_design; `outputs["alert_window"]` names
    the latest alerting window's start, None without an alert; `alert_folder` is where `mhaudit audit monitor`
    writes them). With `inputs.ensemble`, each window big enough also gets the deployed run's accuracy from the
    agreement line over the runs. Windows found in `inputs.cached_windows` are not recomputed
    (`outputs["windows_recomputed"]` counts the others); `outputs["window_rows"]` holds this round's, to pass in
    next time (audits.monitor.reuse)."""
    progress = ensure(progress)
    window, classes, ensemble = options.window_length, list(inputs.classes), inputs.ensemble
    reference = deployed_reference(inputs.reference, ensemble)
    ref = reference_of(reference, classes, options.positive)
    posts = inputs.posts if options.history is None else in_history(inputs.posts, options.history_length, window)
    if posts.empty:
        raise InputError("there are no scored posts; collect posts (mhaudit collect bluesky) and score them first")
    check_resolution(posts["created_at"], window, options.window)
    runs = per_window = None
    if ensemble is not None:
        ens_ref = ensemble_reference(inputs.reference, ensemble)
        runs = runs_table(ens_ref, ensemble)
        per_window = WindowEnsemble(
            ens_ref, ensemble, n_boot=options.n_boot, seed=options.seed, min_posts=options.min_posts
        )
    model = inputs.model if ensemble is None else f"{inputs.model} {ensemble.deployed}"
    with (
        progress.stage(
            f"analyse {len(posts):,} posts by window of {options.window}"
            + ("" if ensemble is None else f", agreement line over {len(ensemble.runs)} runs")
        ),
        thread_budget(1),
    ):  # small per-window fits and bootstraps: more threads only wait (core.threads)
        reuse = WindowReuse(window_context(inputs, options), inputs.cached_windows)
        table = window_table(
            posts,
            ref,
            window,
            n_boot=options.n_boot,
            seed=options.seed,
            options=options,
            baseline_posts=options.min_posts,
            ensemble=per_window,
            reuse=reuse,
        )
    verdicts = monitor_verdicts(table, options, model_name=model, target=f"stream, windows of {options.window}")
    sections = _sections(table, ref, runs, options) + coverage_section(inputs.collection)
    alerts, alert_window = _alerts(table, inputs, options)
    outputs: dict = {}
    if len(alerts):
        sections.append(Section("Alerts", alerts_text(options), {"alerts": alerts_shown(alerts)}))
    if alert_window is not None:
        note, outputs = suggest_sample(posts, alert_window, window, inputs.model, classes, reference, options)
        sections.append(Section("Suggested validation sample", note, {}))
    summary = summarise(table, options, inputs.scored_now, runs, inputs.collection)
    return AuditResult(
        title=f"Monitoring {model} on the stream" + (" (SYNTHETIC data)" if inputs.synthetic else ""),
        sections=sections,
        summary=("SYNTHETIC data. " if inputs.synthetic else "") + summary,
        verdicts=verdicts,
        synthetic=inputs.synthetic,
        options=_record(inputs, options, ref, len(posts)),
        outputs={
            **outputs,
            "alerts": alerts,
            "window_rows": reuse.rows(table),
            "alert_window": alert_window,
            "windows_recomputed": reuse.recomputed,
            "newest_post": _newest(posts),
        },
        provenance=provenance(
            {
                "posts": digest_frame(posts),
                "reference": digest_frame(inputs.reference.frame),
                f"model {inputs.model}, {inputs.model_source}": inputs.model_digest,
                **({} if ensemble is None else {f"model {r}": d for r, d in zip(ensemble.runs, ensemble.digests)}),
            },
            progress.seconds,
        ),
    )


def _alerts(table: pd.DataFrame, inputs: MonitorInputs, options: MonitorOptions) -> tuple[pd.DataFrame, str | None]:
    """The alerts with their status against the store's record, and the window a validation sample is suggested
    for: the latest with a new alert (none when every alert was seen before, or continues an acknowledged one)."""
    alerts = window_alerts(table, options)
    judged = table.loc[table["n_posts"] >= options.min_posts, "window"].tolist()
    alerts = alerts.assign(status=alert_status(alerts, inputs.recorded_alerts, judged))
    new = alerts.loc[alerts["status"] == "new", "window"]
    return alerts, (new.iat[-1] if len(new) else None)


def _newest(posts: pd.DataFrame) -> str | None:
    """The newest post's createdAt (ISO, UTC), for the lag of the stream; None when no time reads."""
    times = parse_times(posts["created_at"])
    return None if times.isna().all() else times.max().isoformat()


def _record(inputs: MonitorInputs, options: MonitorOptions, ref: Reference, n_posts: int) -> dict:
    """The report's options block: the options, then what the round ran on."""
    ensemble = inputs.ensemble
    return {
        **asdict(options),
        "positive": ref.classes[ref.positive],
        "model_digest": inputs.model_digest,
        "classes": list(inputs.classes),
        "scored_now": inputs.scored_now,
        "n_posts": n_posts,
        "collection": [dict(c) for c in inputs.collection],
        **(
            {}
            if ensemble is None
            else {"deployed": ensemble.deployed, "runs": list(ensemble.runs), "run_seeds": list(ensemble.seeds)}
        ),
    }


def _sections(table: pd.DataFrame, ref: Reference, runs: pd.DataFrame | None, options: MonitorOptions) -> list:
    text = (
        f"One row per window of {options.window} by the posts' createdAt (the window's start, UTC). Score drift "
        "is against the reference predictions; length and language drift against the stream's first "
        f"{options.min_posts} posts. Windows with fewer than {options.min_posts} posts are shown but not judged "
        "(their PSI is mostly noise). Counts, rates and statistics only: no post text, no author."
    )
    deployed = None if runs is None else runs.loc[runs["deployed"], "run"].iat[0]
    if runs is not None:
        text += (
            f" The ensemble columns are the deployed run's ({deployed}) accuracy estimated from how often the "
            f"{len(runs)} runs agree on the window's posts (ALine-D, agreement on the line), with its 95% CI and "
            f"the line's trust; windows under {options.min_posts} posts get none."
        )
    if options.history is not None:
        text += (
            f" History: only the whole windows within {options.history} of the newest post are analysed, so the "
            "length and language baseline is the history's first posts and the change detector starts at its "
            "first window."
        )
    sections = [Section("Windows", text, {"windows": table})]
    if options.figures:
        from mhaudit.audits.monitor.figures import window_figures

        sections[0].figures = window_figures(table, ref.classes[ref.positive], options, deployed)
    if runs is not None:
        sections.append(
            Section(
                "The ensemble's runs",
                "Every run scored every post; each run's accuracy on the labelled sample is the agreement line's "
                "reference. " + line_rule("window's") + " Accuracy only.",
                {"runs": runs},
            )
        )
    return sections
