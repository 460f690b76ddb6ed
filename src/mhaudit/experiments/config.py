"""Experiment files (TOML), validated with pydantic: one sentence per mistake, naming the key."""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from mhaudit.attribution import EXPLAIN_SAMPLE
from mhaudit.audits.agreement.options import AgreementOptions
from mhaudit.audits.cpfe.options import CPFEOptions
from mhaudit.audits.divergence.options import DivergenceOptions
from mhaudit.core.errors import InputError
from mhaudit.core.options import described
from mhaudit.tables.corpus.importing import ImportOptions


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def options_table(options_type: type, name: str, *, base: type[BaseModel] = Strict, exclude=()) -> type[BaseModel]:
    """An experiment file's table of an audit's options, made from its options dataclass: one key per field, with
    the field's default and help (its rules are checked when the options are made: `load_experiment` makes them).
    `exclude`: fields the experiment sets elsewhere (the reference platform)."""
    hints: dict[str, type] = typing.get_type_hints(options_type)
    fields: dict[str, typing.Any] = {}
    for field in described(options_type):
        if field.name in exclude:
            continue
        hint, help_text = hints[field.name], field.metadata["help"]
        if dataclasses.is_dataclass(hint):
            table = options_table(hint, f"{name}_{field.name}")
            fields[field.name] = (table, Field(default_factory=table, description=help_text))
        else:
            default = ... if field.default is dataclasses.MISSING else field.default
            fields[field.name] = (hint, Field(default, description=help_text))
    return create_model(name, __base__=base, __doc__=f"The options of {options_type.__name__}, by field.", **fields)


def options_of(table: BaseModel, options_type: type, **fixed):
    """`options_type` made from an `options_table` (and the fields the experiment sets elsewhere)."""
    hints = typing.get_type_hints(options_type)
    values = {
        f.name: getattr(table, f.name)
        for f in described(options_type)
        if f.name in type(table).model_fields and f.name not in fixed
    }
    for name, value in values.items():
        if dataclasses.is_dataclass(hints[name]):
            values[name] = options_of(value, hints[name])
    return options_type(**values, **fixed)


class BinarySpec(Strict):
    """How a binary target's labels meet a multi-class model: which model classes are the positive side.

    The target corpus maps to two classes, negative first and positive last (as the built-in binary
    mappings do, e.g. stress-binary: no_stress, stress). The model's score for the positive side is
    log-sum-exp of the `positive` classes' logits minus log-sum-exp of the `negative` ones ("rest": every
    other class): the binary logit of P(positive) / (P(positive) + P(negative)) under the model's softmax.
    """

    positive: list[str] = Field(min_length=1)
    negative: list[str] | Literal["rest"] = "rest"

    @model_validator(mode="after")
    def _sides(self) -> BinarySpec:
        if len(set(self.positive)) != len(self.positive):
            raise ValueError(f"binary.positive repeats a class: {self.positive}")
        if self.negative != "rest":
            if not self.negative:
                raise ValueError('binary.negative must name at least one class, or be "rest"')
            both = sorted(set(self.positive) & set(self.negative))
            if both:
                raise ValueError(f"class(es) {', '.join(both)} are both positive and negative")
        return self

    def negative_classes(self, classes: list[str]) -> list[str]:
        return [c for c in classes if c not in self.positive] if self.negative == "rest" else list(self.negative)

    def describe(self) -> str:
        negative = "rest" if self.negative == "rest" else " + ".join(self.negative)
        return f"{' + '.join(self.positive)} vs {negative}"


class CorpusFiles(Strict):
    """A corpus of the experiment: the source and its files. The other keys are `mhaudit data import`'s options
    (ImportOptions), by the same names and with the same defaults."""

    source: str
    paths: list[str]
    # A binary evaluation target (e.g. Dreaddit, stress vs not) for a model with more classes: its two
    # classes are compared with the model's collapsed score (see BinarySpec); never trained on.
    binary: BinarySpec | None = None

    def key_dump(self) -> dict:
        """The fields that define the imported rows (binary is how they are scored, not what they are; an unset
        `sep` is left out, so that earlier runs' keys hold)."""
        return self.model_dump(exclude={"binary", *(("sep",) if getattr(self, "sep", None) is None else ())})


CorpusSpec: TypeAlias = options_table(  # type: ignore[valid-type]  # a model made at run time: Any to mypy
    ImportOptions, "CorpusSpec", base=CorpusFiles
)


# the keys of a model to train, which an outside model (path) has no use for: it is predicted with, never trained
TRAINING_KEYS = ("name", "options", "subsample", "adapt_epochs", "seeds")
OUTSIDE_KEYS = ("path", "mapping", "trust_pickle")  # the keys of an outside model, which one to train has no use for


class ModelSpec(Strict):
    """A [[model]] table: a registered model to train (`name`), or an outside model to predict with (`path`: a
    Hugging Face folder or a skops pipeline file, read from the experiment file's folder; `mapping` maps its labels
    to the corpus's classes, `trust_pickle` allows pickle weights or files; docs/models.md)."""

    name: str | None = None
    path: str | None = None
    mapping: str | None = None  # an outside model's labels to the classes: a shipped name or a .toml file
    trust_pickle: bool = False  # an outside model's pickle weights or files may load (loading a pickle runs code)
    label: str | None = None  # the model's name in tables (default: name, or the path's last part)
    options: dict = Field(default_factory=dict)
    subsample: int | None = Field(None, ge=1)  # N of the train rows, by label and seeded; every val row kept
    explain: Literal["none", "linear", "saliency", "integrated_gradients"] = "none"
    explain_sample: int = Field(EXPLAIN_SAMPLE, ge=1)  # test texts per platform and data set (mhaudit explain --n)
    adapt_epochs: int = 0  # > 0: also fine-tune on each target's calibration split (paper section 4.6: 3)

    @model_validator(mode="before")
    @classmethod
    def _name_or_path(cls, values: typing.Any) -> typing.Any:
        """A model to train or an outside model, never both; an outside model takes no training key (checked
        before the unknown keys, so that `seeds` on it is said as such)."""
        if not isinstance(values, dict):
            return values
        if values.get("path") is None:
            if values.get("name") is None:
                raise ValueError("give name (a model to train) or path (an outside model to predict with)")
            outside = [k for k in ("mapping", "trust_pickle") if k in values]
            if outside:
                raise ValueError(f"{outside[0]} is for an outside model (path), not for one to train (name)")
            return values
        training = [k for k in TRAINING_KEYS if k in values]
        if training:
            raise ValueError(
                f"'{training[0]}' does not apply to an outside model (path = \"{values['path']}\"): it is predicted "
                "with as it is, never trained; leave out name, options, subsample, adapt_epochs and seeds"
            )
        return values

    @property
    def outside(self) -> bool:
        return self.path is not None

    @property
    def key(self) -> str:
        if self.label or self.name:
            return typing.cast(str, self.label or self.name)
        name = Path(typing.cast(str, self.path).rstrip("/\\")).name
        return name.rsplit(".", 1)[0] if name.endswith((".skops", ".joblib", ".pkl", ".pickle")) else name


# [audit]: the cross-platform audit's options; the reference platform is the experiment's
AuditSpec: TypeAlias = options_table(  # type: ignore[valid-type]  # made at run time, as CorpusSpec
    CPFEOptions, "AuditSpec", exclude=("reference",)
)


class LabelSourceCorpora(Strict):
    """The label-source audit (TSS probe, docs/divergence.md) beside the cross-platform one: a binary corpus of
    human- and auto-labelled data sets; each experiment model (its first seed) enters as a baseline scored
    through `binary` (which model classes are the positive side), so it gets a DoD against channel A. The other
    keys are the audit's options, with the same defaults as `mhaudit audit divergence`."""

    corpus: list[CorpusSpec] = Field(min_length=1)
    binary: BinarySpec | None = None  # needed with [[model]] tables: how the models' classes collapse to two


LabelSourceSpec: TypeAlias = options_table(  # type: ignore[valid-type]  # made at run time, as CorpusSpec
    DivergenceOptions, "LabelSourceSpec", base=LabelSourceCorpora
)


class ValidationFiles(Strict):
    """The human validation (docs/validation.md) beside the cross-platform audit: a labels table (weak labeler,
    annotators, adjudicator) and, with `items` (the labelled posts, ids = the labels' item ids) and `binary`,
    each experiment model's predicted labels scored against the same reference. The other keys are the options of
    `mhaudit audit agreement`, with its defaults; the models are the experiment's."""

    labels: list[str] = Field(min_length=1)
    items: CorpusSpec | None = None
    binary: BinarySpec | None = None

    @model_validator(mode="after")
    def _models_need_both(self) -> ValidationFiles:
        if (self.items is None) != (self.binary is None):
            raise ValueError(
                "validation.items and validation.binary go together: the models score the items and "
                "binary says which model classes are label 1"
            )
        return self


ValidationSpec: TypeAlias = options_table(  # type: ignore[valid-type]  # made at run time, as CorpusSpec
    AgreementOptions, "ValidationSpec", base=ValidationFiles, exclude=("models",)
)


class FileAuditSpec(Strict):
    """An audit run on files (`[[audits]]`, experiments.file_audits): `audit` names it (mhaudit.audits.AUDITS),
    `files` its inputs' constructor arguments that are paths (read from the experiment file's folder), `read` the
    other arguments, `options` its options by field name, with the defaults of its command."""

    audit: str
    files: dict[str, str | list[str]] = Field(default_factory=dict)
    read: dict = Field(default_factory=dict)
    options: dict = Field(default_factory=dict)


class Experiment(Strict):
    name: str
    design: Literal["reference", "all-pairs"] = "reference"
    reference: str | None = None
    seeds: list[int] = Field(default_factory=lambda: [42, 0, 1, 7, 123])
    corpus: list[CorpusSpec] = Field(default_factory=list)  # none: [label_source] or [validation] alone
    model: list[ModelSpec] = Field(default_factory=list)
    audit: AuditSpec = Field(default_factory=AuditSpec)
    label_source: LabelSourceSpec | None = None  # also run the label-source audit (reference design)
    validation: ValidationSpec | None = None  # also run the human validation (reference design)
    audits: list[FileAuditSpec] = Field(default_factory=list)  # any audit on files it names
    folder: Path = Path(".")  # the experiment file's folder: relative paths are read from there

    @model_validator(mode="after")
    def _reference_for_design(self) -> Experiment:
        if not self.corpus:
            if not (self.label_source or self.validation or self.audits):
                raise ValueError(
                    "nothing to audit: give [[corpus]] and [[model]] tables (the cross-platform audit), "
                    "[label_source], [validation] or [[audits]]"
                )
            if self.model:
                raise ValueError("[[model]] tables need [[corpus]] tables to train on")
            if self.validation and self.validation.items:
                raise ValueError(
                    "validation.items are scored by the experiment's models: give [[corpus]] and "
                    "[[model]] tables, or leave items out"
                )
        elif not self.model:
            raise ValueError("[[corpus]] tables need at least one [[model]] to train on them")
        elif self.design == "reference" and not self.reference:
            raise ValueError("design 'reference' needs reference = \"<platform>\"")
        if self.label_source and self.model and self.label_source.binary is None:
            raise ValueError(
                "[label_source] needs binary = { positive = [...] }: which model classes the experiment's "
                "models score as the positive side"
            )
        if self.design == "all-pairs" and any(spec.outside for spec in self.model):
            raise ValueError(
                "design 'all-pairs' trains every model on every platform; an outside model (path) is not "
                "trained: use design 'reference'"
            )
        if (self.label_source or self.validation) and self.design != "reference":
            raise ValueError("[label_source] and [validation] run beside design 'reference' only")
        if any(c.binary for c in self.corpus):
            if self.design != "reference":
                raise ValueError("binary targets (corpus.binary) need design 'reference'")
            if all(c.binary for c in self.corpus):
                raise ValueError(
                    "every corpus is a binary target; the models need a corpus without 'binary' to train on"
                )
        return self

    def cpfe_options(self, reference: str | None = None, **fixed) -> CPFEOptions:
        """The cross-platform audit's options: [audit], against `reference` (default: the experiment's)."""
        return options_of(self.audit, CPFEOptions, reference=reference or self.reference, **fixed)

    def divergence_options(self) -> DivergenceOptions | None:
        """The label-source audit's options from [label_source], or None without one."""
        return None if self.label_source is None else options_of(self.label_source, DivergenceOptions)

    def validation_options(self, models: tuple[str, ...] = ()) -> AgreementOptions | None:
        """The human validation's options from [validation], the experiment's `models` scored beside the weak
        labeler, or None without one."""
        return None if self.validation is None else options_of(self.validation, AgreementOptions, models=models)


def load_experiment(path: str | Path) -> Experiment:
    from mhaudit.experiments import file_audits

    path = Path(path)
    if not path.exists():
        raise InputError("no such file; expected an experiment TOML (see examples/)", path=path)
    try:
        doc = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=path) from None
    try:
        experiment = Experiment(**doc, folder=path.resolve().parent)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise InputError(f"{where}: {_message(first)} ({exc.error_count()} problem(s) in all)", path=path) from None
    corpora = [
        *experiment.corpus,
        *(experiment.label_source.corpus if experiment.label_source else ()),
        *((experiment.validation.items,) if experiment.validation and experiment.validation.items else ()),
    ]
    tables: dict[str, typing.Callable[[], object]] = {
        "audit": lambda: experiment.cpfe_options(reference=experiment.reference or "reference"),
        "label_source": experiment.divergence_options,
        "validation": experiment.validation_options,
        "corpus": lambda: [options_of(spec, ImportOptions) for spec in corpora],
        "audits": lambda: list(map(file_audits.check, experiment.audits)),
    }
    for table, make in tables.items():  # a bad value is said before any work
        try:
            make()
        except InputError as exc:
            raise InputError(str(exc) if table == "audits" else f"[{table}] {exc}", path=path) from None
    return experiment


def _message(error: typing.Mapping) -> str:
    """pydantic's message, with the nearest known key for an unknown one (e.g. a key renamed since)."""
    if error["type"] != "extra_forbidden":
        return error["msg"]
    import difflib

    tables = {"audit": AuditSpec, "label_source": LabelSourceSpec, "validation": ValidationSpec, "corpus": CorpusSpec}
    table = tables.get(error["loc"][0])
    key, keys = str(error["loc"][-1]), list(table.model_fields) if table else []
    near = sorted({*difflib.get_close_matches(key, keys, n=2), *(k for k in keys if k.startswith(key))})
    return "not a key" + (f"; did you mean {' or '.join(near[:3])}?" if near else "")
