"""`mhaudit run` checks the whole experiment before any work (one sentence naming the TOML key, nothing written),
and runs the label-source audit alone (SYNTHETIC text)."""

import json
import subprocess
import sys

import pytest

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import run_experiment
from tests.experiments.test_runner import experiment


def refused(path, out, match: str) -> None:
    with pytest.raises(InputError, match=match):
        run_experiment(load_experiment(path), out)
    assert not out.exists(), "nothing is written before the experiment is checked whole"


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            ('reference = "forum"', 'reference = "forun"'),
            r"reference 'forun' is neither a platform nor a data set in the experiment's "
            r"\[\[corpus\]\] tables \(did you mean "
            r"'forum'\?\); platforms: comments, forum, tweets; data sets: ",
        ),
        (
            ("min_df = 1,", "min_dff = 1,"),
            r"\[\[model\]\] tfidf-lr: options has no key min_dff; model 'tfidf-lr' takes",
        ),
        (
            ('paths = ["tweets.csv"]', 'paths = ["tweet.csv"]'),
            r"1 file\(s\) named in the experiment do not exist, e.g. "
            "'tweet.csv'",
        ),
    ],
)
def test_a_mistake_anywhere_stops_the_run_before_anything_is_written(tmp_path, edit, match):
    path = experiment(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    refused(path, tmp_path / "out", match)


def write_label_source(tmp_path) -> str:
    """The SYNTHETIC divergence corpus as one CSV per data set (text, label 0/1), and its [label_source] tables."""
    from mhaudit.synthetic.simulate_divergence import DivergenceConfig, simulate_divergence

    frame = simulate_divergence(
        DivergenceConfig(n_forum=160, n_tweets_gold=80, n_tweets_auto=80, n_forum_auto=80, seed=0)
    ).frame
    tables = []
    for (platform, dataset), rows in frame.groupby(["platform", "dataset"]):
        rows.assign(label=(rows["label"] == "stress").astype(int))[["text", "label"]].to_csv(
            tmp_path / f"{dataset}.csv", index=False
        )
        tables.append(
            f'[[label_source.corpus]]\nsource = "generic"\npaths = ["{dataset}.csv"]\nplatform = "{platform}"'
            f'\ndataset = "{dataset}"\nmapping = "stress-binary"\n'
        )
    return "\n".join(tables)


def test_the_label_source_audit_runs_alone_and_its_names_are_checked_first(tmp_path):
    corpora = write_label_source(tmp_path)
    text = f"""name = "probe"
[label_source]
human = ["synthetic_forum", "synthetic_tweets_gold"]
auto = ["synthetic_tweets_auto", "synthetic_forum_auto"]
n_boot = 200
{corpora}"""
    (tmp_path / "bad.toml").write_text(text.replace('"synthetic_tweets_gold"', '"synthetic_tweet_gold"', 1))
    refused(
        tmp_path / "bad.toml",
        tmp_path / "bad",
        r"\[label_source\] human 'synthetic_tweet_gold' is not a data set in "
        r"the \[\[label_source.corpus\]\] tables \(did you mean 'synthetic_tweets_gold'\?\); data sets: ",
    )
    (tmp_path / "exp.toml").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "mhaudit", "run", "exp.toml", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "Scorecard" in done.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    dod = {row["contrast"]: row for s in report["sections"] for row in s["tables"].get("dod", [])}
    assert set(dod) >= {"B-A", "C-A", "BC-A"} and dod["C-A"]["n_boot"] == 200


def test_an_experiment_with_nothing_to_audit_says_so(tmp_path):
    (tmp_path / "empty.toml").write_text('name = "empty"\n')
    with pytest.raises(InputError, match="nothing to audit: give"):
        load_experiment(tmp_path / "empty.toml")


def test_any_audit_runs_from_an_experiment_file_with_the_numbers_of_its_command(tmp_path):
    """[[audits]]: the estimate on published-style files (SYNTHETIC scores, prob_ columns, integer labels, no ids),
    the same tables as `mhaudit audit estimate` with the same options."""
    from tests.cli.test_estimate import _write

    _write(tmp_path / "bert_reddit.csv", 600, [0.6, 0.4], 0)
    _write(tmp_path / "bert_twitter.csv", 500, [0.3, 0.7], 1, labelled=False)
    text = """name = "estimate-alone"
[[audits]]
audit = "estimate"
files = { reference = "bert_reddit.csv", targets = ["bert_twitter.csv"] }
read = { name_pattern = "{model}_{platform}" }
options = { n_boot = 200, trust = { prior_gap_cutoff = 0.2 } }
"""
    (tmp_path / "exp.toml").write_text(text)
    ran = subprocess.run(
        [sys.executable, "-m", "mhaudit", "run", "exp.toml", "--out", "run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stderr
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "estimate",
            "--reference",
            "bert_reddit.csv",
            "--target",
            "bert_twitter.csv",
            "--name-pattern",
            "{model}_{platform}",
            "--n-boot",
            "200",
            "--prior-gap-cutoff",
            "0.2",
            "--out",
            "cli",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0, cli.stderr
    tables = {
        route: {
            name: rows
            for s in json.loads((tmp_path / route / "report.json").read_text())["sections"]
            for name, rows in s["tables"].items()
            if "seconds" not in name
        }
        for route in ("run", "cli")
    }
    assert tables["run"] == tables["cli"] and tables["run"]["estimates"]

    for edit, match in (
        (
            ("n_boot", "n_bot"),
            r"\[\[audits\]\] estimate options: 'n_bot' is not an option; did you "
            r"mean n_boot\?",
        ),
        (
            ('audit = "estimate"', 'audit = "estimat"'),
            r"audit 'estimat' is not an audit \(did you "
            r"mean 'estimate'\?\)",
        ),
        (("name_pattern", "pattern"), r"'pattern' is not an input of EstimateInputs.from_files"),
    ):
        (tmp_path / "bad.toml").write_text(text.replace(*edit))
        with pytest.raises(InputError, match=match):
            load_experiment(tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text(
        'name = "x"\n[[audits]]\naudit = "cpfe"\nfiles = { predictions = "bert_reddit.csv" }\n'
    )
    with pytest.raises(InputError, match=r"\[\[audits\]\] cpfe options: 'reference' is needed \(it has no default\)"):
        load_experiment(tmp_path / "bad.toml")
