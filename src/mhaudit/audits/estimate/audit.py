"""The audit itself, `audit_estimate` (the package's docstring says what it does)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit.audits.estimate.ensemble import ensemble_estimates
from mhaudit.audits.estimate.options import EstimateInputs, EstimateOptions
from mhaudit.audits.estimate.verdicts import estimate_verdicts, summarise
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.report import AuditResult, Section
from mhaudit.report.result import provenance
from mhaudit.report.trust import line_rule, untrusted_because
from mhaudit.stats.pair_estimate import estimate_pair, reference_draws, reference_metrics
from mhaudit.tables.digest import digest_frame
from mhaudit.tables.pairing import reference_runs
from mhaudit.tables.predictions import PredictionSet


def audit_estimate(
    inputs: EstimateInputs, options: EstimateOptions, *, progress: Progress | None = None
) -> AuditResult:
    """Estimate each target's priors and metrics without its labels, and say whether to trust the estimate.

    `inputs.reference`: the model's scores on a labelled held-out set from its home platform;
    `inputs.targets`: its scores on unlabelled rows.
    """
    progress = ensure(progress)
    reference, targets, synthetic = inputs.reference, inputs.targets, inputs.synthetic
    rng = np.random.default_rng(options.seed)
    tables = _per_run(reference, targets, options, progress) if options.per_run else {}
    if options.ensemble:
        with progress.stage(f"agreement line over {reference.frame.groupby(['model', 'seed']).ngroups} runs"):
            tables |= ensemble_estimates(reference, targets, n_boot=options.n_boot, rng=rng)
        if not options.per_run and tables["agreement_line"].empty:
            raise InputError(
                "the ensemble estimate needs three or more runs (model and seed) scored on the same "
                "reference rows and the same target rows; these predictions hold fewer"
            )
    verdicts = estimate_verdicts(tables, options)
    return AuditResult(
        title="Label-free performance estimate" + (" (SYNTHETIC data)" if synthetic else ""),
        sections=_sections(tables, options),
        summary=summarise(tables, verdicts, synthetic),
        verdicts=verdicts,
        synthetic=synthetic,
        options={**asdict(options), "classes": reference.classes},
        provenance=provenance(
            {
                "reference": digest_frame(reference.frame),
                "targets": digest_frame(targets.frame),
                **{f"reference {k}": v for k, v in reference.fingerprints.items()},
                **{f"target {k}": v for k, v in targets.fingerprints.items()},
            },
            progress.seconds,
        ),
    )


def _per_run(
    reference: PredictionSet, targets: PredictionSet, options: EstimateOptions, progress: Progress
) -> dict[str, pd.DataFrame]:
    """CBPE, ATC and DoC for each run on each target, the priors, and the shift diagnostic with its trust."""
    classes = reference.classes
    estimates, priors, shift = [], [], []
    # Each reference's side of the draws is computed once and shared by its targets (stats.estimate_draws). Every
    # reference and every pair draws from its own generator, seeded by its names: a pair's numbers are the same
    # whichever other targets come with it, and in whatever order.
    draws = {}
    groups = targets.groups()
    references = reference_runs(reference.groups().values(), dict.fromkeys(g.run for g in groups.values()))
    for group in groups.values():
        ref = references[group.run]
        keys = {
            "model": group.model,
            "seed": group.seed,
            "reference": ref.dataset,
            "platform": group.platform,
            "dataset": group.dataset,
        }
        ref_key = (ref.model, ref.seed, ref.platform, ref.dataset)
        if ref_key not in draws:
            with progress.stage(f"reference draws of {ref.model} seed {ref.seed} on {ref.dataset}"):
                draws[ref_key] = reference_draws(
                    ref.y, ref.logits, options.n_boot, _generator(options.seed, "reference", *ref_key)
                )
        with progress.stage(f"estimate {group.model} seed {group.seed} on {group.dataset}"):
            pair = estimate_pair(
                draws[ref_key],
                group.logits,
                seed=options.seed,
                cutoffs=options.trust,
                rng=_generator(options.seed, *ref_key, group.model, group.seed, group.platform, group.dataset),
            )
        truth = reference_metrics(ref.y, ref.logits)
        estimates += [{**keys, **row, "reference_value": truth[row["metric"]]} for row in pair.estimates]
        priors += [{**keys, "class": classes[r.pop("class_index")], **r} for r in pair.priors]
        vanished = pair.shift["vanishing_class"]
        shift.append(
            {
                **keys,
                **pair.shift,
                "vanishing_class": classes[vanished] if vanished >= 0 else "",
                "trusted": not pair.failed,
                "untrusted_because": untrusted_because(pair.failed, options.trust, classes),
            }
        )
    trust = pd.DataFrame(shift)
    return {
        "estimates": pd.DataFrame(estimates).merge(
            trust[["model", "seed", "platform", "dataset", "trusted"]], how="left"
        ),
        "priors": pd.DataFrame(priors),
        "shift": trust,
    }


def _generator(seed: int, *names) -> np.random.Generator:
    """A generator of its own for one reference or pair, from the audit's seed and its names (stable across runs)."""
    digest = hashlib.sha256("\x1f".join(map(str, names)).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def _sections(tables: dict, options: EstimateOptions) -> list[Section]:
    from mhaudit.audits.estimate.figures import agreement_lines, estimate_forest

    sections = []
    if "estimates" in tables:
        figures = {"estimated_macro_f1": estimate_forest(tables["estimates"])} if options.figures else {}
        sections += [
            Section(
                "Expected on the target, before labels",
                "Each method's estimate with its 95% CI, beside the metric on the labelled reference. An "
                "untrusted target's estimates are printed but not relied on (the shift table says why).",
                {"estimates": tables["estimates"]},
                figures,
            ),
            Section(
                "Shift diagnostic and trust",
                f"Trusted when the prior-shift-weighted domain classifier's AUC is at most "
                f"{options.trust.domain_auc_cutoff:.2f}, EM and BBSE priors differ by at most "
                f"{options.trust.prior_gap_cutoff:.2f}, no class of the reference vanishes from an estimated prior "
                "(below 0.02), and the label-shift-adjusted and unadjusted CBPE macro-F1 differ by at most "
                f"{options.trust.assumption_gap_cutoff:.2f}.",
                {"shift": tables["shift"]},
            ),
            Section(
                "Estimated class priors",
                "EM (Saerens et al. 2002) and BBSE (Lipton et al. 2018), 95% bootstrap CIs: the reference and "
                "the target resampled together, EM's from the calibration refitted on each reference resample.",
                {"priors": tables["priors"]},
            ),
        ]
    if not tables.get("agreement_line", pd.DataFrame()).empty:
        figures = (
            {"agreement_line": agreement_lines(tables["agreement_pairs"], tables["ensemble"], tables["agreement_line"])}
            if options.figures and not tables["agreement_pairs"].empty
            else {}
        )
        sections.append(
            Section(
                "Agreement on the line: the ensemble's accuracy",
                "Each run's target accuracy from how often the runs agree on the unlabelled target (ALine-S and "
                "ALine-D, Baek et al. 2022), with 95% CIs (rows resampled jointly across runs, widened by the line's "
                "scatter). Accuracy only. " + line_rule("target"),
                {
                    "ensemble": tables["ensemble"],
                    "agreement_line": tables["agreement_line"],
                    "agreement_pairs": tables["agreement_pairs"],
                },
                figures,
            )
        )
    return sections
