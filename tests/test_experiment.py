"""mhaudit run: an experiment file end to end on small generic CSVs (written here; SYNTHETIC text)."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.config import load_experiment
from mhaudit.errors import InputError
from mhaudit.experiment import run_experiment

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
    corpora = "\n".join(f'[[corpus]]\nsource = "generic"\npaths = ["{n}.csv"]\nplatform = "{n}"\nmapping = "stress-binary"\n'
                        for n in ("forum", "tweets", "comments"))
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
n_boot = 200
n_boot_ece = 100
''')
    return tmp_path / "exp.toml"


def test_reference_design_end_to_end_and_resumes(tmp_path):
    exp = load_experiment(experiment(tmp_path))
    logs = []
    result = run_experiment(exp, tmp_path / "out", log=logs.append)
    disc = result.table("discrimination").set_index(["seed", "platform"])
    assert len(disc) == 6 and disc.loc[(0, "forum"), "macro_auc"] > disc.loc[(0, "tweets"), "macro_auc"]
    assert not result.table("attribution_stability").empty
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["options"]["experiment"]["name"] == "tiny"
    again = []
    rerun = run_experiment(exp, tmp_path / "out", log=again.append)
    assert any("cached" in line for line in again) and sum("done before" in line for line in again) == 2
    assert not any(line.startswith("trained") for line in again)
    pd.testing.assert_frame_equal(rerun.table("discrimination"), result.table("discrimination"))


def test_all_pairs_transfer_matrix(tmp_path):
    result = run_experiment(load_experiment(experiment(tmp_path, "all-pairs")), tmp_path / "out", log=lambda _: None)
    table = result.table("transfer")
    assert len(table) == 3 * 3 and set(table["n_seeds"]) == {2}
    home = table[table["in_platform"]].set_index("platform")["macro_auc"]
    assert home["forum"] > table[(table["train_platform"] == "forum") & ~table["in_platform"]]["macro_auc"].max()
    assert result.sections[0].figures


def test_cli_run_and_bad_experiment_files(tmp_path):
    path = experiment(tmp_path)
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "cli")])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "cli" / "report.html").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\ndesign = "reference"\n[[corpus]]\nsource = "generic"\npaths = []\n[[model]]\nname = "tfidf-lr"\nbogus = 1\n')
    with pytest.raises(InputError, match="reference|bogus"):
        load_experiment(bad)
    result = CliRunner().invoke(app, ["run", str(bad)])
    assert result.exit_code == 2 and "\n" not in result.stderr.strip()


@pytest.mark.parametrize("name", ["cpfe_open", "cpfe_paper"])
def test_example_experiment_files_validate(name):
    from pathlib import Path
    exp = load_experiment(Path(__file__).resolve().parents[1] / "examples" / f"{name}.toml")
    assert exp.design == "reference" and exp.corpus and exp.model


def test_transformer_in_an_experiment_with_gradients_and_target_adaptation(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("captum")
    from tests.models.tiny_bert import tiny_checkpoint

    path = experiment(tmp_path)
    checkpoint = tiny_checkpoint(tmp_path / "tiny", 2)
    text = path.read_text().replace('''[[model]]
name = "tfidf-lr"
options = { min_df = 1, ngram_range = [1, 1] }
explain = "linear"
explain_sample = 50''', f'''[[model]]
name = "transformer"
label = "tiny"
options = {{ checkpoint = "{checkpoint}", epochs = 2, lr = 1e-3, batch_size = 16, progress = false }}
subsample = 120
explain = "saliency"
explain_sample = 10
adapt_epochs = 1''').replace("seeds = [0, 1]", "seeds = [0]")
    path.write_text(text)
    result = run_experiment(load_experiment(path), tmp_path / "out", log=lambda _: None)
    disc = result.table("discrimination").set_index("platform")
    assert disc.loc["forum", "macro_auc"] > 0.8 and set(disc["model"]) == {"tiny"}
    adapted = result.table("temperature_vs_finetuning").set_index("platform")
    assert set(adapted.index) == {"tweets", "comments"}
    assert adapted["n_calibration"].between(3, 4).all()  # 10% of ~30 test rows per platform, by class
    for stage in ("before", "ts", "ft"):
        assert adapted[f"auc_{stage}"].between(0, 1).all()
    # temperature scaling never changes the argmax: accuracy identical before and after
    np.testing.assert_allclose(adapted["accuracy_ts"], adapted["accuracy_before"])
    stab = result.table("attribution_stability")
    assert not stab.empty and set(stab["model"]) == {"tiny"}
