"""The common audit test, in the way scikit-learn's check_estimator runs every estimator: every audit in
mhaudit.audits.AUDITS runs on SYNTHETIC data through one contract. It returns an AuditResult with a summary,
verdict rows in the one schema, tables and provenance; the same seed gives the same numbers twice; a bad input
raises one InputError that names what was wrong, and nothing is written; a bad option fails when the options
are made, naming the field.

Each INPUTS entry gives the good call (inputs, options, keyword extras), the bad call (its inputs made inside the
check, since inputs that validate on construction fail there) and a word the bad call's message must hold."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from dataclasses import replace

import pandas as pd
import pytest

from mhaudit.audits import AUDITS, audit_function
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.report import VERDICT_COLUMNS, AuditResult
from mhaudit.report.render import to_json
from mhaudit.report.result import SEVERITIES


def _cpfe_inputs():
    from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions
    from mhaudit.models import create
    from mhaudit.synthetic.simulate import SimulationConfig, simulate
    from mhaudit.tables.predictions import PredictionSet, predict_corpus

    corpus = simulate(SimulationConfig(n_per_platform=300, seed=0))
    f = corpus.frame
    model = create("tfidf-lr").fit(
        f[(f["platform"] == "synthetic-forum") & f["split"].isin(["train", "val"])], corpus.classes
    )
    preds = PredictionSet(
        predict_corpus(model, corpus, model_name="tfidf-lr", seed=0, splits=("test",)), corpus.classes
    )
    options = CPFEOptions(reference="synthetic-forum", n_boot_significance=100, n_boot_ece=100, figures=False)
    good = dict(inputs=CPFEInputs(preds, synthetic=True), options=options)
    bad = dict(
        good,
        inputs=lambda: CPFEInputs(preds, synthetic=True),
        options=CPFEOptions(reference="kaggle", n_boot_significance=100, n_boot_ece=100),
    )
    return good, bad, "kaggle"


def _divergence_frame():
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    return simulate_divergence(DivergenceConfig(n_forum=300, n_tweets_gold=150, n_tweets_auto=150, n_forum_auto=150))


def _divergence_inputs():
    from mhaudit.audits.divergence import DivergenceInputs, DivergenceOptions

    corpus = _divergence_frame()
    options = DivergenceOptions(
        human=("synthetic_forum", "synthetic_tweets_gold"),
        auto=("synthetic_tweets_auto", "synthetic_forum_auto"),
        channels=("A", "C"),
        masks=("none",),
        mask_channels=(),
        lodo_channels=(),
        n_boot=100,
        n_boot_clusters=3,
        conflicts_per_dataset=5,
    )
    good = dict(inputs=DivergenceInputs(corpus), options=options)
    bad = dict(good, inputs=lambda: DivergenceInputs(replace(corpus, frame=corpus.frame.drop(columns="text"))))
    return good, bad, "text"


def _agreement_inputs():
    from mhaudit.synthetic.simulate_labels import LabelsConfig, simulate_labels

    from mhaudit.audits.agreement import AgreementInputs, AgreementOptions

    inputs = AgreementInputs(simulate_labels(LabelsConfig(n_items=200)), synthetic=True)
    good = dict(inputs=inputs, options=AgreementOptions("si", n_boot=200))
    return good, dict(good, options=AgreementOptions("depression", n_boot=200)), "depression"


def _model_selection_inputs():
    from mhaudit.audits.model_selection import ModelSelectionInputs, ModelSelectionOptions

    corpus = _divergence_frame()
    forum = replace(corpus, frame=corpus.frame[corpus.frame["dataset"] == "synthetic_forum"])
    options = ModelSelectionOptions(models=["tfidf-lr"], protocols=["holdout", "kfold:3"], figures=False)
    good = dict(inputs=ModelSelectionInputs(forum), options=options)
    return good, dict(good, inputs=lambda: ModelSelectionInputs(replace(forum, classes=["a", "b", "c"]))), "two classes"


def _estimate_inputs():
    from mhaudit.audits.estimate import EstimateInputs, EstimateOptions
    from mhaudit.synthetic.simulate_scores import simulate_scores

    ref = simulate_scores(400, [0.6, 0.4], platform="synthetic-home", seed=0)
    target = simulate_scores(400, [0.3, 0.7], platform="synthetic-away", seed=1, labelled=False)
    good = dict(inputs=EstimateInputs(ref, target, synthetic=True), options=EstimateOptions(n_boot=100, figures=False))
    three = simulate_scores(400, [0.4, 0.3, 0.3], platform="synthetic-away", seed=1, labelled=False)
    return good, dict(good, inputs=lambda: EstimateInputs(ref, three)), "classes"


def _certify_inputs():
    from mhaudit.audits.certify import CertifyInputs, CertifyOptions, certification_sample, pool_of
    from mhaudit.synthetic.simulate_scores import simulate_scores

    target = simulate_scores(1500, [0.7, 0.3], platform="synthetic-away", seed=2)
    truth = target.frame.set_index("id")["label"]
    target = replace(target, frame=target.frame.assign(label=None))  # a new set: its codes follow
    items = pd.DataFrame({"id": target.frame["id"], "text": "synthetic post"})
    sample, design = certification_sample(pool_of(target), items, "t", 120, seed=0)
    labels = pd.DataFrame(
        {
            "item_id": sample["item_id"],
            "task": "t",
            "labeler": "ann",
            "kind": "human",
            "value": (truth.reindex(sample["item_id"]) == "c1").astype(int).to_numpy(),
        }
    )
    inputs = CertifyInputs(labels, sample, design, target, synthetic=True)
    good = dict(inputs=inputs, options=CertifyOptions("t"))
    return good, dict(good, inputs=lambda: inputs, options=CertifyOptions("t", positive="c7")), "c7"


def _monitor_inputs():
    import hashlib

    from mhaudit.audits.monitor import MonitorInputs, MonitorOptions
    from mhaudit.models import create
    from mhaudit.synthetic.simulate import SimulationConfig, simulate
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
    from mhaudit.tables.predictions import PredictionSet, predict_corpus

    corpus = simulate(SimulationConfig(n_per_platform=300, seed=0))
    f = corpus.frame
    model = create("tfidf-lr").fit(f[(f["platform"] == "synthetic-forum") & (f["split"] == "train")], corpus.classes)
    reference = PredictionSet(
        predict_corpus(model, corpus, model_name="tfidf-lr", seed=0, splits=("test",)), corpus.classes
    )
    pool = f[f["split"] == "val"]
    posts = pd.DataFrame(
        simulate_stream(
            pool.loc[pool["label"] == corpus.classes[-1], "text"].tolist(),
            pool.loc[pool["label"] != corpus.classes[-1], "text"].tolist(),
            StreamConfig(n_windows=4, per_window=150, change_at=3, seed=0),
        )
    )
    logits = model.predict_logits(posts["text"].tolist())  # as weak_supervision.collect.scores.scored_posts reads
    uris = posts["uri"].str.replace("did:plc:", "a-", regex=False)  # pseudonymised, as the store keeps them
    scored = pd.DataFrame(
        {
            "uri": uris,
            "created_at": posts["created_at"],
            "length": posts["text"].str.len(),
            "langs": posts["langs"],
            "categories": posts["categories"],
            **{f"logit_{c}": logits[:, i] for i, c in enumerate(corpus.classes)},
        }
    )
    digest = hashlib.sha256(b"synthetic tfidf-lr").hexdigest()
    good = dict(
        inputs=MonitorInputs(scored, reference, "tfidf-lr", digest, corpus.classes, synthetic=True),
        options=MonitorOptions(n_boot=100, min_posts=50, figures=False),
    )
    other = PredictionSet(reference.frame.assign(logit_extra=0.0), [*corpus.classes, "extra"])
    bad = dict(good, inputs=lambda: MonitorInputs(scored, other, "tfidf-lr", digest, corpus.classes, synthetic=True))
    return good, bad, "differ"


INPUTS = {
    "cpfe": _cpfe_inputs,
    "certify": _certify_inputs,
    "estimate": _estimate_inputs,
    "divergence": _divergence_inputs,
    "agreement": _agreement_inputs,
    "model_selection": _model_selection_inputs,
    "monitor": _monitor_inputs,
}


def _options_classes():
    from mhaudit.audits.agreement import AgreementOptions
    from mhaudit.audits.certify import CertifyOptions
    from mhaudit.audits.cpfe import CPFEOptions
    from mhaudit.audits.divergence import DivergenceOptions
    from mhaudit.audits.estimate import EstimateOptions
    from mhaudit.audits.model_selection import ModelSelectionOptions
    from mhaudit.audits.monitor import MonitorOptions

    return {
        "cpfe": (CPFEOptions, dict(reference="home")),
        "divergence": (DivergenceOptions, dict(human=("h",), auto=("a",))),
        "agreement": (AgreementOptions, dict(task="si")),
        "estimate": (EstimateOptions, {}),
        "certify": (CertifyOptions, dict(task="si")),
        "model_selection": (ModelSelectionOptions, dict(models=("tfidf-lr",))),
        "monitor": (MonitorOptions, {}),
    }


# audit -> (field, a bad value of it): each must fail when the options are made
BAD_OPTIONS = {
    "cpfe": ("n_boot_ece", 1),
    "divergence": ("n_folds", 1),
    "agreement": ("alpha", 1.5),
    "estimate": ("n_boot", 10),
    "certify": ("population", "everyone"),
    "model_selection": ("workers", 0),
    "monitor": ("n_boot", 0),
}


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_the_door_takes_one_frozen_input_and_one_options_object(name):
    """Exactly `audit_<name>(inputs, options, *, progress=None)`: no other keyword input. The inputs are a frozen
    <Name>Inputs that carries the synthetic mark and is built from files by a constructor of its own."""
    door = audit_function(name)
    parameters = [(p.name, p.kind, p.default) for p in inspect.signature(door).parameters.values()]
    positional, empty = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty
    assert parameters == [
        ("inputs", positional, empty),
        ("options", positional, empty),
        ("progress", inspect.Parameter.KEYWORD_ONLY, None),
    ]
    hints = typing.get_type_hints(door)
    inputs, options = hints["inputs"], hints["options"]
    assert inputs.__name__.endswith("Inputs") and options.__name__.endswith("Options")
    assert inputs.__dataclass_params__.frozen and options.__dataclass_params__.frozen
    assert hasattr(inputs, "from_files") or hasattr(inputs, "from_store")
    made = INPUTS[name]()[0]["inputs"]
    assert isinstance(made, inputs) and made.synthetic is True  # the contract's inputs are all SYNTHETIC
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError)):
        made.synthetic = False


def test_every_registered_audit_is_covered():
    assert set(INPUTS) == set(AUDITS) == set(BAD_OPTIONS)


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_options_are_defaulted_recorded_and_checked_when_made(name):
    """Every audit's options: frozen, made from their required fields alone, and a bad value fails on
    construction with one InputError sentence that names the field."""
    options, required = _options_classes()[name]
    made = options(**required)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seed = 1
    assert set(dataclasses.asdict(made)) == {f.name for f in dataclasses.fields(options)}
    field, value = BAD_OPTIONS[name]
    with pytest.raises(InputError) as error:
        options(**required, **{field: value})
    message = str(error.value).strip()
    assert field in message and "\n" not in message and message.count(". ") == 0


def _numbers(result: AuditResult) -> dict:
    """Everything in report.json but the provenance (times) and the created stamp."""
    record = to_json(result)
    for key in ("created", "provenance"):
        record.pop(key)
    for section in record["sections"]:  # wall-clock measurements are not statistics
        for rows in section["tables"].values():
            for row in rows:
                for column in [c for c in row if "seconds" in c or "per_second" in c]:
                    row.pop(column)
    return json.loads(json.dumps(record, sort_keys=True, default=str))


@pytest.fixture(scope="module", params=sorted(AUDITS))
def audit(request):
    good, bad, named = INPUTS[request.param]()
    run = audit_function(request.param)
    return request.param, run, good, bad, named


def _run(run, call: dict, **more):
    call = dict(call, **more)
    inputs, options = call.pop("inputs"), call.pop("options")
    return run(inputs() if callable(inputs) else inputs, options, **call)


def test_contract(audit, tmp_path, monkeypatch):
    name, run, good, bad, named = audit
    announced = []
    first = _run(run, good, progress=Progress(announced.append))
    assert isinstance(first, AuditResult)
    assert first.summary.strip() and first.synthetic
    assert list(first.verdicts.columns) == VERDICT_COLUMNS and len(first.verdicts)
    assert set(first.verdicts["audit"]) == {name}
    assert set(first.verdicts["severity"]) <= set(SEVERITIES)
    assert first.verdicts.loc[first.verdicts["value"].isna(), "severity"].eq("undefined").all()
    assert first.tables and all(isinstance(t, pd.DataFrame) for t in first.tables.values())
    assert {"mhaudit_version", "created", "inputs", "stage_seconds"} <= set(first.provenance)
    assert first.provenance["inputs"] and all(len(d) == 64 for d in first.provenance["inputs"].values())
    assert announced and {e[0] for e in announced} >= {"start", "done"}
    assert set(first.provenance["stage_seconds"]) == {e[1] for e in announced if e[0] == "done"}
    if name == "model_selection":  # one line per finished fold job
        assert sum(e[0] == "note" and "trained in" in e[1] for e in announced) == 1 + 3
    assert _numbers(_run(run, good)) == _numbers(first)  # the same seed, the same numbers

    monkeypatch.chdir(tmp_path)  # a bad input writes nothing, here or anywhere it was pointed
    with pytest.raises(InputError) as error:
        _run(run, bad)
    message = str(error.value)
    assert named in message and "\n" not in message.strip()
    assert list(tmp_path.iterdir()) == []
