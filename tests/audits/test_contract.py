"""The common audit test, in the way scikit-learn's check_estimator runs every estimator: every audit in
mhaudit.audits.AUDITS runs on SYNTHETIC data through one contract. It returns an AuditResult with a summary,
verdict rows in the one schema, tables and provenance; the same seed gives the same numbers twice; a bad input
raises one InputError that names what was wrong, and nothing is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mhaudit.audits import AUDITS, audit_function
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.report import VERDICT_COLUMNS, AuditResult
from mhaudit.report.render import to_json
from mhaudit.report.result import SEVERITIES


def _cpfe_inputs():
    from mhaudit.audits.cpfe import CPFEOptions
    from mhaudit.models import create
    from mhaudit.synthetic.simulate import SimulationConfig, simulate
    from mhaudit.tables.predictions import PredictionSet, predict_corpus

    corpus = simulate(SimulationConfig(n_per_platform=300, seed=0))
    f = corpus.frame
    model = create("tfidf-lr").fit(f[(f["platform"] == "synthetic-forum") & f["split"].isin(["train", "val"])],
                                   corpus.classes)
    preds = PredictionSet(predict_corpus(model, corpus, model_name="tfidf-lr", seed=0, splits=("test",)),
                          corpus.classes)
    options = CPFEOptions(reference="synthetic-forum", n_boot_significance=100, n_boot_ece=100, figures=False)
    good = dict(predictions=preds, options=options, synthetic=True)
    bad = dict(good, options=CPFEOptions(reference="kaggle", n_boot_significance=100, n_boot_ece=100))
    return good, bad, "kaggle"


def _divergence_frame():
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    return simulate_divergence(DivergenceConfig(n_forum=300, n_tweets_gold=150, n_tweets_auto=150, n_forum_auto=150))


def _divergence_inputs():
    from mhaudit.audits.divergence import DivergenceOptions

    corpus = _divergence_frame()
    options = DivergenceOptions(human=("synthetic_forum", "synthetic_tweets_gold"),
                                auto=("synthetic_tweets_auto", "synthetic_forum_auto"), channels=("A", "C"),
                                masks=("none",), mask_channels=(), lodo_channels=(), n_boot=100, n_boot_clusters=3,
                                conflicts_per_dataset=5)
    good = dict(frame=corpus.frame, classes=corpus.classes, options=options, synthetic=True)
    bad = dict(good, frame=corpus.frame.drop(columns="text"))
    return good, bad, "text"


def _agreement_inputs():
    from mhaudit.synthetic.simulate_labels import LabelsConfig, simulate_labels

    from mhaudit.audits.agreement import AgreementOptions

    labels = simulate_labels(LabelsConfig(n_items=200))
    good = dict(labels=labels, options=AgreementOptions("si", n_boot=200), synthetic=True)
    return good, dict(good, options=AgreementOptions("depression", n_boot=200)), "depression"


def _model_selection_inputs():
    from mhaudit.audits.model_selection import ModelSelectionOptions

    corpus = _divergence_frame()
    frame = corpus.frame[corpus.frame["dataset"] == "synthetic_forum"]
    options = ModelSelectionOptions(models=["tfidf-lr"], protocols=["holdout", "kfold:3"],
                                    figures=False)
    good = dict(frame=frame, classes=corpus.classes, options=options, synthetic=True)
    return good, dict(good, classes=["a", "b", "c"]), "two classes"


def _estimate_inputs():
    from mhaudit.audits.estimate import EstimateOptions
    from mhaudit.synthetic.simulate_scores import simulate_scores

    ref = simulate_scores(400, [0.6, 0.4], platform="synthetic-home", seed=0)
    target = simulate_scores(400, [0.3, 0.7], platform="synthetic-away", seed=1, labelled=False)
    good = dict(reference=ref, targets=target, options=EstimateOptions(n_boot=100, figures=False), synthetic=True)
    three = simulate_scores(400, [0.4, 0.3, 0.3], platform="synthetic-away", seed=1, labelled=False)
    return good, dict(good, targets=three), "classes"


def _certify_inputs():
    from mhaudit.audits.certify import CertifyOptions, certification_sample, pool_of
    from mhaudit.synthetic.simulate_scores import simulate_scores

    target = simulate_scores(1500, [0.7, 0.3], platform="synthetic-away", seed=2)
    truth = target.frame.set_index("id")["label"]
    target.frame["label"] = None
    items = pd.DataFrame({"id": target.frame["id"], "text": "synthetic post"})
    sample, design = certification_sample(pool_of(target), items, "t", 120, seed=0)
    labels = pd.DataFrame({"item_id": sample["item_id"], "task": "t", "labeler": "ann", "kind": "human",
                           "value": (truth.reindex(sample["item_id"]) == "c1").astype(int).to_numpy()})
    good = dict(labels=labels, sample=sample, design=design, predictions=target, options=CertifyOptions("t"),
                synthetic=True)
    return good, dict(good, options=CertifyOptions("t", positive="c7")), "c7"


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
    reference = PredictionSet(predict_corpus(model, corpus, model_name="tfidf-lr", seed=0, splits=("test",)),
                              corpus.classes)
    pool = f[f["split"] == "val"]
    posts = pd.DataFrame(simulate_stream(pool.loc[pool["label"] == corpus.classes[-1], "text"].tolist(),
                                         pool.loc[pool["label"] != corpus.classes[-1], "text"].tolist(),
                                         StreamConfig(n_windows=4, per_window=150, change_at=3, seed=0)))
    logits = model.predict_logits(posts["text"].tolist())  # as weak_supervision.collect.scores.scored_posts reads
    uris = posts["uri"].str.replace("did:plc:", "a-", regex=False)  # pseudonymised, as the store keeps them
    scored = pd.DataFrame({"uri": uris, "created_at": posts["created_at"], "length": posts["text"].str.len(),
                           "langs": posts["langs"], "categories": posts["categories"],
                           **{f"logit_{c}": logits[:, i] for i, c in enumerate(corpus.classes)}})
    digest = hashlib.sha256(b"synthetic tfidf-lr").hexdigest()
    good = dict(inputs=MonitorInputs(scored, reference, "tfidf-lr", digest, corpus.classes, synthetic=True),
                options=MonitorOptions(n_boot=100, min_posts=50, figures=False))
    other = PredictionSet(reference.frame.assign(logit_extra=0.0), [*corpus.classes, "extra"])
    return good, dict(good, inputs=MonitorInputs(scored, other, "tfidf-lr", digest, corpus.classes, synthetic=True)), \
        "differ"


INPUTS = {"cpfe": _cpfe_inputs, "certify": _certify_inputs, "estimate": _estimate_inputs, "divergence": _divergence_inputs, "agreement": _agreement_inputs,
          "model_selection": _model_selection_inputs, "monitor": _monitor_inputs}


def test_every_registered_audit_is_covered():
    assert set(INPUTS) == set(AUDITS)


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


def test_contract(audit, tmp_path, monkeypatch):
    name, run, good, bad, named = audit
    announced = []
    first = run(**dict(good, progress=Progress(lambda *event: announced.append(event))))
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
    assert _numbers(run(**good)) == _numbers(first)  # the same seed, the same numbers

    monkeypatch.chdir(tmp_path)  # a bad input writes nothing, here or anywhere it was pointed
    with pytest.raises(InputError) as error:
        run(**bad)
    message = str(error.value)
    assert named in message and "\n" not in message.strip()
    assert list(tmp_path.iterdir()) == []
