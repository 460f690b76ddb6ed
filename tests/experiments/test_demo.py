"""The main job: mhaudit demo on the synthetic corpus, offline, with a report whose numbers are checked."""

import json
import subprocess
import sys

import pandas as pd

from mhaudit.core.progress import Progress
from mhaudit.experiments.demo import run_demo
from mhaudit.tables.corpus.schema import Corpus


def test_demo_writes_a_synthetic_report_that_finds_the_shift(tmp_path):
    told = []
    run_demo(tmp_path, seed=0, n_per_platform=1500, progress=Progress(lambda *event: told.append(event)))
    done = [stage for event, stage, *_ in told if event == "done"]
    assert done[:3] == ["synthetic corpus", "training tfidf-lr", "training char-tfidf-lr"] and "figures" in done
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["synthetic"] is True
    html = (tmp_path / "report.html").read_text()
    assert "SYNTHETIC DATA" in html and "SYNTHETIC DATA" in (tmp_path / "report.md").read_text()
    tables = {name: pd.DataFrame(rows) for s in report["sections"] for name, rows in s["tables"].items()}
    assert set(tables["discrimination"]["model"]) == {"tfidf-lr", "char-tfidf-lr"}
    disc = tables["discrimination"].query("model == 'tfidf-lr'").set_index("dataset")
    assert disc.loc["synthetic_forum", "delta_auc_pct"] == 0
    assert disc.loc["synthetic_forum", "macro_auc"] > 0.95
    for other in ("synthetic_comments", "synthetic_tweets"):
        assert disc.loc[other, "macro_auc"] < disc.loc["synthetic_forum", "macro_auc"] - 0.15
        assert disc.loc[other, "delta_auc_pct"] < -15
    agreement = tables["agreement"].iloc[0]
    assert abs(agreement["agreement"] - 0.80) < 1e-9  # exactly 20% of labels replaced
    corpus = Corpus.read(tmp_path / "corpus.parquet")
    assert corpus.synthetic and len(corpus.frame) == 4 * 1500
    preds = pd.read_parquet(tmp_path / "predictions.parquet")
    assert list(preds.columns[:7]) == ["id", "model", "seed", "platform", "dataset", "split", "label"]
    assert [c for c in preds.columns if c.startswith("logit_")] == [f"logit_{c}" for c in corpus.classes]


def test_base_install_needs_no_torch(tmp_path):
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'transformers'):\n"
            "            raise ImportError(name + ' is blocked: the base install has no torch')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from mhaudit.cli import main; sys.argv = ['mhaudit', 'demo', '--out', sys.argv[1], "
            "'--n-per-platform', '400']\nmain()")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.html").exists()
