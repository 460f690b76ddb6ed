"""The SYNTHETIC model the stream benchmarks monitor (long_run, monitor_rerun, busy_machine), as
tests/audits/test_monitor.py builds it: a tfidf-lr trained on the synthetic corpus's tweets (depression vs
other), its reference predictions on their test split, and their val split's texts by class, which the
SYNTHETIC streams are drawn from."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLASSES = ["other", "depression"]


def tweet_model(work: Path):
    """(the fitted model, the val split's texts by class); writes `work/reference.parquet` (the reference
    predictions on the test split)."""
    import mhaudit as mh
    from mhaudit.tables.predictions import predict_corpus

    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=2400, seed=0))
    frame = corpus.frame.assign(label=np.where(corpus.frame["label"] == "depression", "depression", "other"))
    tweets = mh.Corpus.build(frame, CLASSES, meta={"synthetic": True}).frame
    tweets = tweets[tweets["platform"] == "synthetic-tweets"]
    model = mh.create_model("tfidf-lr").fit(tweets[tweets["split"] == "train"], CLASSES)
    test = mh.Corpus.build(tweets[tweets["split"] == "test"], CLASSES, meta={"synthetic": True})
    predict_corpus(model, test, model_name="tfidf-lr", seed=0, splits=("test",)).to_parquet(work / "reference.parquet")
    pool = tweets[tweets["split"] == "val"]
    return model, {c: pool.loc[pool["label"] == c, "text"].tolist() for c in CLASSES}
