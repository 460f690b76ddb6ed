"""`mhaudit explain`: word attributions of trained model(s) on a corpus, written as an attributions table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mhaudit.attribution import EXPLAIN_SAMPLE
from mhaudit.cli.console import guarded, out
from mhaudit.cli.models import MappingOpt, TrustPickleOpt
from mhaudit.core.errors import InputError


def register(root: typer.Typer) -> None:
    root.command()(explain)


@guarded
def explain(
    model_dir: Annotated[
        Path,
        typer.Option(
            "--model",
            help="A trained model folder (or a parent of seed-* and run-* folders), a Hugging Face folder "
            "(save_pretrained) or a scikit-learn pipeline (.skops).",
        ),
    ],
    corpus: Annotated[Path, typer.Option(help="Corpus Parquet file whose texts are attributed.")],
    method: Annotated[
        str,
        typer.Option(
            help="linear (TF-IDF models, linear scikit-learn pipelines), saliency or integrated_gradients "
            "(transformer models, Hugging Face folders)."
        ),
    ],
    out_path: Annotated[
        Path, typer.Option("--out", help="Attributions table to write (.parquet, .csv, .tsv or .jsonl).")
    ],
    n: Annotated[int, typer.Option("--n", help="At most this many texts per platform and data set.")] = EXPLAIN_SAMPLE,
    seed: Annotated[int, typer.Option(help="Seed of the text selection (the same texts for every model seed).")] = 0,
    splits: Annotated[str, typer.Option(help="Splits whose texts are attributed, comma-separated.")] = "test",
    name: Annotated[str | None, typer.Option(help="Model name in the table (default: registry name).")] = None,
    mapping: MappingOpt = None,
    trust_pickle: TrustPickleOpt = False,
) -> None:
    """Attribute a seeded sample of a corpus's texts with trained model(s): one attributions table (axis 5)."""
    import pandas as pd

    from mhaudit.experiments.explain import explain_corpus
    from mhaudit.models import load_model
    from mhaudit.models.base import ATTRIBUTION_METHODS
    from mhaudit.models.seeds import model_folders
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.io import table_format, write_table

    if method not in ATTRIBUTION_METHODS:  # before any model is loaded
        raise InputError(f"unknown attribution method '{method}'; choose {', '.join(ATTRIBUTION_METHODS)}")
    table_format(out_path, "the attributions")
    folders, loaded = model_folders(model_dir), Corpus.read(corpus)
    tables = [
        explain_corpus(
            load_model(folder, mapping=mapping, trust_pickle=trust_pickle),
            loaded,
            method,
            n=n,
            seed=seed,
            splits=tuple(splits.split(",")),
            model_name=name,
        )
        for folder in folders
    ]
    table = pd.concat(tables, ignore_index=True)
    write_table(table, out_path, what="the attributions")
    out.print(
        f"wrote {len(table):,} attribution rows ({method}; {len(folders)} model folder(s); "
        f"{tables[0].attrs['texts']:,} texts from {table['platform'].nunique()} platform(s), at most {n} "
        f"per platform and data set) to {out_path}"
    )
