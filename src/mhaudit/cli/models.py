"""`mhaudit train / predict / run`: models on a corpus, one folder per seed or per run, and whole experiments."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import guarded, out, print_scorecard, print_summary, stage_progress
from mhaudit.core.errors import InputError
from mhaudit.models.builtin import BUILTIN  # a dict only: `mhaudit --help` loads no numpy or pandas

# an outside model's loading options, declared once for every command that takes --model (docs/models.md)
MappingOpt = Annotated[
    str | None,
    typer.Option(help="An outside model's labels to the audit's classes: a shipped mapping's name or a TOML file."),
]
TrustPickleOpt = Annotated[
    bool,
    typer.Option(help="Load pickle weights or files (loading a pickle runs code: only from a source you trust)."),
]
RuntimeOpt = Annotated[
    str,
    typer.Option(help="torch, or onnx: a Hugging Face folder scored by ONNX Runtime on CPU (the onnx extra), faster."),
]


def register(root: typer.Typer) -> None:
    for command in (train, predict, run):
        root.command()(command)


def parse_options(items: list[str] | None) -> dict:
    """KEY=VALUE pairs; values parsed as JSON where they can be (numbers, true/false, lists)."""
    options = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"--option '{item}' must be KEY=VALUE")
        key, value = item.split("=", 1)
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


@guarded
def train(
    corpus: Annotated[Path, typer.Option(help="Corpus Parquet file.")],
    model: Annotated[str, typer.Option(help=f"Model name: {', '.join(sorted(BUILTIN))}, or one you registered.")],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Folder for the model (one seed-<s>/ per seed, or run-<k>/ per run with --runs)."),
    ],
    platform: Annotated[
        str | None,
        typer.Option(help="Platform (or data set) to train on: its train + val rows. Default: the corpus's only one."),
    ] = None,
    seed: Annotated[
        list[int] | None,
        typer.Option(
            help="Seed(s); default 42 0 1 7 123. A deterministic model (TF-IDF) is trained once, first seed. "
            "With --runs: one seed, the base (default 0); run k gets base + k."
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option(
            help="Train an ensemble of N diverse runs, run-0/ .. run-<N-1>/: TF-IDF models on bootstrap "
            "resamples with a drawn C, torch models with seeds base..base+N-1 (docs/models.md)."
        ),
    ] = None,
    option: Annotated[list[str] | None, typer.Option(help="Model option KEY=VALUE, repeatable.")] = None,
) -> None:
    """Train a model on one platform, one folder per seed or per run (finished ones are not retrained)."""
    from mhaudit.models.seeds import DEFAULT_SEEDS, train_platform
    from mhaudit.tables.corpus.schema import Corpus

    if runs is None:
        train_platform(
            Corpus.read(corpus),
            platform,
            model,
            seed or DEFAULT_SEEDS,
            out_dir,
            parse_options(option),
            progress=stage_progress(),
        )
        return
    from mhaudit.models.runs import train_runs

    if seed and len(seed) > 1:
        raise InputError(f"--runs takes one --seed, the base seed (run k gets base + k), not {len(seed)} seeds")
    train_runs(
        Corpus.read(corpus),
        platform,
        model,
        runs,
        out_dir,
        base_seed=seed[0] if seed else 0,
        options=parse_options(option),
        progress=stage_progress(),
    )


@guarded
def predict(
    model_dir: Annotated[
        Path,
        typer.Option(
            "--model",
            help="A trained model folder (or a parent of seed-* and run-* folders), a Hugging Face folder "
            "(save_pretrained) or Hub id (org/name, from the Hugging Face cache), or a scikit-learn pipeline (.skops).",
        ),
    ],
    corpus: Annotated[Path, typer.Option(help="Corpus Parquet file to score.")],
    out_path: Annotated[
        Path,
        typer.Option(
            "--out", help="Predictions file to write (Parquet, CSV, TSV or JSONL), chunk by chunk, renamed at the end."
        ),
    ],
    splits: Annotated[
        str | None,
        typer.Option(
            help="Splits to score, comma-separated. Default: every row the model is judged on, all but its "
            "training platform's train and val rows."
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Model name in the table (default: registry name).")] = None,
    mapping: MappingOpt = None,
    trust_pickle: TrustPickleOpt = False,
    runtime: RuntimeOpt = "torch",
) -> None:
    """Score a corpus with trained model(s): one predictions table with a seed column, written chunk by chunk."""
    from mhaudit.models.runs import summarize_runs
    from mhaudit.models.seeds import model_folders, predict_to_file

    folders = model_folders(model_dir)
    start = time.perf_counter()
    chosen = tuple(splits.split(",")) if splits else None
    scored = predict_to_file(
        folders,
        corpus,
        out_path,
        chosen,
        name,
        mapping=mapping,
        trust_pickle=trust_pickle,
        runtime=runtime,
        progress=stage_progress(),
    )
    seconds = time.perf_counter() - start
    if ensemble := summarize_runs(folders):
        out.print(ensemble)
    out.print(
        f"scored {scored.rows:,} rows ({len(scored.models)} seed(s)) in {seconds:.2f} s, "
        f"{scored.rows / max(seconds, 1e-9):,.0f} rows/s (model loading included); wrote them to {out_path}"
    )


@guarded
def run(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML (see examples/).")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default runs/<name>).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
    workers: Annotated[int, typer.Option(help="Local worker processes for training jobs.")] = 1,
) -> None:
    """Run a whole experiment: import, train, predict, explain, audit, report (finished steps are kept)."""
    from mhaudit.experiments.config import load_experiment
    from mhaudit.experiments.runner import run_experiment

    exp = load_experiment(experiment)
    result = run_experiment(
        exp, out_dir or Path("runs") / exp.name, executor=executor, workers=workers, progress=stage_progress()
    )
    print_summary(result)
    print_scorecard("Scorecard: worst verdict per axis (numbers and every check in the report)", result.verdicts)
