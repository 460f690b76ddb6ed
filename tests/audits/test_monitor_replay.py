"""The Bluesky depression set replayed as a stream with known truth: relay (127.0.0.1) -> collector -> post store ->
`mhaudit audit monitor`, as docs/monitor.md runs it. The posts go out in createdAt order with compressed time (1 ms
apart); a TF-IDF model trained on Depression Reddit was validated on the posts before 2024-09 (the reference),
and is monitored on the rest, week by week."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy.special import softmax
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.weak_supervision.collect.collector import PostFilter
from mhaudit.weak_supervision.collect.replay import ReplayRelay
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.conftest import data_dir

runner = CliRunner()
CUT = pd.Timestamp("2024-09-01", tz="UTC")
COMMON = """[lexicon]
name = "common"
version = "1.0.0"
description = "Common English words: lets nearly every English post through (a replay of a labelled set)"
language = "en"

[categories.common]
description = "Function words"
terms = ["i", "the", "a", "to", "and", "my", "you", "is", "it", "me", "of", "in", "for", "this", "that", "so"]
"""


def reddit_model(folder):
    """Word TF-IDF trained on Depression Reddit (train and val splits), saved in `folder`: the stream's model."""
    from mhaudit.models import create, save_model
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    reddit = import_source(
        "depression_reddit",
        [data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"],
        ImportOptions(seed=0),
    ).corpus
    model = create("tfidf-lr").fit(reddit.frame[reddit.frame["split"].isin(["train", "val"])], reddit.classes)
    save_model(model, folder)
    return model


def test_replayed_bluesky_stream_is_collected_scored_and_tracked(tmp_path):

    raw = pd.read_csv(data_dir("bluesky_depression") / "bluesky-depression-dataset.csv")
    raw = raw.assign(time=pd.to_datetime(raw["createdAt"], utc=True, format="ISO8601"), text=raw["text"].astype(str))
    raw = raw[raw["text"].str.strip() != ""].sort_values("time", kind="stable").reset_index(drop=True)
    model = reddit_model(tmp_path / "model")
    classes = model.classes  # no_depression, depression
    validated = raw[raw["time"] < CUT]
    logits = model.predict_logits(validated["text"].tolist())
    pd.DataFrame(
        {
            "label": validated["depressive"].map({0: classes[0], 1: classes[1]}),
            **{f"prob_{c}": softmax(logits, axis=1)[:, i] for i, c in enumerate(classes)},
        }
    ).to_csv(tmp_path / "validated.csv", index=False)

    stream = raw[raw["time"] >= CUT].reset_index(drop=True)
    lexicon_file = tmp_path / "common.toml"
    lexicon_file.write_text(COMMON)
    post_filter = PostFilter([Lexicon.load(str(lexicon_file))])
    kept = [
        i
        for i, text in enumerate(stream["text"])
        if post_filter({"uri": "at://x/p/1", "did": "x", "langs": ["en"], "text": text, "reply": False}) is not None
    ]
    store = tmp_path / "posts.sqlite"
    csv = data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"
    with ReplayRelay.from_file(csv, since=str(CUT.date())) as relay:
        r = runner.invoke(
            app,
            [
                "collect",
                "bluesky",
                "--db",
                str(store),
                "--relay",
                relay.url,
                "--lexicon",
                str(lexicon_file),
                "--max-posts",
                str(len(kept)),
                "--duration",
                "60s",
            ],
        )
        assert r.exit_code == 0, r.output
    with PostStore(store) as posts:
        assert posts.count() == len(kept) > 3000

    out = tmp_path / "monitor"
    r = runner.invoke(
        app,
        [
            "audit",
            "monitor",
            "--store",
            str(store),
            "--model",
            str(tmp_path / "model"),
            "--reference",
            str(tmp_path / "validated.csv"),
            "--window",
            "7d",
            "--n-boot",
            "100",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    windows = pd.DataFrame(report["sections"][0]["tables"]["windows"])
    assert windows["n_posts"].sum() == len(kept)
    # The known truth per window: the data set's labels of the posts that window holds.
    truth = stream.loc[kept].assign(
        window=lambda d: pd.to_datetime(
            (d["time"].astype("int64") // pd.Timedelta("7D").value) * pd.Timedelta("7D").value, utc=True
        )
    )
    weekly = truth.groupby("window")["depressive"].agg(["size", "mean"])
    assert weekly["size"].tolist() == windows["n_posts"].tolist()
    big = windows["n_posts"].to_numpy() >= 50
    error_em = np.abs(windows["em_prior_depression"].to_numpy() - weekly["mean"].to_numpy())[big].mean()
    error_raw = np.abs(windows["predicted_depression"].to_numpy() - weekly["mean"].to_numpy())[big].mean()
    # the model trained on Reddit predicts depression for half of Bluesky; calibrated on the validated
    # sample and prior-adjusted, the weekly prevalence comes within a few points of the truth
    print(f"weekly prevalence error: predicted share {error_raw:.3f}, EM prior {error_em:.3f}")
    assert error_raw > 0.3 and error_em < 0.08
    body = "".join(p.read_text() for p in out.rglob("*") if p.suffix in (".json", ".md", ".html", ".csv"))
    assert "did:" not in body and not any(t in body for t in stream["text"].head(200))


def test_collect_replay_command_serves_the_table_on_loopback(tmp_path):
    """`mhaudit collect replay` as a user starts it: a subprocess on a free port, one client reading frames."""
    import os
    import re
    import signal
    import subprocess
    import sys

    from websockets.sync.client import connect

    table = tmp_path / "posts.csv"
    pd.DataFrame(
        {
            "text": ["second post", "first post", ""],
            "createdAt": ["2025-01-02T00:00:00Z", "2025-01-01T00:00:00Z", "2025-01-03"],
        }
    ).to_csv(table, index=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mhaudit", "collect", "replay", str(table), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, COLUMNS="200"),
    )
    try:
        line = proc.stdout.readline()  # the event: it prints this line once it listens ("" if it died)
        assert "replaying 2 posts at ws://127.0.0.1:" in line  # the empty post is not replayed
        url = re.search(r"ws://\S+", line).group(0)
        # generous bounds, which only stop a hang: a busy machine may take many seconds to answer
        with connect(url, open_timeout=120) as ws:
            frames = [json.loads(ws.recv(timeout=120)) for _ in range(2)]
        assert [f["commit"]["record"]["text"] for f in frames] == ["first post", "second post"]
        assert frames[0]["time_us"] < frames[1]["time_us"]
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
