"""The whole experiment checked before any work is written: its models, its files, and every platform and data set
it names against the corpora it imports. One sentence naming the TOML key; nothing on disk yet."""

from __future__ import annotations

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import Experiment
from mhaudit.tables.corpus.names import check_place
from mhaudit.tables.corpus.schema import Corpus


def check_models_and_files(exp: Experiment) -> None:
    """Every [[model]] name and option is known, and every file the experiment reads exists."""
    from mhaudit.models.base import option_names, unknown_options

    for spec in exp.model:
        if spec.name is None:  # an outside model: outside_models checks it
            continue
        if unknown := unknown_options(spec.name, spec.options):  # an unknown name is its own sentence
            raise InputError(
                f"[[model]] {spec.key}: options has no key {', '.join(unknown)}; model '{spec.name}' "
                f"takes {', '.join(option_names(spec.name))}"
            )
    corpora = [
        *exp.corpus,
        *(exp.label_source.corpus if exp.label_source else []),
        *([exp.validation.items] if exp.validation and exp.validation.items else []),
    ]
    paths = [p for spec in corpora for p in spec.paths] + (list(exp.validation.labels) if exp.validation else [])
    paths += [
        p
        for spec in exp.audits
        for v in spec.files.values()
        for p in ([v] if isinstance(v, str) else v)
        if not any(c in p for c in "*?[")
    ]  # a glob may match nothing yet: its reader says so
    missing = [p for p in paths if not (exp.folder / p).exists()]
    if missing:
        raise InputError(
            f"{len(missing)} file(s) named in the experiment do not exist, e.g. '{missing[0]}' "
            f"(paths are read from the experiment file's folder, {exp.folder})"
        )


def check_names(exp: Experiment, corpus: Corpus | None, label_source: Corpus | None) -> None:
    """The reference is a platform or data set of the corpus; [label_source] human, auto and train_dataset are
    data sets of its corpus."""
    if corpus is not None and exp.reference:
        frame = corpus.frame
        check_place(
            exp.reference,
            frame["platform"],
            frame["dataset"],
            what="reference",
            where="in the experiment's [[corpus]] tables",
        )
    if label_source is not None and exp.label_source is not None:
        spec, known = exp.label_source, sorted(set(label_source.frame["dataset"].astype(str)))
        named = {
            "human": spec.human,
            "auto": spec.auto,
            "train_dataset": [spec.train_dataset] if spec.train_dataset else [],
        }
        for key, names in named.items():
            for name in names:
                check_place(
                    name, (), known, what=f"[label_source] {key}", where="in the [[label_source.corpus]] tables"
                )
