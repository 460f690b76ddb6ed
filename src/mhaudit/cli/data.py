"""`mhaudit data`: import, inspect, clean, split, merge and simulate corpora (mhaudit.tables.corpus)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from mhaudit.cli.console import guarded, out, print_table
from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.policies import MultiLabelPolicy

app = typer.Typer(help="Import, inspect, clean and split corpora.", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="data")


@app.command("import")
@guarded
def import_(source: Annotated[str, typer.Argument(help="Source name (see `mhaudit data sources`).")],
            paths: Annotated[list[Path], typer.Argument(help="Files to read.")],
            out_path: Annotated[Path, typer.Option("--out", help="Corpus Parquet file to write.")],
            mapping: Annotated[str | None, typer.Option(help="Label mapping name(s), chained with '+'.")] = None,
            platform: Annotated[str | None, typer.Option(help="Platform name (overrides the source's).")] = None,
            dataset: Annotated[str | None, typer.Option(help="Data-set name (overrides the source's).")] = None,
            encoding: Annotated[str, typer.Option(help="Text encoding of the files.")] = "utf-8",
            multi_label: Annotated[MultiLabelPolicy, typer.Option(help="Policy for rows with several labels.")]
            = MultiLabelPolicy.first,
            priority: Annotated[str | None, typer.Option(help="Class order for --multi-label priority, "
                                                               "comma-separated.")] = None,
            split: Annotated[str, typer.Option(help="'auto' keeps official splits and draws 70/15/15 "
                                                    "where none; or train/val/test/calibration for all rows.")]
            = "auto",
            seed: Annotated[int, typer.Option(help="Seed for drawn splits.")] = 0,
            text_col: Annotated[str | None, typer.Option(help="Text column (generic sources).")] = None,
            label_col: Annotated[str | None, typer.Option(help="Label column (generic sources).")] = None,
            id_col: Annotated[str | None, typer.Option(help="Id column (generic sources).")] = None,
            sep: Annotated[str | None, typer.Option(help="Delimiter (generic sources).")] = None,
            label_source: Annotated[str | None, typer.Option(help="Label source (human, auto, ...).")] = None,
            drop_empty: Annotated[bool, typer.Option(help="Drop rows whose text is empty (counted) instead "
                                                          "of stopping.")] = False,
            ) -> None:
    """Read a data set into a corpus table, mapping its labels, and print the mapping report."""
    from mhaudit.tables.corpus.importing import import_source
    from mhaudit.tables.corpus.schema import SPLITS
    from mhaudit.tables.corpus.sources import ReadOptions

    if split != "auto" and split not in SPLITS:
        raise InputError(f"--split '{split}' must be 'auto' or one of {', '.join(SPLITS)}")
    options = ReadOptions(encoding=encoding, platform=platform, dataset=dataset, text_col=text_col,
                          label_col=label_col, id_col=id_col, sep=sep, label_source=label_source)
    result = import_source(source, paths, mapping=mapping, options=options,
                           policy=multi_label,
                           priority=priority.split(",") if priority else None, split=split, seed=seed,
                           drop_empty=drop_empty)
    result.corpus.write(out_path)
    frame = result.corpus.frame
    out.print(f"read {result.rows_read} rows; wrote {len(frame)} rows to {out_path} "
              f"(mapping {result.corpus.meta['mapping']}; {result.split_note})")
    if result.empty_rows_dropped:
        out.print(f"dropped {result.empty_rows_dropped} rows with empty text (--drop-empty)")
    print_table("mapping report", result.mapping_report)
    if not result.dropped.empty:
        print_table("dropped", result.dropped)


@app.command()
@guarded
def describe(corpus_path: Annotated[Path, typer.Argument(help="Corpus Parquet file.")],
             max_tokens: Annotated[int, typer.Option(help="Report the share of texts longer than this.")] = 64,
             tokenizer: Annotated[str | None, typer.Option(
                 help="Count tokens with a Hugging Face tokenizer: a folder, 'minilm', or a hub id. "
                      "Default: whitespace words (a lower bound).")] = None,
             as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
             ) -> None:
    """Rows per platform/split/label, label-source mix and text length."""
    from mhaudit.tables.corpus.describe import describe as run
    from mhaudit.tables.corpus.describe import tokenizer_tokens, whitespace_tokens
    from mhaudit.tables.corpus.schema import Corpus

    corpus = Corpus.read(corpus_path)
    counter, unit = (tokenizer_tokens(tokenizer), f"tokens ({tokenizer})") if tokenizer else \
        (whitespace_tokens, "whitespace words")
    tables = run(corpus, max_tokens=max_tokens, count_tokens=counter, token_unit=unit)
    if as_json:
        sys.stdout.write(json.dumps({k: v.to_dict("records") for k, v in tables.items()}, default=str) + "\n")
        return
    if corpus.synthetic:
        out.print("[bold yellow]SYNTHETIC DATA[/]: generated by mhaudit.synthetic.simulate.")
    out.print(f"classes (mapping order): {', '.join(corpus.classes)}")
    for name, table in tables.items():
        print_table(name.replace("_", " "), table)


@app.command()
def mappings() -> None:
    """List the label mappings shipped with mhaudit."""
    import pandas as pd

    from mhaudit.tables.corpus.mappings import available

    print_table("label mappings (use --mapping NAME, chain with '+', e.g. goemotions-cpfe-code+cpfe-b)",
                pd.DataFrame([{"name": m.name, "classes": ", ".join(m.classes), "summary": m.summary}
                              for m in available()]))


@app.command()
def sources() -> None:
    """List the data-set importers."""
    import pandas as pd

    from mhaudit.tables.corpus.sources import all_sources

    print_table("sources", pd.DataFrame([{"name": s.name, "default mapping": s.default_mapping or "-",
                                          "summary": s.summary} for s in all_sources()]))


@app.command()
@guarded
def clean(corpus_path: Annotated[Path, typer.Argument(help="Corpus Parquet file.")],
          out_path: Annotated[Path, typer.Option("--out", help="Cleaned corpus to write.")],
          against: Annotated[list[Path] | None, typer.Option(
              help="Evaluation corpora: their texts are removed from this corpus's train/val rows.")] = None,
          keep_conflicting: Annotated[bool, typer.Option(
              help="Keep the first copy of texts whose copies disagree on the label.")] = False) -> None:
    """Remove exact duplicates (case and whitespace normalised) and decontaminate the training pool."""
    import pandas as pd

    from mhaudit.tables.corpus.dedup import decontaminate, deduplicate
    from mhaudit.tables.corpus.schema import Corpus

    corpus = Corpus.read(corpus_path)
    frame, report = deduplicate(corpus.frame, drop_conflicting=not keep_conflicting)
    pool = frame["split"].isin(["train", "val"])
    evaluation = [frame[~pool]] + [Corpus.read(p).frame for p in against or []]
    kept, removed = decontaminate(frame[pool], evaluation)
    frame = pd.concat([kept, frame[~pool]]).sort_index()
    Corpus.build(frame, corpus.classes, meta=corpus.meta).write(out_path)
    print_table("deduplication", report.as_table().assign(contaminated_train_rows_removed=removed,
                                                          rows_out=len(frame)))


@app.command()
@guarded
def split(corpus_path: Annotated[Path, typer.Argument(help="Corpus Parquet file.")],
          out_path: Annotated[Path, typer.Option("--out", help="Corpus to write.")],
          train: float = 0.70, val: float = 0.15, test: float = 0.15,
          calibration: Annotated[str | None, typer.Option(
              help="Draw a stratified calibration split of this platform's test rows instead.")] = None,
          fraction: Annotated[float, typer.Option(help="Calibration fraction.")] = 0.10,
          seed: int = 0) -> None:
    """Redraw stratified train/val/test splits, or draw a platform's calibration split (stored)."""
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.corpus.splits import assign_calibration, assign_splits

    corpus = Corpus.read(corpus_path)
    if calibration:
        frame = assign_calibration(corpus.frame, calibration, fraction=fraction, seed=seed)
    else:
        frame = assign_splits(corpus.frame, train=train, val=val, test=test, seed=seed)
    Corpus.build(frame, corpus.classes, meta=corpus.meta).write(out_path)
    print_table("rows per split", frame.groupby(["platform", "dataset", "split"]).size()
                .rename("rows").reset_index())


@app.command()
@guarded
def merge(paths: Annotated[list[Path], typer.Argument(help="Corpora with the same classes.")],
          out_path: Annotated[Path, typer.Option("--out", help="Merged corpus to write.")]) -> None:
    """Join corpora (e.g. one per platform) into one table; classes must match in order."""
    from mhaudit.tables.corpus.schema import merge_corpora

    merged = merge_corpora(paths)
    merged.write(out_path)
    out.print(f"wrote {len(merged.frame)} rows from {len(paths)} corpora to {out_path}")


@app.command()
@guarded
def simulate(out_path: Annotated[Path, typer.Option("--out", help="Corpus Parquet file to write.")],
             seed: int = 0, n_per_platform: int = 2000,
             no_shift: Annotated[bool, typer.Option(help="Switch every shift off.")] = False) -> None:
    """Write the built-in SYNTHETIC multi-platform corpus."""
    from mhaudit.synthetic.simulate import SimulationConfig
    from mhaudit.synthetic.simulate import simulate as run

    config = (SimulationConfig.no_shift if no_shift else SimulationConfig)(seed=seed,
                                                                           n_per_platform=n_per_platform)
    corpus = run(config)
    corpus.write(out_path)
    out.print(f"wrote {len(corpus.frame)} SYNTHETIC rows to {out_path}")
