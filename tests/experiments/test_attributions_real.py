"""Attributions keyed by (platform, data set) on real data (../shared/data): a model trained on Dreaddit (Reddit),
explained on two Twitter data sets, TSS gold and Rastogi Twitter_Non-Advert, through `mhaudit run`."""

import json

import pytest

from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import run_experiment
from tests.conftest import data_dir


def test_two_twitter_data_sets_get_their_own_attributions_and_jaccard(tmp_path):
    dreaddit = [str(data_dir("dreaddit") / f"dreaddit-{part}.csv") for part in ("train", "test")]
    gold = data_dir("tss_probe") / "Twitter_sample_gold.utf8.csv"
    rastogi = data_dir("stress_rastogi2022") / "Twitter_Non-Advert.csv"
    (tmp_path / "exp.toml").write_text(f'''name = "two twitter sets"
reference = "reddit"
seeds = [0]
[[corpus]]
source = "dreaddit"
paths = {json.dumps(dreaddit)}
[[corpus]]
source = "tss_gold"
paths = ["{gold}"]
[[corpus]]
source = "rastogi"
paths = ["{rastogi}"]
[[model]]
name = "tfidf-lr"
explain = "linear"
explain_sample = 100
[audit]
n_boot_significance = 200
n_boot_ece = 100
''')
    result = run_experiment(load_experiment(tmp_path / "exp.toml"), tmp_path / "out")  # once stopped: "appears twice"
    twitter = {"tss_twitter_gold", "rastogi_twitter_non_advert"}
    retention = result.table("clinical_retention")
    assert set(zip(retention["platform"], retention["dataset"])) == {
        ("reddit", "dreaddit"),
        *(("twitter", d) for d in twitter),
    }
    stab = result.table("attribution_stability").query("k == 10")
    home = stab[stab["dataset_a"] == "dreaddit"]
    assert set(home["dataset_b"]) == twitter and set(home["platform_b"]) == {"twitter"}
    mean = home.groupby("dataset_b")["jaccard"].mean()
    verdicts = result.verdicts.query("statistic == 'jaccard_top10'").groupby("target")["value"].first()
    assert verdicts.to_dict() == pytest.approx({f"twitter ({d})": mean[d] for d in twitter}, abs=1e-12)
    assert mean["tss_twitter_gold"] != mean["rastogi_twitter_non_advert"]  # each its own number, none copied
