"""The old command names (docs/cli.md, "Old names"): each still runs, after one line on stderr that names its
new form. Hidden from --help; to be removed in a later release."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli import agreement, estimate, labels, llm_labels, model_selection, monitor
from mhaudit.cli.console import guarded, renamed, say_renamed
from mhaudit.core.errors import InputError

# old name -> (new name, the command); a space separates a group from its command
RENAMED = {
    "estimate": ("audit estimate", estimate.estimate),
    "monitor": ("audit monitor", monitor.monitor),
    "benchmark": ("audit model-selection", model_selection.model_selection),
    "label llm": ("labels llm", llm_labels.llm),
    "label prompts": ("labels prompts", llm_labels.prompts),
    "validate sample": ("labels sample", labels.sample),
    "validate weak-lexicon": ("labels lexicon", labels.lexicon_labeler),
    "validate corpus-labels": ("labels from-corpus", labels.from_corpus),
}
# `validate report` was two audits: `validate report --estimate` is `audit certify`
REPORT = {False: "audit agreement", True: "audit certify"}


def register(root: typer.Typer) -> None:
    groups = {}
    for old, (new, command) in RENAMED.items():
        group, _, name = old.rpartition(" ")
        target = root
        if group:  # the old group is hidden; its commands show in its own --help
            if group not in groups:
                groups[group] = typer.Typer(no_args_is_help=True, help="Old names (docs/cli.md): use the new ones.")
                root.add_typer(groups[group], name=group, hidden=True)
            target = groups[group]
        target.command(name, hidden=not group, help=f"Old name of `mhaudit {new}`.")(renamed(command, old, new))
    groups["validate"].command("report")(validate_report)


@guarded
def validate_report(
        labels_: labels.LabelsOpt, task: labels.TaskOpt, out_dir: agreement.OutOpt,
        weak: Annotated[str | None, typer.Option()] = None,
        annotator: agreement.AnnotatorOpt = None, reference: agreement.ReferenceOpt = None,
        model: Annotated[list[str] | None, typer.Option()] = None,
        sample_path: Annotated[Path | None, typer.Option("--sample")] = None,
        items: Annotated[Path | None, typer.Option()] = None,
        n_boot: Annotated[int, typer.Option()] = 2000, seed: Annotated[int, typer.Option()] = 0,
        estimate_: Annotated[bool, typer.Option("--estimate")] = False,
        predictions: Annotated[list[str] | None, typer.Option()] = None,
        positive: Annotated[str | None, typer.Option()] = None,
        tolerance: Annotated[float, typer.Option()] = 0.05, population: Annotated[str, typer.Option()] = "pool"
) -> None:
    """Old name of `mhaudit audit agreement` (and, with --estimate, of `mhaudit audit certify`)."""
    say_renamed(f"validate report{' --estimate' if estimate_ else ''}", REPORT[estimate_])
    if not estimate_:
        return agreement.agreement(labels_, task, out_dir, weak=weak, annotator=annotator, reference=reference,
                                   model=model, sample_path=sample_path, items=items, n_boot=n_boot, seed=seed)
    if sample_path is None or not predictions:
        raise InputError("--estimate needs --sample (from labels sample --strategy estimate) and --predictions")
    return agreement.certify(labels_, task, out_dir, sample_path=sample_path, predictions=predictions,
                             annotator=annotator, reference=reference, positive=positive, tolerance=tolerance,
                             population=population)
