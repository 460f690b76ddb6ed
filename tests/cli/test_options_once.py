"""Each option declared once (mhaudit.core.options): every field of every audit's options dataclass carries its
help, and the command's flags and the experiment file's keys are made from those fields, so the command line, an
experiment file and Python make equal options when nothing is set, and the label-source audit gives the same
numbers run from the command line and from an experiment file."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing

import pytest
from typer.main import get_command

from mhaudit.audits import AUDITS, audit_function
from mhaudit.cli.options import flags, options_from
from mhaudit.core.options import described

REQUIRED = {
    "cpfe": dict(reference="home"),
    "divergence": dict(human=("h",), auto=("a",)),
    "agreement": dict(task="si"),
    "certify": dict(task="si"),
    "estimate": {},
    "monitor": {},
    "model_selection": dict(models=("tfidf-lr",)),
}


def _options_type(audit: str) -> type:
    return typing.get_type_hints(audit_function(audit))["options"]


def _command(audit: str):
    import mhaudit.cli

    return get_command(mhaudit.cli.app).commands["audit"].commands[audit.replace("_", "-")]


def _all_fields(options_type: type) -> list[dataclasses.Field]:
    hints = typing.get_type_hints(options_type)
    found = []
    for field in dataclasses.fields(options_type):
        found += _all_fields(hints[field.name]) if dataclasses.is_dataclass(hints[field.name]) else [field]
    return found


@pytest.mark.parametrize("audit", sorted(AUDITS))
def test_every_field_is_declared_with_its_help(audit):
    options_type = _options_type(audit)
    undeclared = [f.name for f in _all_fields(options_type) if "help" not in f.metadata]
    assert not undeclared, f"{options_type.__name__} fields without option(help=...): {undeclared}"
    assert described(options_type) == list(dataclasses.fields(options_type))


@pytest.mark.parametrize("audit", sorted(AUDITS))
def test_the_command_has_one_flag_per_field_with_its_default_and_help(audit):
    params = {p.name: p for p in _command(audit).params}
    for flag in flags(_options_type(audit)):
        param = params[flag.name]
        assert flag.flag in param.opts, (flag.flag, param.opts)
        assert param.help == flag.field.metadata["help"]
        default = flag.field.default
        if default is dataclasses.MISSING:
            assert param.required
        elif flag.element is None:
            assert param.default == default
        else:  # a repeatable flag left unset keeps the field's default
            assert param.default is None


def _args(values: dict, options_type: type | None = None) -> list[str]:
    """Command-line arguments setting these fields (by their flags, when `options_type` is given)."""
    flag_of = {f.name: f.flag for f in flags(options_type)} if options_type else {}
    args = []
    for name, value in values.items():
        for item in value if isinstance(value, tuple) else (value,):
            args += [flag_of.get(name, f"--{name.replace('_', '-')}"), str(item)]
    return args


@pytest.mark.parametrize("audit", sorted(AUDITS))
def test_the_command_line_and_python_make_the_same_options(audit):
    """Only the required flags given: the options the command makes equal the Python defaults."""
    command, options_type = _command(audit), _options_type(audit)
    required = [p for p in command.params if p.required and p.name not in {f.name for f in flags(options_type)}]
    args = [*_args(REQUIRED[audit], options_type), *(a for p in required for a in (p.opts[0], "x"))]
    context = command.make_context(audit, args)
    names = {f.name for f in flags(options_type)}
    made = options_from(options_type, {k: v for k, v in context.params.items() if k in names})
    assert made == options_type(**REQUIRED[audit])


def test_the_experiment_file_and_python_make_the_same_options():
    from mhaudit.audits.agreement import AgreementOptions
    from mhaudit.audits.cpfe import CPFEOptions
    from mhaudit.audits.divergence import DivergenceOptions
    from mhaudit.experiments.config import AuditSpec, LabelSourceSpec, ValidationSpec, options_of

    assert options_of(AuditSpec(), CPFEOptions, reference="home") == CPFEOptions(reference="home")
    table = LabelSourceSpec(
        corpus=[{"source": "generic", "paths": ["x.csv"]}], binary={"positive": ["stress"]}, human=["h"], auto=["a"]
    )
    assert options_of(table, DivergenceOptions) == DivergenceOptions(human=("h",), auto=("a",))
    assert options_of(ValidationSpec(labels=["l.csv"], task="si"), AgreementOptions) == AgreementOptions(task="si")
    for spec, options_type, skipped in (
        (AuditSpec, CPFEOptions, {"reference"}),
        (LabelSourceSpec, DivergenceOptions, set()),
        (ValidationSpec, AgreementOptions, {"models"}),
    ):
        keys = set(spec.model_fields) - {"corpus", "binary", "labels", "items"}
        assert keys == {f.name for f in described(options_type)} - skipped


def test_divergence_from_the_command_line_and_an_experiment_file_gives_the_same_numbers(tmp_path):
    """The label-source audit with no options set, run by `mhaudit audit divergence` and with the options an
    experiment file's [label_source] makes (what `mhaudit run` passes), on a SYNTHETIC corpus. Only the bootstrap
    count is lowered, on both routes alike, to keep the test fast."""
    from mhaudit.audits.divergence import DivergenceInputs, audit_divergence
    from mhaudit.experiments.config import load_experiment
    from mhaudit.report.render import to_json
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    corpus = simulate_divergence(
        DivergenceConfig(n_forum=160, n_tweets_gold=80, n_tweets_auto=80, n_forum_auto=80, seed=0)
    )
    corpus.write(tmp_path / "corpus.parquet")
    human, auto = ("synthetic_forum", "synthetic_tweets_gold"), ("synthetic_tweets_auto", "synthetic_forum_auto")
    (tmp_path / "exp.toml").write_text(f"""name = "same"
reference = "synthetic-forum"
[[corpus]]
source = "generic"
paths = ["x.csv"]
[[model]]
name = "tfidf-lr"
[label_source]
human = {json.dumps(list(human))}
auto = {json.dumps(list(auto))}
binary = {{ positive = ["stress"] }}
n_boot = 200
[[label_source.corpus]]
source = "generic"
paths = ["x.csv"]
""")
    options = load_experiment(tmp_path / "exp.toml").divergence_options()
    from_file = to_json(audit_divergence(DivergenceInputs(corpus), options))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "divergence",
            "--corpus",
            str(tmp_path / "corpus.parquet"),
            *_args(dict(human=human, auto=auto)),
            "--n-boot",
            "200",
            "--out",
            str(tmp_path / "cli"),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    from_cli = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert from_cli["options"] == json.loads(json.dumps(from_file["options"]))

    def tables(record):
        return {name: rows for s in record["sections"] for name, rows in s["tables"].items() if "seconds" not in name}

    assert json.loads(json.dumps(tables(from_file), default=str)) == tables(from_cli)
    dod = {row["contrast"]: row for row in tables(from_cli)["dod"]}
    assert set(dod) >= {"B-A", "C-A", "BC-A"} and dod["C-A"]["n_boot"] == 200  # every channel, as the defaults say
