"""Ensembles of runs: N diverse runs of one model on one platform, the same runs for the same base seed.

A deterministic model (the TF-IDF models) fits run k on a per-label bootstrap resample of the train rows with a
regularisation C drawn log-uniformly from `C_RANGE`, both from `numpy.random.default_rng(base_seed + k)`; any other
model runs with seed base_seed + k. Run k is the folder `run-<k>/`, its manifest keeps the recipe, and its seed is
its `seed` in the predictions table. Why these sources of diversity: docs/models.md, "Ensembles of runs".
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.models.base import MODEL_FILE, create, is_deterministic, option_names, save_model
from mhaudit.models.seeds import default_platform, training_rows
from mhaudit.tables.corpus.schema import Corpus

C_RANGE = (1.0, 100.0)  # TF-IDF + LR: C=1 underfits short posts a little, C=100 barely regularises
RUN_PREFIX = "run-"
RECIPE_KEYS = ("run", "seed", "resample_seed", "C", "platform")  # what makes a run; a kept run must match


def run_recipes(
    model_name: str,
    n_runs: int,
    base_seed: int = 0,
    options: dict | None = None,
    c_range: tuple[float, float] = C_RANGE,
) -> list[dict]:
    """How each of `n_runs` runs is made: {run, seed, resample_seed, C}. A deterministic model gets a resample
    seed and, unless `options` fix C (or it has no C option), a C drawn log-uniformly from `c_range`; any other
    model only its seed (resample_seed None; C as `options` give it, else None)."""
    if not isinstance(n_runs, int) or isinstance(n_runs, bool) or n_runs < 1:
        raise InputError(f"the number of runs must be a positive integer, got {n_runs!r}")
    if not isinstance(base_seed, int) or isinstance(base_seed, bool) or base_seed < 0:
        raise InputError(f"the base seed of the runs must be a non-negative integer, got {base_seed!r}")
    low, high = c_range
    if not 0 < low <= high < float("inf"):
        raise InputError(f"the range C is drawn from must be two positive numbers, low <= high, got {c_range!r}")
    resample = is_deterministic(model_name)
    fixed_c = (options or {}).get("C")
    draw_c = resample and fixed_c is None and "C" in option_names(model_name)
    recipes = []
    for k in range(n_runs):
        rng = np.random.default_rng(base_seed + k)  # one stream per run: run k is the same whatever N is
        recipes.append(
            {
                "run": k,
                "seed": base_seed + k,  # the resample seed is drawn first, then C
                "resample_seed": int(rng.integers(2**31)) if resample else None,
                "C": float(np.exp(rng.uniform(np.log(low), np.log(high)))) if draw_c else fixed_c,
            }
        )
    return recipes


def bootstrap_rows(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """`rows` with its split-train rows replaced by a bootstrap resample drawn per label (with replacement, as
    many as the label has), so every class keeps its count; the val rows follow, unchanged. Index reset."""
    train = (rows["split"] == "train").to_numpy()
    labels = rows["label"].astype(str).to_numpy()
    rng = np.random.default_rng(seed)
    wheres = [np.flatnonzero(train & (labels == label)) for label in sorted(set(labels[train]))]
    picked = [rng.choice(where, size=len(where), replace=True) for where in wheres]
    return rows.iloc[np.concatenate([*picked, np.flatnonzero(~train)])].reset_index(drop=True)


def run_key(name: str) -> tuple[str | None, int | None]:
    """The (model, seed) a run's name means, as the predictions table keys it (None: any; a model alone means
    its only run): MODEL:SEED, MODEL, a model folder (its manifest's model and seed, as `predict` writes them),
    or the name of a folder `train --runs` wrote, run-<k> or MODEL:run-<k>: seed k, the default base seed 0
    plus k (a run trained with another base seed is named by its folder's path or MODEL:SEED)."""
    manifest = Path(name) / MODEL_FILE
    if manifest.is_file():
        saved = json.loads(manifest.read_text())
        return str(saved["name"]), int(saved.get("options", {}).get("seed", 0))
    if ":" not in name:
        run = re.fullmatch(rf"{RUN_PREFIX}(\d+)", Path(name).name)
        return (None, int(run.group(1))) if run else (name, None)
    model, _, seed = name.rpartition(":")
    run = re.fullmatch(rf"{RUN_PREFIX}(\d+)", seed)
    if not model or not (run or seed.strip().lstrip("-").isdigit()):
        raise InputError(
            f"'{name}' names no run: give MODEL:SEED (e.g. tfidf-lr:0), MODEL alone, or a run folder {RUN_PREFIX}<k>"
        )
    return model, int(run.group(1) if run else seed)


def train_runs(
    corpus: Corpus,
    platform: str | None,
    model_name: str,
    n_runs: int,
    out: Path,
    *,
    base_seed: int = 0,
    options: dict | None = None,
    c_range: tuple[float, float] = C_RANGE,
    progress: Progress | None = None,
) -> list[Path]:
    """`mhaudit train --runs N`: `n_runs` diverse runs of `model_name` (`run_recipes`) on the train rows of
    `platform` (None: `default_platform`), its val rows given to every run untouched, one folder out/run-<k>/
    each. A finished run (a folder with a manifest) is kept if its recipe matches, else an InputError. Each run
    is a stage of `progress`; its recipe, rows and seconds are a note."""
    progress = ensure(progress)
    recipes = run_recipes(model_name, n_runs, base_seed, options, c_range)
    platform = platform or default_platform(corpus)
    rows = training_rows(corpus, platform)
    folders = [Path(out) / f"{RUN_PREFIX}{recipe['run']}" for recipe in recipes]
    for recipe, folder in zip(recipes, folders):
        recipe = {**recipe, "platform": platform}
        if (folder / MODEL_FILE).exists():
            _check_kept(folder, model_name, recipe)
            progress.note(
                f"{model_name} run {recipe['run']} (seed {recipe['seed']}): already trained in {folder}, kept"
            )
            continue
        _train_run(corpus, rows, model_name, recipe, n_runs, folder, options, progress)
    return folders


def _train_run(
    corpus: Corpus,
    rows: pd.DataFrame,
    model_name: str,
    recipe: dict,
    n_runs: int,
    folder: Path,
    options: dict | None,
    progress: Progress,
) -> None:
    fit_rows = rows if recipe["resample_seed"] is None else bootstrap_rows(rows, recipe["resample_seed"])
    opts = {**(options or {}), "seed": recipe["seed"]}
    if recipe["C"] is not None:
        opts["C"] = recipe["C"]
    n_train = int((fit_rows["split"] == "train").sum())
    name = f"{model_name} run {recipe['run']} (seed {recipe['seed']})"
    start = time.perf_counter()
    with progress.stage(
        f"train {model_name} run {recipe['run'] + 1}/{n_runs} (seed {recipe['seed']}) on {recipe['platform']}"
    ):
        model = create(model_name, **opts)
        model.fit(fit_rows, corpus.classes, progress=progress)
    seconds = time.perf_counter() - start
    save_model(
        model,
        folder,
        recipe={**recipe, "model": model_name, "n_train": n_train, "seconds": round(seconds, 3)},
        trained_on=recipe["platform"],
    )
    progress.note(
        f"{name}: {describe_recipe(recipe)}; trained on {n_train:,} rows of {recipe['platform']} "
        f"in {seconds:.2f} s; saved to {folder}"
    )


def describe_recipe(recipe: dict) -> str:
    """One run's recipe in words, e.g. 'bootstrap resample 1234, C 12.3'."""
    parts = (
        [f"bootstrap resample {recipe['resample_seed']}"]
        if recipe.get("resample_seed") is not None
        else [f"seed {recipe['seed']} (head initialisation, batch order)"]
    )
    if recipe.get("C") is not None:
        parts.append(f"C {recipe['C']:.3g}")
    return ", ".join(parts)


def _check_kept(folder: Path, model_name: str, recipe: dict) -> None:
    manifest = json.loads((folder / MODEL_FILE).read_text())
    kept = manifest.get("recipe") or {}
    if manifest.get("name") != model_name or any(kept.get(k) != recipe[k] for k in RECIPE_KEYS):
        made, asked = ({k: r.get(k) for k in RECIPE_KEYS} for r in (kept, recipe))
        raise InputError(
            f"{folder} already holds a run of {manifest.get('name')} made as {made}, not the "
            f"{model_name} run asked for ({asked}); write the runs to another folder"
        )


def read_recipes(folders: list[Path]) -> pd.DataFrame:
    """The recipes of trained run folders, one row each (folder, model, run, seed, resample_seed, C, platform,
    n_train, seconds); a folder without a recipe (a seed-* folder, an outside model) is left out."""
    manifests = [
        (str(folder), json.loads((Path(folder) / MODEL_FILE).read_text()))
        for folder in folders
        if (Path(folder) / MODEL_FILE).is_file()
    ]
    return pd.DataFrame([{"folder": folder, **m["recipe"]} for folder, m in manifests if m.get("recipe")])


def summarize_runs(folders: list[Path]) -> str | None:
    """One line on the runs among `folders` for the CLI, e.g. '8 runs of tfidf-lr (seeds 0-7): bootstrap
    resamples, C 1.4-88'; None when no folder is a run."""
    recipes = read_recipes(folders)
    if recipes.empty:
        return None
    parts = []
    for model, block in recipes.groupby("model", sort=True):
        what = f"{len(block)} runs of {model} (seeds {block['seed'].min()}-{block['seed'].max()})"
        if block["resample_seed"].notna().any():
            what += ": bootstrap resamples"
        if block["C"].notna().any():
            what += f", C {block['C'].min():.3g}-{block['C'].max():.3g}"
        parts.append(what)
    return "; ".join(parts)
