"""The audit itself, `audit_divergence` (the package's docstring says what it does)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit.audits.divergence import tables as T
from mhaudit.audits.divergence import thresholds
from mhaudit.audits.divergence.conflicts import conflicts
from mhaudit.audits.divergence.design import Design, build_design
from mhaudit.audits.divergence.extras import concentration, lodo, orthogonality, phenotypes
from mhaudit.audits.divergence.fitting import FittedChannel, combine, stratified_folds
from mhaudit.audits.divergence.options import DivergenceInputs, DivergenceOptions, canonical
from mhaudit.audits.divergence.runs import Runs, add_baselines, fit_channels, fit_masked, fit_other_lexical
from mhaudit.audits.divergence.sections import divergence_sections
from mhaudit.audits.divergence.summary import summarise
from mhaudit.audits.divergence.views import FeatureMemo, View, original_parses
from mhaudit.audits.divergence.verdicts import divergence_verdicts
from mhaudit.core.progress import Progress, ensure
from mhaudit.core.threads import default_threads, thread_budget
from mhaudit.report import AuditResult
from mhaudit.report.result import provenance
from mhaudit.stats.undefined import quiet_undefined
from mhaudit.tables.digest import digest_frame
from mhaudit.text.parse import Parses


@quiet_undefined()  # the tables carry each undefined value's reason
def audit_divergence(
    inputs: DivergenceInputs, options: DivergenceOptions, *, progress: Progress | None = None
) -> AuditResult:
    """Run the whole audit on `inputs.corpus`, a binary corpus, with `inputs.baselines` beside the channels. The
    result's outputs hold conflict_counts and conflict_sample (rows where the channels disagree; texts only with
    options.include_text), for `write_conflicts`."""
    progress = ensure(progress)
    say = progress.step
    frame = inputs.corpus.frame
    design = build_design(
        frame,
        inputs.corpus.classes,
        list(options.human),
        list(options.auto),
        train_dataset=options.train_dataset,
        positive=options.positive,
    )
    channels = canonical(options.channels)
    mask_channels = canonical(options.mask_channels)
    masks = [m for m in options.masks if m != "none"] if mask_channels else []
    datasets = design.human + design.auto
    y = {d: design.y(d) for d in datasets}

    say(f"parsing {len(design.train) + sum(len(design.evaluation[d]) for d in datasets):,} texts")
    parses = original_parses(design, datasets)
    memo = FeatureMemo()  # each text's n-gram counts and style features, for every view below
    runs, fitted, views, repeat_scores = fit_channels(design, channels, parses, options, say, memo)
    folds = stratified_folds(design.y_train, options.n_folds, options.seed)
    views |= fit_masked(runs, design, mask_channels, masks, folds, parses, options, say, memo)
    if "A" in channels and options.compare_lexical:  # the other lexical representation, beside A
        fit_other_lexical(runs, design, folds, parses, options, say, memo)
    add_baselines(runs, inputs.baselines, design)

    say(f"bootstrap: {options.n_boot:,} resamples per data set over {len(runs.keys)} prediction vectors")
    scored = _scored(runs, design, y, options)
    compared = channels + [k for k in runs.keys if k.startswith("baseline:")]  # each model's DoD against A, too
    tables = _statistics(
        scored, channels, compared, mask_channels, ["none", *masks], design.human, views, options, repeat_scores, y
    )
    tables |= _thresholds(scored, compared, mask_channels, design.human, fitted)
    if options.repeats > 1:
        fixed = {key: {d: runs.pred(key, d) for d in datasets} for key in runs.keys if key.startswith("baseline:")}
        tables["dod"] = _with_training_variance(tables["dod"], repeat_scores, fixed, design, options)
    n_tests = T.apply_fdr(
        tables, {"interference": "p", "dod": "p", "dod_platform_stratified": "p", "masking": "p", "mcnemar": "p"}
    )
    tables["weights_kept"] = _weights_kept(fitted, channels)
    say("robustness: leave-one-domain-out, phenotypes, orthogonality, concentration")
    tables |= _robustness(design, options, runs, fitted, views["none"], parses, channels, y, memo)
    counts, sample = conflicts(
        {d: design.evaluation[d] for d in datasets},
        {d: {k: runs.pred(k, d) for k in channels} for d in datasets},
        y,
        channels,
        per_dataset=options.conflicts_per_dataset,
        include_text=options.include_text,
        seed=options.seed,
    )
    tables["conflict_counts"] = counts
    notes = _data_notes(design, parses.truncated)
    summary = summarise(tables, design, n_tests, notes)
    progress.close()
    digests = {"corpus": digest_frame(frame), **{f"baseline {k}": digest_frame(v) for k, v in inputs.baselines.items()}}
    return AuditResult(
        "Label-source divergence audit (TSS probe)",
        divergence_sections(tables, design, options, n_tests),
        summary=summary,
        verdicts=divergence_verdicts(tables["dod"], tables["dod_threshold_free"], tables["random_pos_control"]),
        synthetic=inputs.corpus.synthetic,
        provenance=provenance(digests, progress.seconds),
        options={
            **asdict(options),
            "train_dataset": design.train_dataset,
            "positive": design.positive,
            "n_train": int(len(design.train)),
        },
        outputs={"conflict_counts": counts, "conflict_sample": sample},
    )


def _scored(runs: Runs, design: Design, y: dict[str, np.ndarray], options: DivergenceOptions) -> T.Scored:
    """Every run's predictions and scores on every data set, stacked, with their shared bootstrap draws."""
    datasets = design.human + design.auto
    return T.Scored(
        runs.keys,
        y,
        {d: np.vstack(runs.preds[d]) for d in datasets},
        {d: np.vstack(runs.probs[d]) for d in datasets},
        design.side,
        {d: str(design.evaluation[d]["platform"].iat[0]) for d in datasets},
        options.n_boot,
        options.seed,
        options.undefined_f1,
    )


def _weights_kept(fitted: dict[str, FittedChannel], channels: list[str]) -> pd.DataFrame:
    """Per channel and block: the weights the fit kept, its regularisation and its tuned threshold."""
    return pd.DataFrame(
        [
            {
                "channel": ch,
                "block": b,
                "nonzero_weights": k,
                "features": fitted[ch].block_sizes[b],
                "C": fitted[ch].config["C"],
                "l1_ratio": fitted[ch].config["l1_ratio"],
                "threshold": fitted[ch].threshold,
            }
            for ch in channels
            for b, k in fitted[ch].weights_kept().items()
        ]
    )


def _robustness(
    design: Design,
    options: DivergenceOptions,
    runs: Runs,
    fitted: dict[str, FittedChannel],
    base: View,
    parses: Parses,
    channels: list[str],
    y: dict[str, np.ndarray],
    memo: FeatureMemo | None = None,
) -> dict[str, pd.DataFrame]:
    """Leave-one-domain-out, phenotypes (with channel C), orthogonality and concentration tables."""
    datasets = design.human + design.auto
    tables = {}
    # The phenotype K-means (BLAS, which lets go of the GIL) runs in a thread beside leave-one-domain-out,
    # whose featurising holds one core and whose fits queue for its two workers: no core waits idle. BLAS
    # threads (one setting for the whole process) are held to half the cores, one on two: more would spin
    # against the workers. (OpenMP's setting is per thread: the reference KMeans keeps its default there.)
    # The limit is entered first, so it holds until the thread has joined.
    with thread_budget(default_threads(workers=2), user_api="blas"), ThreadPoolExecutor(max_workers=1) as beside:
        clusters = None
        if any("C" in ch for ch in channels):
            feats = np.vstack([base.evaluation[d]["C"] for d in datasets])
            labels = np.concatenate([[d] * len(y[d]) for d in datasets])
            clusters = beside.submit(phenotypes, feats, labels, n_boot=options.n_boot_clusters, seed=options.seed)
        lodo_channels = canonical(options.lodo_channels)
        if lodo_channels and design.train_dataset in datasets:
            n_train = len(design.train)
            start = n_train + sum(len(y[d]) for d in datasets[: datasets.index(design.train_dataset)])
            tables["lodo"] = lodo(
                design,
                lodo_channels,
                lexical=options.lexical,
                n_folds=options.n_folds,
                seed=options.seed,
                zero_division=options.undefined_f1,
                train_parses=parses.take(np.arange(n_train)),
                test_parses=parses.take(np.arange(start, start + len(y[design.train_dataset]))),
                memo=memo,
            )
        if clusters is not None:
            tables["phenotypes"], tables["phenotype_sizes"] = clusters.result()
    tables["orthogonality"] = orthogonality(
        {ch: np.concatenate([runs.prob(ch, d) for d in datasets]) for ch in channels}
    )
    parts = [
        concentration(
            fitted[ch],
            [f"{b}:{n}" for b in fitted[ch].letters for n in base.feature_names[b]],
            {d: combine(base.evaluation[d], fitted[ch].letters) for d in datasets},
        )
        for ch in channels
        if sum(fitted[ch].block_sizes.values()) > 20
    ]  # a top-10 share of B's 6 says nothing
    tables["concentration"] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return tables


def _statistics(s: T.Scored, channels, compared, mask_channels, masks, human, views, options, repeat_scores, y) -> dict:
    tables = {"channel_scores": T.channel_scores(s, [k for k in s.keys if "/" not in k])}
    if options.repeats > 1:  # training variance of each channel's Macro-F1 over repeated cross-fitting
        from mhaudit.stats.binary import binary_scores

        rep = pd.DataFrame(
            [
                {
                    "channel": ch,
                    "dataset": d,
                    "macro_f1": binary_scores(y[d], (prob >= thr).astype(np.int8), zero_division=options.undefined_f1)[
                        "macro_f1"
                    ],
                }
                for ch, d, r, prob, thr in repeat_scores
            ]
        )
        sd = (
            rep.groupby(["channel", "dataset"])["macro_f1"]
            .agg(macro_f1_repeat_mean="mean", macro_f1_repeat_sd="std")
            .reset_index()
        )
        tables["channel_scores"] = tables["channel_scores"].merge(sd, on=["channel", "dataset"], how="left")
    tables["interference"] = T.interference(s)
    tables["dod"] = T.dod(s, compared)
    tables["dod_by_dataset"] = T.dod_by_dataset(s, compared)
    tables["dod_platform_stratified"] = T.dod_platform_stratified(s, compared)
    empty = {m: v.empty_after_mask for m, v in views.items()}
    tables["masking"] = T.masking(s, mask_channels, masks, human, empty)
    tables["mcnemar"] = T.mcnemar_table(s, T.mcnemar_pairs(s.keys, channels))
    return tables


def _thresholds(s: T.Scored, compared, mask_channels, human, fitted: dict[str, FittedChannel]) -> dict:
    """Threshold-free DoD, the per-data-set threshold diagnostic and the random-POS control (thresholds.py)."""
    free = thresholds.dod_threshold_free(s, compared)
    return {
        "dod_by_metric": thresholds.dod_by_metric(free),
        "dod_threshold_free": free,
        "threshold_diagnostic": thresholds.threshold_diagnostic(
            s, compared, {ch: m.threshold for ch, m in fitted.items()}
        ),
        "random_pos_control": thresholds.random_pos_control(s, mask_channels, human),
    }


def _with_training_variance(
    dod: pd.DataFrame, repeat_scores, fixed: dict, design: Design, options: DivergenceOptions
) -> pd.DataFrame:
    """Pool DoD bootstrap draws over the repeats (each repeat: its own folds, fits and thresholds, n_boot/R
    instance resamples), so the interval carries training variance too; the estimate is the repeats' mean.
    `fixed`: a baseline's predictions per data set, the same in every repeat (only A is refitted)."""
    from mhaudit.stats.divergence import degree_of_divergence

    by = {(key, r): preds for key, preds in fixed.items() for r in range(options.repeats)}
    for ch, d, r, prob, thr in repeat_scores:
        by.setdefault((ch, r), {})[d] = (prob >= thr).astype(np.int8)
    rows = []
    rng = np.random.default_rng(options.seed + 7919)
    for _, row in dod.iterrows():
        x = row["contrast"].removesuffix("-A")
        groups = [
            {d: (design.y(d), by[(x, r)][d], by[("A", r)][d]) for d in design.human + design.auto}
            for r in range(options.repeats)
        ]
        results = [
            degree_of_divergence(
                g, design.human, design.auto, rng=rng, n_boot=max(options.n_boot // options.repeats, 100)
            )
            for g in groups
        ]
        estimates = [res["estimate"] for res in results]
        pooled = np.concatenate([res["draws"] for res in results])
        lo, hi = np.percentile(pooled, [2.5, 97.5])
        p_greater = (np.count_nonzero(pooled <= 0) + 1) / (pooled.size + 1)
        p_less = (np.count_nonzero(pooled >= 0) + 1) / (pooled.size + 1)
        p = {"greater": p_greater, "less": p_less}.get(row["alternative"], min(1.0, 2 * min(p_greater, p_less)))
        # With repeats the headline estimate, CI and p carry training variance; repeat 0's instance-only
        # values stay beside them.
        rows.append(
            row.to_dict()
            | {f"{k}_repeat0": row[k] for k in ("estimate", "ci_low", "ci_high", "p")}
            | {
                "estimate": float(np.mean(estimates)),
                "estimate_repeat_sd": float(np.std(estimates, ddof=1)),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "p": float(p),
                "repeats": options.repeats,
            }
        )
    return pd.DataFrame(rows)


def _data_notes(design: Design, truncated: int) -> list[str]:
    """What the reader must know about the inputs: texts cut at the parser's limit, training texts that
    also appear (exactly, case and spacing aside) in a scored data set."""
    from mhaudit.text.parse import MAX_CHARS

    notes = []
    if truncated:
        notes.append(
            f"{truncated} text(s) longer than {MAX_CHARS:,} characters were parsed on their first "
            f"{MAX_CHARS:,} characters only."
        )
    norm = lambda texts: set(texts.astype(str).str.lower().str.split().str.join(" "))  # noqa: E731
    train = norm(design.train["text"])
    shared = {d: len(train & norm(rows["text"])) for d, rows in design.evaluation.items()}
    leaked = {d: n for d, n in shared.items() if n}
    if leaked:
        notes.append(
            "Training texts also in scored data sets (decontaminate with `mhaudit data clean --against`): "
            + ", ".join(f"{d} {n}" for d, n in leaked.items())
            + "."
        )
    return notes
