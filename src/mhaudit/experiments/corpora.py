"""An experiment's corpora, imported once: `[[corpus]]` tables merged into one corpus (binary targets apart), each
cached under the output folder by a hash of its specs and its files' contents, so a re-run reads it back and an
edited file imports again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress, ensure
from mhaudit.experiments.binary_targets import BinaryTarget
from mhaudit.experiments.config import CorpusSpec, Experiment, options_of
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.corpus.splits import assign_calibration
from mhaudit.tables.predictions import sha256_file


def step_key(*parts) -> str:
    """A step's cache key: a short hash of its inputs and options (a corpus here, a trained model in the runner)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def resolved_mapping(exp: Experiment, mapping: str | None) -> str | None:
    """A mapping with each .toml file of a chain 'a+b.toml' resolved against the experiment's folder."""
    if not mapping:
        return mapping
    parts = [
        str(exp.folder / p) if p.endswith(".toml") and (exp.folder / p).exists() else p for p in mapping.split("+")
    ]
    return "+".join(parts)


def _mapping(exp: Experiment, spec: CorpusSpec) -> str | None:
    return resolved_mapping(exp, spec.mapping)


def _files(exp: Experiment, specs: list[CorpusSpec]) -> dict[str, str]:
    """Content digests of the data files and mapping files the specs read: an edit invalidates the cache."""
    paths = [exp.folder / p for spec in specs for p in spec.paths]
    paths += [Path(p) for spec in specs for p in (_mapping(exp, spec) or "").split("+") if p.endswith(".toml")]
    return {str(p): sha256_file(p) if p.exists() else "missing" for p in paths}


def _import(exp: Experiment, spec: CorpusSpec, progress: Progress) -> Corpus:
    options = options_of(spec, ImportOptions, mapping=_mapping(exp, spec))
    result = import_source(spec.source, [exp.folder / p for p in spec.paths], options)
    progress.note(f"corpus: {spec.source} -> {len(result.corpus.frame)} rows ({result.corpus.meta['mapping']})")
    return result.corpus


def build_corpus(exp: Experiment, out: Path, progress: Progress | None = None) -> tuple[Corpus, Path, str]:
    """Import and merge the experiment's corpora once (binary targets apart: `build_binary_targets`), as
    `import_corpora` does.

    Fine-tuning on a target (adapt_epochs) needs its calibration rows before training: they are stored, as
    `mhaudit data split --calibration` stores them, so temperature scaling uses the same rows. Otherwise the
    audit draws them itself, as on every other route."""
    adapting = exp.design == "reference" and any(m.adapt_epochs > 0 for m in exp.model)
    calibration = (exp.reference, exp.audit.calibration_fraction, exp.audit.seed) if adapting else None
    return import_corpora(
        exp,
        [spec for spec in exp.corpus if spec.binary is None],
        out,
        progress,
        key_extra=(calibration,),
        calibrate=adapting,
    )


def keep(corpus: Corpus, path: Path) -> None:
    """Write an imported corpus to its cache path, unless it was read from there."""
    if not path.exists():
        corpus.write(path)


def import_corpora(
    exp: Experiment,
    specs: list[CorpusSpec],
    out: Path,
    progress: Progress | None = None,
    *,
    key_extra: tuple = (),
    calibrate: bool = False,
) -> tuple[Corpus, Path, str]:
    """The specs imported into one corpus (one set of classes); cached by the specs, the files' contents and
    `key_extra` at the path returned, which the caller writes (`keep`) once the whole experiment is checked.
    `calibrate`: each target platform without a calibration split gets one stored."""
    progress = ensure(progress)
    key = step_key([c.key_dump() for c in specs], _files(exp, specs), *key_extra)
    path = out / "corpus" / f"{key}.parquet"
    if path.exists():
        progress.note(f"corpus: cached {path}")
        return Corpus.read(path), path, key
    corpora = [_import(exp, spec, progress) for spec in specs]
    classes = corpora[0].classes
    for spec, c in zip(specs[1:], corpora[1:]):
        if c.classes != classes:
            raise InputError(
                f"corpus '{spec.source}' maps to classes {c.classes}, not {classes}; every corpus of "
                "an experiment must map to the same classes"
            )
    frame = pd.concat([c.frame for c in corpora], ignore_index=True)
    for platform in sorted(set(frame["platform"]) - {exp.reference}) if calibrate else ():
        if not (frame.loc[frame["platform"] == platform, "split"] == "calibration").any():
            frame = assign_calibration(frame, platform, fraction=exp.audit.calibration_fraction, seed=exp.audit.seed)
            n = ((frame["platform"] == platform) & (frame["split"] == "calibration")).sum()
            progress.note(
                f"corpus: stored a calibration split of {platform} for fine-tuning (adapt_epochs): {n:,} rows"
            )
    return (
        Corpus.build(
            frame, classes, meta={"mapping": " | ".join(c.meta["mapping"] for c in corpora), "synthetic": False}
        ),
        path,
        key,
    )


def build_binary_targets(
    exp: Experiment, out: Path, classes: list[str], progress: Progress | None = None
) -> list[BinaryTarget]:
    """Import each binary target corpus (cached like `build_corpus`, at `target.path`, which the caller writes)
    and check its spec against the models' `classes`."""
    progress = ensure(progress)
    targets = []
    for spec in (s for s in exp.corpus if s.binary is not None):
        name = f"binary target '{spec.dataset or spec.source}'"
        b = spec.binary
        unknown = [c for c in [*b.positive, *([] if b.negative == "rest" else b.negative)] if c not in classes]
        if unknown:
            raise InputError(
                f"{name}: class(es) {', '.join(unknown)} in binary are not model classes ({', '.join(classes)})"
            )
        if not b.negative_classes(classes):
            raise InputError(f'{name}: binary.positive names every model class; nothing is left for "rest"')
        key = step_key(spec.key_dump(), _files(exp, [spec]))
        path = out / "corpus" / f"binary-{key}.parquet"
        if path.exists():
            progress.note(f"corpus: cached {path}")
            corpus = Corpus.read(path)
        else:
            corpus = _import(exp, spec, progress)
            if len(corpus.classes) != 2:
                raise InputError(
                    f"{name} maps to {len(corpus.classes)} classes ({', '.join(corpus.classes)}); a "
                    "binary target needs a two-class mapping, negative first and positive last "
                    "(e.g. stress-binary)"
                )
        targets.append(BinaryTarget(spec, corpus, key, path))
    return targets
