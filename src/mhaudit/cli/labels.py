"""`mhaudit labels ...`: the labels tables (docs/cli.md). Here the samples for people and two labelers:

    labels sample        stratified random sample by weak label -> validation set for annotators;
                         --strategy estimate: the items that certify a model on a target with fewest labels
    labels lexicon       a lexicon as weak labeler (1 if any term matches)
    labels from-corpus   a binary corpus's own labels (e.g. expert labels) into a labels table
    labels combine       weak labelers (llm, lexicon, model) combined by a label model into one labeler

llm_labels.py adds `labels llm` and `labels prompts`, annotate.py `labels export` and `labels import`.
Heavy modules are imported inside the commands, so `mhaudit --help` stays fast.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, NamedTuple

import typer

from mhaudit.cli.console import err, guarded, out, print_table
from mhaudit.cli.models import MappingOpt, TrustPickleOpt
from mhaudit.cli.options import with_options
from mhaudit.core.errors import InputError

app = typer.Typer(
    help="Label tables: LLM and lexicon labelers, samples for people, imports and exports.", no_args_is_help=True
)

LabelsOpt = Annotated[
    list[Path],
    typer.Option(
        "--labels",
        help="Labels table(s): .sqlite store, .parquet, .csv or .jsonl; several (after one --labels) are joined.",
    ),
]
TaskOpt = Annotated[str, typer.Option(help="Task name in the labels table (e.g. si, mh).")]
PredictionsOpt = Annotated[
    list[str] | None,
    typer.Option(help="Strategy estimate: the model's scores on the target's items (files or globs, with ids)."),
]
ModelOpt = Annotated[
    Path | None,
    typer.Option(
        help="Strategy estimate, instead of --predictions: a model that scores the items here (a trained model "
        "folder or a parent of seed-*/run-* folders, a Hugging Face folder, a .skops pipeline)."
    ),
]
CertifyOpt = Annotated[
    str | None,
    typer.Option(
        help="Strategy estimate, predictions of several runs (an ensemble): the run to certify, MODEL:SEED "
        "(MODEL alone if it has one run) or its run-<k> folder; the others join the ensemble."
    ),
]
_PER_STRATUM = {"pool": ("pool_size", "first"), "sampled": ("sample_size", "first"), "weight": ("weight", "first")}


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="labels")


def read_items(path: Path):
    from mhaudit.tables.io import read_table

    if not path.exists():
        raise InputError("no such file; expected a corpus or an items table with id and text", path=path)
    frame = read_table(path, what="the items")
    if not ({"id", "item_id"} & set(frame.columns)) or "text" not in frame.columns:
        raise InputError("the items need an 'id' (or 'item_id') and a 'text' column", path=path)
    return frame


def _save_labels(frame, path: Path) -> int:
    """Add labels to a store (replacing this labeler's earlier labels) or merge them into a label file."""
    import pandas as pd

    from mhaudit.tables.label_store import LabelStore, read_labels, write_labels

    if path.suffix.lower() in (".sqlite", ".db", ".sqlite3"):
        with LabelStore(path) as store:
            return store.add(frame.to_dict("records"), replace=True)
    if path.exists():
        old = read_labels(path)
        mine = set(zip(frame["task"], frame["labeler"]))
        keep = old[[pair not in mine for pair in zip(old["task"], old["labeler"])]]
        frame = pd.concat([keep, frame], ignore_index=True)
    write_labels(frame, path)
    return len(frame)


def _parse_sizes(text: str) -> dict[int, int]:
    pairs = (re.split("[=:]", part, maxsplit=1) for part in text.split(","))
    try:  # a part without '=' or ':' does not unpack: the same ValueError as a part that is not a number
        return {int(key): int(value) for key, value in pairs}
    except ValueError:
        raise InputError(f"--sizes '{text}' must look like '0=150,1=126' (weak label = items)") from None


@app.command("sample")
@guarded
def sample(
    items: Annotated[Path, typer.Option(help="Corpus or items table with id and text.")],
    task: TaskOpt,
    out_path: Annotated[Path, typer.Option("--out", help="Validation set to write (.parquet, .csv, .jsonl).")],
    labels: Annotated[
        list[Path] | None,
        typer.Option(
            "--labels",
            help="Labels table(s); the weak labels to stratify by (strategy weak), or people's "
            "earlier labels, whose items leave the pool (strategy estimate).",
        ),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            help="weak: stratified by weak label; estimate: by the model's predicted class and confidence, "
            "Neyman-allocated to certify its macro-F1 (--predictions or --model, --budget)."
        ),
    ] = "weak",
    n: Annotated[int | None, typer.Option(help="Sample size (strategy weak).")] = None,
    positive_share: Annotated[
        float | None, typer.Option(help="Share of the sample drawn from weak positives (default: the pool's share).")
    ] = None,
    sizes: Annotated[str | None, typer.Option(help="Items per weak label, e.g. '0=150,1=126'.")] = None,
    weak: Annotated[str | None, typer.Option(help="Weak labeler (default: the only llm/lexicon one).")] = None,
    predictions: PredictionsOpt = None,
    model: ModelOpt = None,
    mapping: MappingOpt = None,
    trust_pickle: TrustPickleOpt = False,
    reference: Annotated[
        list[str] | None,
        typer.Option(help="Strategy estimate: its scores on a labelled home test set, to calibrate on (optional)."),
    ] = None,
    budget: Annotated[int | None, typer.Option(help="Strategy estimate: how many items people will label.")] = None,
    bins: Annotated[
        int,
        typer.Option(
            help="Strategy estimate: confidence bins per predicted class, at most (fewer for a small budget)."
        ),
    ] = 4,
    certify: CertifyOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the random draw.")] = 0,
) -> None:
    """Draw the items people should label: stratified by weak label, or (--strategy estimate) to certify a
    model's performance on the target with the fewest labels (docs/validation.md)."""
    if strategy == "estimate":
        scorer = _Scorer(model, mapping, trust_pickle) if model is not None or mapping or trust_pickle else None
        return _sample_to_certify(
            items, task, out_path, labels, predictions, scorer, reference, budget, bins, certify, seed
        )
    if model is not None or mapping or trust_pickle:
        raise InputError("--model, --mapping and --trust-pickle are for --strategy estimate (a model scores the items)")
    if strategy != "weak":
        raise InputError(f"--strategy '{strategy}' must be weak or estimate")
    if not labels:
        raise InputError("--labels is needed: the weak labels to stratify by")
    from mhaudit.audits.agreement import sample_for_validation, write_validation_set
    from mhaudit.tables.label_store import read_label_files

    frame = sample_for_validation(
        read_label_files(labels),
        read_items(items),
        task,
        n,
        weak_labeler=weak,
        positive_share=positive_share,
        sizes=_parse_sizes(sizes) if sizes else None,
        seed=seed,
    )
    write_validation_set(frame, out_path)
    strata = frame.groupby("stratum").agg(**_PER_STRATUM).reset_index()
    print_table(f"Validation set for task {task}: weak labeler {frame['weak_labeler'].iat[0]}, seed {seed}", strata)
    out.print(
        f"wrote {len(frame)} items to {out_path}. The 'stratum' column is the weak label: keep it from the "
        "annotators (they label blind)."
    )


def _human_labelled(labels: list[Path] | None, task: str) -> set[str]:
    from mhaudit.tables.label_store import read_label_files

    if not labels:
        return set()
    frame = read_label_files(labels)
    mine = frame[(frame["task"] == task) & frame["kind"].isin(["human", "adjudicated"])]
    return set(mine["item_id"].astype(str))


class _Scorer(NamedTuple):
    """--model and how to load it: the items are scored here instead of read from --predictions."""

    model: Path | None
    mapping: str | None
    trust_pickle: bool


def _target_scores(items: Path, predictions: list[str] | None, scorer: _Scorer | None, budget: int | None):
    """The items and the model's scores on them: read from --predictions, or made by --model (one of the two)."""
    from mhaudit.tables.prediction_files import read_predictions

    if scorer is not None and scorer.model is None:
        raise InputError("--mapping and --trust-pickle load the model of --model; give --model too")
    if bool(predictions) == (scorer is not None):
        raise InputError(
            "--strategy estimate needs exactly one of --predictions (the model's scores on the target) and "
            f"--model (a model that scores the items), {'not both' if predictions else 'got neither'}"
        )
    if budget is None:
        raise InputError("--strategy estimate needs --budget (how many items people will label)")
    frame = read_items(items)
    if scorer is None:
        return frame, read_predictions(predictions, labelled=False)
    from mhaudit.audits.certify import score_items

    return frame, score_items(scorer.model, frame, mapping=scorer.mapping, trust_pickle=scorer.trust_pickle)


def _sample_to_certify(
    items, task, out_path, labels, predictions, scorer, reference, budget, bins, certify, seed
) -> None:
    from mhaudit.audits.certify import certification_sample, pool_of, write_certification_sample
    from mhaudit.models.runs import run_key
    from mhaudit.tables.prediction_files import read_predictions

    frame, target = _target_scores(items, predictions, scorer, budget)
    ref = read_predictions(reference, classes=target.classes) if reference else None
    model, model_seed = run_key(certify) if certify else (None, None)
    pool = pool_of(target, ref, model=model, seed=model_seed)
    frame, design = certification_sample(
        pool, frame, task, budget, seed=seed, max_bins=bins, labelled=_human_labelled(labels, task)
    )
    sample_file, design_file = write_certification_sample(frame, design, out_path)
    order = list(dict.fromkeys(design["stratum"]))  # predicted class, then confidence
    strata = frame.groupby("stratum").agg(**_PER_STRATUM).reindex(order).reset_index()
    print_table(
        f"Certification sample for task {task}: model {frame['model'].iat[0]} seed {pool.seed}, draw seed {seed}",
        strata,
    )
    if len(pool.runs) > 1:
        out.print(f"strata and allocation by {pool.predictor}")
    out.print(
        f"wrote {len(frame)} items to {sample_file} and the design of all {len(design):,} pooled items to "
        f"{design_file}. Keep the 'stratum' column from the annotators (it shows the model's prediction)."
    )


@app.command("lexicon")
@guarded
def lexicon_labeler(
    items: Annotated[Path, typer.Option(help="Corpus or items table with id and text.")],
    task: TaskOpt,
    labels: Annotated[Path, typer.Option("--labels", help="Labels table to write or add to.")],
    lexicon: Annotated[str, typer.Option(help="Built-in lexicon (si, mh, wide) or a TOML file.")] = "mh",
) -> None:
    """Label items with a lexicon (1 if any term matches) as a weak labeler."""
    from mhaudit.weak_supervision.labelers.lexicon import lexicon_labels
    from mhaudit.weak_supervision.lexicons import Lexicon

    lex = Lexicon.load(lexicon)
    frame = lexicon_labels(read_items(items), lex, task)
    _save_labels(frame, labels)
    positives, invalid = int(frame["value"].sum()), int(frame["value"].isna().sum())
    out.print(
        f"{frame['labeler'].iat[0]} labelled {len(frame):,} items for task {task}: {positives:,} positive "
        f"({positives / max(len(frame) - invalid, 1):.1%}), {invalid} without text; written to {labels}",
        highlight=False,
    )


@app.command("from-corpus")
@guarded
def from_corpus(
    corpus: Annotated[Path, typer.Option(help="Binary corpus (Parquet from mhaudit data import).")],
    task: TaskOpt,
    labeler: Annotated[str, typer.Option(help="Name of the label source, e.g. experts.")],
    labels: Annotated[Path, typer.Option("--labels", help="Labels table to write or add to.")],
    kind: Annotated[str, typer.Option(help="human or adjudicated.")] = "human",
    positive: Annotated[str | None, typer.Option(help="Positive class (default: the last class).")] = None,
    sample_path: Annotated[
        Path | None,
        typer.Option("--sample", help="Only the items of this validation set (to stand in for its annotators)."),
    ] = None,
) -> None:
    """Enter a corpus's own labels (e.g. a data set's expert labels) into a labels table as a reference."""
    from mhaudit.audits.agreement import labels_from_corpus, read_validation_set
    from mhaudit.tables.corpus.schema import Corpus

    if kind not in ("human", "adjudicated"):
        raise InputError(f"--kind '{kind}' must be human or adjudicated")
    c = Corpus.read(corpus)
    frame = labels_from_corpus(c.frame, task, labeler, kind=kind, positive=positive, classes=c.classes)
    if sample_path is not None:
        drawn = set(read_validation_set(sample_path)["item_id"].astype(str))
        frame = frame[frame["item_id"].astype(str).isin(drawn)]
        if frame.empty:
            raise InputError(
                "none of the sample's items is in the corpus; is it the sample of this corpus?", path=sample_path
            )
    _save_labels(frame, labels)
    if c.synthetic:
        err.print("[yellow]note:[/] the corpus is SYNTHETIC", highlight=False)
    out.print(
        f"{labeler} ({kind}): {len(frame):,} labels for task {task}, {int(frame['value'].sum()):,} positive; "
        f"written to {labels}",
        highlight=False,
    )


@app.command("combine")
@with_options("mhaudit.weak_supervision.combine_options:CombineOptions")
def combine(
    labels: LabelsOpt,
    task: TaskOpt,
    options,
    into: Annotated[
        Path | None, typer.Option(help="Label store to add the combined labeler to (.sqlite); or --out.")
    ] = None,
    out_path: Annotated[
        Path | None, typer.Option("--out", help="New labels file to write (.parquet, .csv, .jsonl); or --into.")
    ] = None,
    replace: Annotated[
        bool, typer.Option(help="Make the combined labeler anew where --into has it (or write over --out).")
    ] = False,
    estimates: Annotated[
        Path | None, typer.Option(help="Also write the per-source estimates table (.csv, .parquet, .jsonl).")
    ] = None,
) -> None:
    """Combine weak labelers (llm, lexicon, model) into one label by a label model: kind `combined`, with the
    probability of class 1, and each source's coverage, conflict and accuracy estimated without labels."""
    from mhaudit.tables.io import write_table
    from mhaudit.tables.label_store import read_label_files
    from mhaudit.weak_supervision.combine import check_destination, combine_labels, save_combined

    name = options.labeler_name
    check_destination(task, name, into=into, out=out_path, replace=replace, estimates=estimates)
    combined = combine_labels(read_label_files(labels), task, options)
    written = save_combined(combined, into=into, out=out_path)
    if estimates is not None:
        write_table(combined.estimates, estimates, what="the estimates")
    shown = combined.estimates.drop(columns=["method", "class_balance", "converged", "n_iter"])
    print_table(f"Sources of {name} (task {task}, {combined.method}; estimated without labels)", shown)
    for note in combined.fit.notes:
        err.print(f"[yellow]note:[/] {note} (sources numbered as in the table)", highlight=False)
    out.print(combined.summary, highlight=False)
    out.print(f"wrote {len(combined.labels):,} labels of {name} (kind combined) to {written}", highlight=False)
