"""mhaudit run: an experiment file end to end on small generic CSVs (written here; SYNTHETIC text)."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import run_experiment


def noting(lines: list) -> Progress:
    """A Progress that keeps the text of each note in `lines`."""
    return Progress(lambda event: lines.append(event.name) if event.kind == "note" else None)


WORDS = {"stress": ["deadline", "bills", "boss", "overtime"], "no_stress": ["garden", "movie", "lunch", "walk"]}


def write_platform(folder, name, n, shift, seed):
    rng = np.random.default_rng(seed)
    labels = rng.choice(["stress", "no_stress"], size=n)
    texts = []
    for y in labels:
        signal = list(rng.choice(WORDS[y], size=3))
        noise = list(rng.choice(WORDS["stress"] + WORDS["no_stress"], size=int(1 + 6 * shift)))
        texts.append(" ".join(signal + noise + [f"{name}tag"]))
    path = folder / f"{name}.csv"
    pd.DataFrame({"text": texts, "label": np.where(labels == "stress", 1, 0)}).to_csv(path, index=False)
    return path


def experiment(tmp_path, design="reference"):
    for i, (name, shift) in enumerate((("forum", 0.0), ("tweets", 1.0), ("comments", 0.5))):
        write_platform(tmp_path, name, 200, shift, i)
    corpora = "\n".join(
        f'[[corpus]]\nsource = "generic"\npaths = ["{n}.csv"]\nplatform = "{n}"\nmapping = "stress-binary"\n'
        for n in ("forum", "tweets", "comments")
    )
    (tmp_path / "exp.toml").write_text(f'''name = "tiny"
design = "{design}"
reference = "forum"
seeds = [0, 1]
{corpora}
[[model]]
name = "tfidf-lr"
options = {{ min_df = 1, ngram_range = [1, 1] }}
explain = "linear"
explain_sample = 50

[audit]
n_boot_significance = 200
n_boot_ece = 100
''')
    return tmp_path / "exp.toml"


def test_reference_design_end_to_end_and_resumes(tmp_path):
    exp = load_experiment(experiment(tmp_path))
    logs = []
    result = run_experiment(exp, tmp_path / "out", progress=noting(logs))
    # tfidf-lr is deterministic: seeds [0, 1] give one model, seed 0, and the log says so once
    assert logs.count("tfidf-lr is deterministic: trained once (seed 0), not per seed") == 1
    assert [p.name for p in (tmp_path / "out" / "models").rglob("seed-*")] == ["seed-0"]
    disc = result.table("discrimination").set_index(["seed", "platform"])
    assert len(disc) == 3 and disc.loc[(0, "forum"), "macro_auc"] > disc.loc[(0, "tweets"), "macro_auc"]
    assert not result.table("attribution_stability").empty
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["options"]["experiment"]["name"] == "tiny"
    again = []
    rerun = run_experiment(exp, tmp_path / "out", progress=noting(again))
    assert any("cached" in line for line in again) and sum("done before" in line for line in again) == 1
    assert not any(line.startswith("trained") for line in again)
    pd.testing.assert_frame_equal(rerun.table("discrimination"), result.table("discrimination"))


def test_all_pairs_transfer_matrix(tmp_path):
    result = run_experiment(load_experiment(experiment(tmp_path, "all-pairs")), tmp_path / "out")
    table = result.table("transfer")
    assert len(table) == 3 * 3 and set(table["n_seeds"]) == {1}  # deterministic: one seed stands for both
    home = table[table["in_platform"]].set_index("platform")["macro_auc"]
    assert home["forum"] > table[(table["train_platform"] == "forum") & ~table["in_platform"]]["macro_auc"].max()
    assert result.sections[0].figures


def test_cli_run_and_bad_experiment_files(tmp_path):
    path = experiment(tmp_path)
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "cli")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "cli" / "report.html").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\ndesign = "reference"\n[[corpus]]\nsource = "generic"\npaths = []\n'
        '[[model]]\nname = "tfidf-lr"\nbogus = 1\n'
    )
    with pytest.raises(InputError, match="reference|bogus"):
        load_experiment(bad)
    result = CliRunner().invoke(app, ["run", str(bad)])
    assert result.exit_code == 2 and "\n" not in result.stderr.strip()


@pytest.mark.parametrize(
    "audit, message",
    [
        ("n_boot = 200", "audit.n_boot: not a key; did you mean n_boot_ece or n_boot_significance?"),  # renamed in 0.2
        ("n_boot_ece = 1", "[audit] n_boot_ece 1 must be at least 2"),  # the options' own rule, before any work
        ('correction = "holm"', "[audit] correction 'holm' must be one of bonferroni, bh"),
    ],
)
def test_a_bad_audit_option_is_said_when_the_file_is_loaded(tmp_path, audit, message):
    path = tmp_path / "exp.toml"
    path.write_text(
        f'name = "x"\nreference = "r"\n[[corpus]]\nsource = "generic"\npaths = ["a.csv"]\n'
        f'[[model]]\nname = "tfidf-lr"\n[audit]\n{audit}\n'
    )
    with pytest.raises(InputError) as error:
        load_experiment(path)
    assert str(error.value) == f"{path}: {message}" + (" (1 problem(s) in all)" if "not a key" in message else "")


@pytest.mark.parametrize("name", ["cpfe_open", "cpfe_paper"])
def test_example_experiment_files_validate(name):
    from pathlib import Path

    exp = load_experiment(Path(__file__).resolve().parents[2] / "examples" / f"{name}.toml")
    assert exp.design == "reference" and exp.corpus and exp.model


def test_transformer_in_an_experiment_with_gradients_and_target_adaptation(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("captum")
    from tests.models.tiny_bert import tiny_checkpoint

    path = experiment(tmp_path)
    checkpoint = tiny_checkpoint(tmp_path / "tiny", 2)
    text = (
        path.read_text()
        .replace(
            """[[model]]
name = "tfidf-lr"
options = { min_df = 1, ngram_range = [1, 1] }
explain = "linear"
explain_sample = 50""",
            f'''[[model]]
name = "transformer"
label = "tiny"
options = {{ checkpoint = "{checkpoint}", epochs = 2, lr = 1e-3, batch_size = 16 }}
subsample = 120
explain = "saliency"
explain_sample = 10
adapt_epochs = 1''',
        )
        .replace("seeds = [0, 1]", "seeds = [0]")
    )
    path.write_text(text)
    result = run_experiment(load_experiment(path), tmp_path / "out")
    disc = result.table("discrimination").set_index("platform")
    assert disc.loc["forum", "macro_auc"] > 0.8 and set(disc["model"]) == {"tiny"}
    adapted = result.table("temperature_vs_finetuning").set_index("platform")
    assert set(adapted.index) == {"tweets", "comments"}
    assert (adapted["n_calibration"] == 20).all()  # 10% of each target's 200 rows (all judged), by class
    for stage in ("before", "ts", "ft"):
        assert adapted[f"auc_{stage}"].between(0, 1).all()
    # temperature scaling never changes the argmax: accuracy identical before and after
    np.testing.assert_allclose(adapted["accuracy_ts"], adapted["accuracy_before"])
    stab = result.table("attribution_stability")
    assert not stab.empty and set(stab["model"]) == {"tiny"}


def test_two_data_sets_on_one_platform_get_their_own_attributions(tmp_path):
    """A second data set on the tweets platform ("retweets", SYNTHETIC) talking with half the words: explained and
    paired as its own place, not merged with tweets (which stopped the run: 'word ... appears twice')."""
    path = experiment(tmp_path)
    rng = np.random.default_rng(7)
    labels = rng.choice(["stress", "no_stress"], size=200)
    few = {"stress": ["deadline", "bills"], "no_stress": ["garden", "movie"]}
    pd.DataFrame(
        {"text": [" ".join(rng.choice(few[y], size=4)) for y in labels], "label": np.where(labels == "stress", 1, 0)}
    ).to_csv(tmp_path / "retweets.csv", index=False)
    path.write_text(
        path.read_text().replace(
            "[[model]]",
            '[[corpus]]\nsource = "generic"\npaths = ["retweets.csv"]\n'
            'platform = "tweets"\nmapping = "stress-binary"\n\n[[model]]',
        )
    )
    result = run_experiment(load_experiment(path), tmp_path / "out")
    words = pd.read_parquet(next((tmp_path / "out" / "models").rglob("attributions-linear.parquet")))
    assert set(words.groupby(["platform", "dataset"]).groups) == {
        ("forum", "forum"),
        ("tweets", "tweets"),
        ("tweets", "retweets"),
        ("comments", "comments"),
    }
    assert set(words.loc[words["dataset"] == "retweets", "word"]) == {"deadline", "bills", "garden", "movie"}
    stab = result.table("attribution_stability").query("dataset_a == 'forum' or dataset_b == 'forum'")
    other = stab["dataset_b"].where(stab["dataset_a"] == "forum", stab["dataset_a"])
    jaccard = stab.groupby(["k", other])["jaccard"].mean()  # mean over classes, per k and data set paired with forum
    assert jaccard[(5, "retweets")] != jaccard[(5, "tweets")]  # other words, another number
    verdicts = result.verdicts.query("statistic == 'jaccard_top10'").groupby("target")["value"].first()
    assert verdicts.to_dict() == pytest.approx(
        {
            "comments": jaccard[(10, "comments")],
            "tweets": jaccard[(10, "tweets")],
            "tweets (retweets)": jaccard[(10, "retweets")],
        }
    )
    assert verdicts["tweets (retweets)"] != verdicts["tweets"]


# ------------------------------------------------------------------------------------------ binary targets

FOUR = {
    "normal": ["garden", "movie", "lunch", "walk"],
    "depression": ["hopeless", "empty", "lonely", "tears"],
    "anxiety": ["nervous", "panic", "worried", "dread"],
    "stress": ["deadline", "bills", "boss", "overtime"],
}


def write_rows(path, labels, words_of, n_signal, seed, platform=None):
    """A CSV of texts carrying `n_signal` words of their class (from `words_of`) among random others."""
    rng = np.random.default_rng(seed)
    pool = [w for words in FOUR.values() for w in words]
    texts = [" ".join(list(rng.choice(words_of[y], size=n_signal)) + list(rng.choice(pool, size=4))) for y in labels]
    frame = pd.DataFrame({"text": texts, "label": labels})
    if platform:
        frame["platform"] = platform
    frame.to_csv(path, index=False)


def binary_experiment(tmp_path):
    rng = np.random.default_rng(0)
    write_rows(tmp_path / "forum.csv", rng.choice(list(FOUR), size=400), FOUR, 3, 1)
    write_rows(tmp_path / "tweets.csv", rng.choice(list(FOUR), size=200), FOUR, 1, 2)
    # stress 1/0: "0" rows talk like any of the three other classes
    other = [w for c in ("normal", "depression", "anxiety") for w in FOUR[c]]
    write_rows(tmp_path / "stressforum.csv", rng.choice(["0", "1"], size=200), {"1": FOUR["stress"], "0": other}, 2, 3)
    write_rows(
        tmp_path / "sky.csv", rng.choice(["0", "1"], size=200), {"1": FOUR["depression"], "0": FOUR["normal"]}, 1, 4
    )
    (tmp_path / "exp.toml").write_text("""name = "binary"
reference = "forum"
seeds = [0]

[[corpus]]
source = "generic"
paths = ["forum.csv"]
platform = "forum"
mapping = "cpfe-a"

[[corpus]]
source = "generic"
paths = ["tweets.csv"]
platform = "twitter"
mapping = "cpfe-a"

[[corpus]]  # the reference's own platform, another data set (as Dreaddit is Reddit)
source = "generic"
paths = ["stressforum.csv"]
platform = "forum"
mapping = "stress-binary"
binary = { positive = ["stress"] }

[[corpus]]
source = "generic"
paths = ["sky.csv"]
platform = "sky"
mapping = "depression-binary"
binary = { positive = ["depression"], negative = ["normal"] }

[[model]]
name = "tfidf-lr"
options = { min_df = 1, ngram_range = [1, 1] }

[audit]
n_boot_significance = 100
n_boot_ece = 50
""")
    return tmp_path / "exp.toml"


def test_binary_targets_collapse_the_four_class_scores(tmp_path):
    from sklearn.metrics import roc_auc_score

    from mhaudit.experiments.binary_targets import collapse_binary

    exp = load_experiment(binary_experiment(tmp_path))
    logs = []
    result = run_experiment(exp, tmp_path / "out", progress=noting(logs))
    classes = ["normal", "depression", "anxiety", "stress"]
    raw = {}
    for path in (tmp_path / "out" / "models").rglob("binary-*.parquet"):
        frame = pd.read_parquet(path)
        raw[frame["dataset"].iloc[0]] = frame
    assert set(raw) == {"stressforum", "sky"}

    # the collapsed logit by hand: log(sum exp(positive logits)) - log(sum exp(negative logits))
    def by_hand(frame, positive, negative):
        lse = lambda cols: np.log(np.exp(frame[[f"logit_{c}" for c in cols]].to_numpy()).sum(axis=1))  # noqa: E731
        return lse(positive) - lse(negative)

    stress = raw["stressforum"]
    spec = next(c for c in exp.corpus if c.binary and c.mapping == "stress-binary").binary
    collapsed = collapse_binary(stress, classes, spec, ["no_stress", "stress"], relabel=False)
    z = by_hand(stress, ["stress"], ["normal", "depression", "anxiety"])
    np.testing.assert_allclose(collapsed["logit_stress"], z, rtol=1e-12, atol=1e-12)
    assert (collapsed["logit_no_stress"] == 0).all() and list(collapsed["label"]) == list(stress["label"])
    probs = np.exp(stress[[f"logit_{c}" for c in classes]].to_numpy())
    probs /= probs.sum(axis=1, keepdims=True)  # "rest": the binary probability is P(stress) itself
    np.testing.assert_allclose(1 / (1 + np.exp(-z)), probs[:, 3], rtol=1e-10)

    sky = raw["sky"]
    z_sky = by_hand(sky, ["depression"], ["normal"])  # explicit negative: anxiety and stress left out

    disc = result.table("binary_discrimination").set_index("dataset")
    # the stress target shares the reference's platform name, so the reference's data set is marked
    assert set(disc.index) == {"forum", "forum (reference)", "stressforum", "sky"}
    assert set(disc["binary"]) == {
        "stress vs no_stress: stress vs rest",
        "depression vs no_depression: depression vs normal",
    }
    row = disc.loc["stressforum"]
    assert row["macro_auc"] == pytest.approx(roc_auc_score(stress["label"] == "stress", z), abs=1e-12)
    assert row["macro_auc"] > 0.9 and not row["is_reference"]
    assert disc.loc["sky", "macro_auc"] == pytest.approx(roc_auc_score(sky["label"] == "depression", z_sky), abs=1e-12)
    # the reference (forum) rows collapsed the same way: all test rows for stress vs rest, only normal and
    # depression rows for depression vs normal; its AUC by hand too
    home = pd.concat([pd.read_parquet(p) for p in (tmp_path / "out" / "models").rglob("predictions.parquet")])
    home = home[home["platform"] == "forum"]
    refs = disc[disc["is_reference"]].set_index("binary")
    assert refs.loc["stress vs no_stress: stress vs rest", "n"] == len(home)
    kept = home[home["label"].isin(["normal", "depression"])]
    assert refs.loc["depression vs no_depression: depression vs normal", "n"] == len(kept)
    assert refs.loc["depression vs no_depression: depression vs normal", "macro_auc"] == pytest.approx(
        roc_auc_score(kept["label"] == "depression", by_hand(kept, ["depression"], ["normal"])), abs=1e-12
    )
    # the other axes ran on the two-class problem; the four-class audit is untouched by the binary targets
    assert set(result.table("binary_calibration")["dataset"]) == {"forum", "forum (reference)", "stressforum", "sky"}
    assert set(result.table("binary_equity")["class"]) == {"no_stress", "stress", "no_depression", "depression"}
    assert set(result.table("discrimination")["platform"]) == {"forum", "twitter"}
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    section = next(s for s in report["sections"] if s["title"] == "Binary targets")
    assert any(
        r["dataset"] == "stressforum" and r["macro_auc"] == pytest.approx(row["macro_auc"])
        for r in section["tables"]["binary_discrimination"]
    )

    again = []
    rerun = run_experiment(exp, tmp_path / "out", progress=noting(again))
    assert not any(line.startswith("trained") for line in again) and sum("cached" in line for line in again) == 3
    pd.testing.assert_frame_equal(rerun.table("binary_discrimination"), result.table("binary_discrimination"))


def test_binary_target_specs_are_checked(tmp_path):
    path = binary_experiment(tmp_path)
    text = path.read_text()
    path.write_text(
        text.replace(
            'positive = ["depression"], negative = ["normal"]', 'positive = ["depression"], negative = ["depression"]'
        )
    )
    with pytest.raises(InputError, match="both positive and negative"):
        load_experiment(path)
    path.write_text(text.replace('reference = "forum"', 'design = "all-pairs"'))
    with pytest.raises(InputError, match="binary targets .* need design 'reference'"):
        load_experiment(path)
    path.write_text(text.replace('positive = ["stress"]', 'positive = ["burnout"]'))
    with pytest.raises(InputError, match="burnout in binary are not model classes"):
        run_experiment(load_experiment(path), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    path.write_text(
        text.replace('paths = ["sky.csv"]', 'paths = ["tweets.csv"]').replace(
            'mapping = "depression-binary"', 'mapping = "cpfe-a"'
        )
    )
    with pytest.raises(InputError, match="maps to 4 classes .* needs a two-class mapping"):
        run_experiment(load_experiment(path), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # found before training: nothing written


def test_a_mapping_file_is_read_beside_the_experiment_and_its_edits_reimport(tmp_path, monkeypatch):
    from mhaudit.experiments.runner import build_corpus

    folder = tmp_path / "exp"
    folder.mkdir()
    path = experiment(folder)
    mapping = 'name = "mine"\nclasses = ["calm", "stressed"]\n[map]\ncalm = ["0"]\nstressed = ["1"]\n'
    (folder / "mine.toml").write_text(mapping)
    path.write_text(path.read_text().replace('mapping = "stress-binary"', 'mapping = "mine.toml"'))
    monkeypatch.chdir(tmp_path)  # not the experiment's folder: the mapping is still found
    corpus, first, _ = build_corpus(load_experiment(path), tmp_path / "out")
    assert corpus.classes == ["calm", "stressed"] and len(corpus.frame) == 600
    (folder / "mine.toml").write_text(mapping.replace("calm", "relaxed"))  # an edit: imported again
    corpus, second, _ = build_corpus(load_experiment(path), tmp_path / "out")
    assert corpus.classes == ["relaxed", "stressed"] and second != first
