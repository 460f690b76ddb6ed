"""`subsample = N` in an experiment: N of the training rows (stratified by label, seeded); validation rows untouched."""

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import train_job
from mhaudit.models.seeds import subsample_training
from mhaudit.models import load_model
from mhaudit.tables.corpus.schema import Corpus


def rows() -> pd.DataFrame:
    """70 'a' and 30 'b' train rows, then 10 of each in val; each text carries a token naming its row."""
    labels = ["a"] * 70 + ["b"] * 30 + ["a", "b"] * 10
    words = {"a": "sunny garden", "b": "tired empty"}
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(120)],
            "text": [f"{words[y]} row{i}" for i, y in enumerate(labels)],
            "label": labels,
            "platform": "forum",
            "dataset": "forum",
            "split": ["train"] * 100 + ["val"] * 20,
        },
        index=range(1000, 1120),
    )


def test_n_training_rows_by_label_share_and_every_validation_row():
    frame = rows()
    picked = subsample_training(frame, 11, seed=0)
    train, val = picked[picked["split"] == "train"], picked[picked["split"] == "val"]
    # shares 7.7 and 3.3: 7 and 3, and the larger remainder (a's .7) takes the eleventh row
    assert len(train) == 11 and train["label"].value_counts().to_dict() == {"a": 8, "b": 3}
    pd.testing.assert_frame_equal(val, frame[frame["split"] == "val"])
    assert picked.index.is_monotonic_increasing  # the corpus's order is kept
    assert list(subsample_training(frame, 11, seed=0).index) == list(picked.index)  # seeded
    assert set(subsample_training(frame, 11, seed=1).index) != set(picked.index)
    assert len(subsample_training(frame, 50, seed=0).query("split == 'train'")) == 50
    assert subsample_training(frame, 100, seed=0) is frame  # N >= the training rows: all of them


def test_the_training_job_fits_on_n_training_rows(tmp_path):
    corpus_path = tmp_path / "corpus.parquet"
    Corpus.build(rows(), ["a", "b"]).write(corpus_path)
    spec = {"name": "tfidf-lr", "options": {"min_df": 1, "ngram_range": [1, 1]}, "subsample": 20}
    folder = train_job(str(corpus_path), "forum", spec, 3, str(tmp_path / "seed-3"))
    model = load_model(folder)
    # with calibrate (the default) the vectoriser saw only the fitted rows: one 'row<i>' token per training row
    fitted = sorted(int(t[3:]) for t in model.pipeline[0].vocabulary_ if t.startswith("row"))
    assert len(fitted) == 20 and max(fitted) < 100  # 20 train rows (14 a, 6 b), no validation row
    assert sum(i < 70 for i in fitted) == 14 and model.temperature != 1.0  # the val rows fitted the temperature


def test_subsample_must_be_a_positive_number_of_rows(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "x"\nreference = "forum"\n[[corpus]]\nsource = "generic"\npaths = ["f.csv"]\n'
        '[[model]]\nname = "tfidf-lr"\nsubsample = 0\n'
    )
    with pytest.raises(InputError, match="model.0.subsample: Input should be greater than or equal to 1"):
        load_experiment(path)
