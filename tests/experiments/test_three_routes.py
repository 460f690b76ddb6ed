"""One answer per route: the cross-platform audit of a model trained on Dreaddit (Reddit) and judged on TSS gold
(Twitter), run three ways with no option set: the CLI steps, `mhaudit run` with an experiment file, and the Python
functions those two call. Every table of the audit must be the same on all three (real data, ../shared/data)."""

import json
import subprocess
import sys

import pandas as pd

from mhaudit.report.render import to_json
from tests.conftest import data_dir

TIMING = ("seconds",)


def tables(record: dict) -> dict:
    """The cross-platform audit's tables of a report.json (timings aside), as JSON gives them."""
    found = {
        name: rows
        for s in record["sections"]
        for name, rows in s["tables"].items()
        if not any(t in name for t in TIMING)
    }
    return json.loads(json.dumps(found, default=str))


def mhaudit(*args, cwd):
    done = subprocess.run([sys.executable, "-m", "mhaudit", *map(str, args)], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_the_runner_and_python_give_the_same_tables(tmp_path):
    from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
    from mhaudit.models.seeds import predict_folders, train_platform
    from mhaudit.tables.corpus.importing import ImportOptions, import_source
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.predictions import PredictionSet

    dreaddit = [data_dir("dreaddit") / f"dreaddit-{part}.csv" for part in ("train", "test")]
    gold = data_dir("tss_probe") / "Twitter_sample_gold.utf8.csv"

    # 1. the CLI, step by step
    mhaudit("data", "import", "dreaddit", *dreaddit, "--out", "reddit.parquet", cwd=tmp_path)
    mhaudit("data", "import", "tss_gold", gold, "--out", "gold.parquet", cwd=tmp_path)
    mhaudit("data", "merge", "reddit.parquet", "gold.parquet", "--out", "all.parquet", cwd=tmp_path)
    mhaudit(
        "train",
        "--corpus",
        "all.parquet",
        "--platform",
        "reddit",
        "--model",
        "tfidf-lr",
        "--seed",
        "0",
        "--out",
        "models",
        cwd=tmp_path,
    )
    mhaudit("predict", "--model", "models", "--corpus", "all.parquet", "--out", "preds.parquet", cwd=tmp_path)
    shown = mhaudit(
        "audit",
        "cpfe",
        "--predictions",
        "preds.parquet",
        "--corpus",
        "all.parquet",
        "--reference",
        "reddit",
        "--out",
        "cli",
        cwd=tmp_path,
    )
    from_cli = json.loads((tmp_path / "cli" / "report.json").read_text())

    # 2. an experiment file
    (tmp_path / "exp.toml").write_text(f'''name = "routes"
reference = "reddit"
seeds = [0]
[[corpus]]
source = "dreaddit"
paths = {json.dumps([str(p) for p in dreaddit])}
[[corpus]]
source = "tss_gold"
paths = ["{gold}"]
[[model]]
name = "tfidf-lr"
''')
    ran = mhaudit("run", "exp.toml", "--out", "run", cwd=tmp_path)
    from_runner = json.loads((tmp_path / "run" / "report.json").read_text())

    # 3. Python, through the functions the commands call
    parts = [
        import_source("dreaddit", dreaddit, ImportOptions()).corpus,
        import_source("tss_gold", [gold], ImportOptions()).corpus,
    ]
    corpus = Corpus.build(
        pd.concat([c.frame for c in parts], ignore_index=True), parts[0].classes, meta={"synthetic": False}
    )
    folders = train_platform(corpus, "reddit", "tfidf-lr", [0], tmp_path / "py-models")
    predictions = PredictionSet(predict_folders(folders, corpus), corpus.classes)
    result = audit_cpfe(CPFEInputs(predictions, corpus.frame.set_index("id")["text"]), CPFEOptions(reference="reddit"))
    from_python = json.loads(json.dumps(to_json(result), default=str))

    want = tables(from_python)
    assert tables(from_cli) == want
    runner_tables = tables(from_runner)
    assert {name: runner_tables[name] for name in want} == want
    # every row TSS gold has is judged (a target), Dreaddit's 715 test rows at home
    n = {(row["platform"], row["dataset"]): row["n"] for row in want["discrimination"]}
    assert n == {("reddit", "dreaddit"): 715, ("twitter", "tss_twitter_gold"): 2872}
    assert (
        "outside train and val (reddit (dreaddit): 715), elsewhere every scored row (twitter (tss_twitter_gold): 2,872)"
    ) in from_cli["summary"]
    # each route prints the scorecard
    assert "Scorecard" in shown and "Scorecard" in ran
