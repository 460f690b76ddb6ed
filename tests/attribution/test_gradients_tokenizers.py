"""Word merging for byte-level BPE (RoBERTa/GPT-2 'Ġ' pieces) and SentencePiece ('▁' pieces) tokenizers.

The tokenizers are real ones, trained here with the `tokenizers` library on a few hundred sentences
(nothing is downloaded) and wrapped in transformers' PreTrainedTokenizerFast, as a hub checkpoint's
tokenizer.json would be. The model is a tiny random RobertaForSequenceClassification (2 layers, hidden 64).
Expected numbers come from a separate route: per-piece saliency by autograd through ``inputs_embeds``
on each text alone, pieces grouped into words by the 'Ġ'/'▁' convention and named by the tokenizer's own
decoder, then summed and averaged by hand.
"""

import random
from collections import defaultdict

import pytest

torch = pytest.importorskip("torch", reason="gradient attributions need torch (pip install mhaudit[transformers])")
transformers = pytest.importorskip("transformers", reason="gradient attributions need transformers")
tokenizers = pytest.importorskip("tokenizers", reason="the test tokenizers are trained with `tokenizers`")
pytest.importorskip("captum", reason="Integrated Gradients needs captum (pip install captum)")

from mhaudit.attribution.gradients import token_integrated_gradients, token_saliency  # noqa: E402
from mhaudit.attribution.table import attribution_table  # noqa: E402
from mhaudit.attribution.words import merge_subwords, merge_words, piece_scheme  # noqa: E402

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's order: <pad> is id 1, as RobertaConfig expects
VOCABULARY = (
    "i feel so sad today and nobody cares about me anymore the weather is nice we went to the park with "
    "friends work deadline stress boss bills tired anxious worried panic sleep cannot breathe happy calm "
    "coffee morning evening everything again"
).split()
CLASSES = ["normal", "depression", "anxiety"]
# words the tokenizers never saw whole ("unbelievably", "overthinking") split into many pieces; "café"
# has a byte (é) outside the training alphabet; "Sad" is upper-case
TEXTS = [
    "i feel unbelievably sad today",
    "overthinking everything again at work",
    "Sad coffee at the café",
    "we went to the park with friends",
]
LABELS = [1, 2, 1, 0]


def sentences(n=400, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(4, 12))) for _ in range(n)]


@pytest.fixture(scope="module")
def byte_level():
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing

    raw = ByteLevelBPETokenizer()
    raw.train_from_iterator(sentences(), vocab_size=400, min_frequency=2, special_tokens=SPECIALS, show_progress=False)
    raw.post_processor = RobertaProcessing(
        ("</s>", raw.token_to_id("</s>")), ("<s>", raw.token_to_id("<s>")), trim_offsets=True
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )


@pytest.fixture(scope="module")
def sentencepiece():
    from tokenizers import SentencePieceBPETokenizer
    from tokenizers.processors import TemplateProcessing

    raw = SentencePieceBPETokenizer()  # Metaspace pre-tokenizer ('▁' word starts) + BPE, as XLM-R/T5 files
    raw.train_from_iterator(sentences(), vocab_size=400, min_frequency=2, special_tokens=SPECIALS, show_progress=False)
    raw.post_processor = TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )


@pytest.fixture(scope="module")
def unigram():
    from tokenizers import SentencePieceUnigramTokenizer

    raw = SentencePieceUnigramTokenizer()
    raw.train_from_iterator(
        sentences(), vocab_size=150, special_tokens=SPECIALS, unk_token="<unk>", show_progress=False
    )
    return transformers.PreTrainedTokenizerFast(tokenizer_object=raw._tokenizer, pad_token="<pad>", unk_token="<unk>")


def roberta(tokenizer, seed=0):
    torch.manual_seed(seed)
    # initializer_range 0.2 (not 0.02) so the random model's probabilities are not all within 1e-3 of 1/3
    config = transformers.RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=80,
        type_vocab_size=1,
        num_labels=3,
        initializer_range=0.2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return transformers.RobertaForSequenceClassification(config).eval()


@pytest.fixture(scope="module")
def byte_model(byte_level):
    return roberta(byte_level)


@pytest.fixture(scope="module")
def sp_model(sentencepiece):
    return roberta(sentencepiece, seed=1)


def pieces_and_saliency(model, tokenizer, text, target):
    """Pieces of one text (no special tokens) and ||dP(target)/dE_i|| through inputs_embeds."""
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    emb = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    prob = torch.softmax(model(inputs_embeds=emb).logits, dim=-1)[0, target]
    (grad,) = torch.autograd.grad(prob, emb)
    tokens = tokenizer.convert_ids_to_tokens(ids[0].tolist())
    keep = [i for i, t in enumerate(tokens) if t not in ("<s>", "</s>")]
    return [tokens[i] for i in keep], grad[0].norm(dim=-1)[keep].tolist()


def words_by_convention(text, tokens, scores, marker):
    """Group pieces at each `marker`-initial piece (the first piece starts a word too) and name each group
    by the text's whitespace word in that place (the texts have no punctuation, so the two agree)."""
    groups = []
    for token, score in zip(tokens, scores):
        if not groups or token.startswith(marker):
            groups.append([[token], score])
        else:
            groups[-1][0].append(token)
            groups[-1][1] += score
    names = text.lower().split()
    assert len(groups) == len(names)
    return [(name, score, pieces) for name, (pieces, score) in zip(names, groups)]


def expected_table(model, tokenizer, marker):
    totals, pieces_of = defaultdict(list), {}
    for text, label in zip(TEXTS, LABELS):
        tokens, scores = pieces_and_saliency(model, tokenizer, text, label)
        for word, score, pieces in words_by_convention(text, tokens, scores, marker):
            totals[(CLASSES[label], word)].append(score)
            pieces_of[word] = pieces
    return {key: (sum(v) / len(v), len(v)) for key, v in totals.items()}, pieces_of


def check_table(table, expected):
    got = {(r["class"], r["word"]): (r["score"], r["count"]) for _, r in table.iterrows()}
    assert set(got) == set(expected)
    for key, (score, count) in expected.items():
        assert got[key][1] == count
        assert got[key][0] == pytest.approx(score, rel=1e-5, abs=1e-7)
    return got


# ------------------------------------------------------------------------------------ conventions


def test_piece_schemes_are_read_from_the_tokenizer(byte_level, sentencepiece, unigram):
    assert piece_scheme(byte_level) == "byte-bpe"
    assert piece_scheme(sentencepiece) == "sentencepiece"
    assert piece_scheme(unigram) == "sentencepiece"


def test_merge_subwords_byte_level_pieces(byte_level):
    tokens = byte_level.tokenize("I feel unbelievably sad café")
    assert tokens[:2] == ["I", "Ġfeel"]  # the first word has no 'Ġ' (no space before it)
    assert "Ã" in tokens and "©" in tokens  # é is two bytes, two pieces
    scores = [2.0**-i for i in range(len(tokens))]  # distinct powers of two: any wrong grouping shows
    merged = merge_subwords(tokens, scores, "byte-bpe")
    assert [w for w, _ in merged] == ["i", "feel", "unbelievably", "sad", "café"]
    starts = [i for i, t in enumerate(tokens) if i == 0 or t.startswith("Ġ")] + [len(tokens)]
    assert [s for _, s in merged] == [sum(scores[a:b]) for a, b in zip(starts, starts[1:])]
    assert merge_subwords(tokens, scores) == merged  # 'auto' sees the 'Ġ' pieces
    # punctuation without a space joins the word before (the piece convention); word_ids splits it off
    assert merge_subwords(["Ġsad", ",", "Ġday"], [1.0, 0.5, 0.25], "byte-bpe") == [("sad,", 1.5), ("day", 0.25)]


@pytest.mark.parametrize("name", ["sentencepiece", "unigram"])
def test_merge_subwords_sentencepiece_pieces(request, name):
    tokenizer = request.getfixturevalue(name)
    tokens = tokenizer.tokenize("overthinking everything again")
    assert tokens[0] == "▁" and len(tokens) > 4  # "overthinking" was never seen whole: '▁' then pieces
    scores = [2.0**-i for i in range(len(tokens))]
    merged = merge_subwords(tokens, scores, "sentencepiece")
    assert [w for w, _ in merged] == ["overthinking", "everything", "again"]
    starts = [i for i, t in enumerate(tokens) if t.startswith("▁")] + [len(tokens)]
    assert [s for _, s in merged] == [sum(scores[a:b]) for a, b in zip(starts, starts[1:])]
    assert merge_subwords(tokens, scores) == merged
    with pytest.raises(ValueError, match="scheme must be"):
        merge_subwords(tokens, scores, "bpe")


def test_merge_words_uses_spans_and_falls_back_to_pieces():
    text = "Sad, café"
    pieces = [
        ("▁S", 1.0, (0, 0, 1)),
        ("ad", 2.0, (0, 1, 3)),
        ("<unk>", 4.0, (0, 3, 4)),
        ("▁ca", 8.0, (1, 5, 7)),
        ("f", 16.0, (1, 7, 8)),
        ("<unk>", 32.0, (1, 8, 9)),
    ]
    # the span names the word even where a piece is <unk>; case folded
    assert merge_words(text, pieces) == [("sad,", 7.0), ("café", 56.0)]
    no_words = [(t, s, None) for t, s, _ in pieces]
    assert merge_words(text, no_words, "sentencepiece") == [("sad<unk>", 7.0), ("caf<unk>", 56.0)]
    assert merge_words("", []) == []


# ------------------------------------------------------------------------------- end to end: RoBERTa


def test_byte_level_attribution_table_sums_pieces_into_words(byte_model, byte_level):
    table = attribution_table(byte_model, byte_level, TEXTS, CLASSES, method="saliency", labels=LABELS)
    assert table.attrs["words"] == "word_ids"
    expected, pieces_of = expected_table(byte_model, byte_level, "Ġ")
    assert len(pieces_of["unbelievably"]) >= 10 and len(pieces_of["overthinking"]) >= 5
    assert pieces_of["café"][-2:] == ["Ã", "©"]  # é: two byte pieces
    for word, pieces in pieces_of.items():  # the tokenizer's own decoder names the same words
        assert byte_level.convert_tokens_to_string(pieces).strip().lower() == word
    got = check_table(table, expected)
    # "sad" (text 0) and "Sad" (text 2) are one word type of class depression: the mean of two occurrences
    assert got[("depression", "sad")][1] == 2
    # a multi-piece word spelled out: its score is the sum of its pieces' saliencies
    tokens, scores = pieces_and_saliency(byte_model, byte_level, TEXTS[0], LABELS[0])
    start = tokens.index("Ġ")
    end = tokens.index("Ġsad")
    assert tokens[start:end] == pieces_of["unbelievably"]
    assert got[("depression", "unbelievably")][0] == pytest.approx(sum(scores[start:end]), rel=1e-5)
    assert got[("depression", "unbelievably")][0] > 2 * max(scores[start:end])  # well above any one piece


def test_byte_level_integrated_gradients_keep_completeness(byte_model, byte_level):
    table = attribution_table(
        byte_model, byte_level, TEXTS, CLASSES, method="integrated_gradients", labels=LABELS, n_steps=64
    )
    # RoBERTa puts a [PAD] at the padding position; the path keeps the text's positions, so f(baseline) is
    # the model on the text's embeddings with every word embedding replaced by <pad>'s (inputs_embeds)
    embed = byte_model.get_input_embeddings()
    with torch.no_grad():
        for cls in (1, 2, 0):
            change = 0.0
            for text, label in zip(TEXTS, LABELS):
                if label != cls:
                    continue
                ids = byte_level(text, return_tensors="pt")["input_ids"]
                base = ids.clone()
                base[0, 1:-1] = byte_level.pad_token_id
                p_text = torch.softmax(byte_model(inputs_embeds=embed(ids)).logits, -1)[0, cls]
                p_base = torch.softmax(byte_model(inputs_embeds=embed(base)).logits, -1)[0, cls]
                change += float(p_text - p_base)
            rows = table[table["class"] == CLASSES[cls]]
            assert abs(change) > 0.01
            assert float((rows["score"] * rows["count"]).sum()) == pytest.approx(change, rel=1e-3)
    assert table.attrs["convergence_delta_max"] < 1e-5


def test_integrated_gradients_delta_is_the_integration_gap_for_roberta(byte_model, byte_level):
    """Captum's own delta runs the baseline ids, whose [PAD]s RoBERTa moves to the padding position; ours is
    the sum of attributions minus the change along the path actually integrated."""
    attributions, deltas = token_integrated_gradients(
        byte_model, byte_level, TEXTS, LABELS, n_steps=64, output="logit", batch_size=3
    )
    embed = byte_model.get_input_embeddings()
    for text, label, pairs, delta in zip(TEXTS, LABELS, attributions, deltas):
        ids = byte_level(text, return_tensors="pt")["input_ids"]
        base = ids.clone()
        base[0, 1:-1] = byte_level.pad_token_id
        with torch.no_grad():
            change = float(
                byte_model(inputs_embeds=embed(ids)).logits[0, label]
                - byte_model(inputs_embeds=embed(base)).logits[0, label]
            )
        total = sum(s for _, s in pairs)
        assert abs(change) > 0.01
        assert total == pytest.approx(change, rel=1e-4, abs=1e-5)
        assert abs(delta - (total - change)) < 1e-5 and abs(delta) < 1e-4


def test_sentencepiece_attribution_table_sums_pieces_into_words(sp_model, sentencepiece):
    table = attribution_table(sp_model, sentencepiece, TEXTS, CLASSES, method="saliency", labels=LABELS)
    assert table.attrs["words"] == "word_ids"
    expected, pieces_of = expected_table(sp_model, sentencepiece, "▁")
    assert len(pieces_of["unbelievably"]) >= 10 and len(pieces_of["overthinking"]) >= 5
    # 'S' and 'é' are outside this vocabulary: the pieces hold <unk>, the table names the words by their text
    assert sentencepiece.tokenize("sad Sad") == ["▁sad", "▁", "<unk>", "ad"]
    assert pieces_of["café"] == ["▁ca", "f", "<unk>"]
    got = check_table(table, expected)
    assert got[("depression", "sad")][1] == 2  # "sad" and "Sad" (with its <unk> piece) are one word type
    per_token = token_saliency(sp_model, sentencepiece, [TEXTS[2]], [1])[0]
    assert [t for t, _ in per_token[-3:]] == ["▁ca", "f", "<unk>"]
    row = table[(table["class"] == "depression") & (table["word"] == "café")]
    assert float(row["score"].iloc[0]) == pytest.approx(sum(s for _, s in per_token[-3:]), rel=1e-5)
