"""The LLM as a zero-shot classifier in the models layer ("llm-zero-shot"): scores from the 0/1 token
log-probabilities, checked by hand against the raw server answer; hard 0/1 with a note without them."""

import math

import httpx
import numpy as np
import pandas as pd
import pytest

from mhaudit.errors import InputError
from mhaudit.label.prompts import load_prompt
from mhaudit.models import create, load_model, save_model
from mhaudit.models.llm import positive_probability
from tests.label.servers import FakeServer, chat_completion, llama_server

CLASSES = ["no_si", "si"]  # the positive class last, as the binary mappings order them
TEXTS = ["I want to die. I can't do this anymore.", "Had a great day at the beach with the kids!",
         "Everyone would be better off without me.", "New study links social media use to teen depression.",
         "This traffic is killing me lol", "I keep thinking about ending it all."]


@pytest.fixture(scope="module")
def llama_url():
    return llama_server()


def test_positive_probability_by_hand():
    top = [("1", -0.2), ("0", -1.9), (" 1", -3.0), ("The", -4.0), ("0.", -5.0)]
    lp1 = math.log(math.exp(-0.2) + math.exp(-3.0))  # "1" and " 1" pooled; "0." is not an answer
    p, how = positive_probability(top)
    assert how == "logprobs" and p == pytest.approx(math.exp(lp1) / (math.exp(lp1) + math.exp(-1.9)), abs=1e-12)
    p, how = positive_probability([("The", -0.5), ("1", -1.0), ("No", -2.5)])  # "0" below the listed ones
    assert how == "bound" and p == pytest.approx(math.exp(-1.0) / (math.exp(-1.0) + math.exp(-2.5)), abs=1e-12)
    assert positive_probability([("The", -0.1)]) == (None, "none")
    assert positive_probability(None) == (None, "none")


def test_scores_from_logprobs_match_the_raw_answer(llama_url):
    model = create("llm-zero-shot", backend="openai", url=llama_url, task="si", top_logprobs=20).fit(
        pd.DataFrame({"text": ["x"], "label": ["si"]}), CLASSES)
    logits = model.predict_logits(TEXTS)
    probs = np.exp(logits)
    assert logits.shape == (6, 2) and np.isfinite(logits).all()
    assert ((probs >= 0) & (probs <= 1)).all() and np.allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    # by hand: the same request, the raw top_logprobs of the first answer token, the 0/1 mass renormalised
    prompt = load_prompt("si")
    for text, p_model in zip(TEXTS, probs[:, 1]):
        body = httpx.post(f"{llama_url}/v1/chat/completions", timeout=60, json={
            "model": "x", "messages": prompt.messages(text), "temperature": 0, "seed": 0, "max_tokens": 2,
            "grammar": 'root ::= "0" | "1"', "logprobs": True, "top_logprobs": 20}).json()
        top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        mass = {"0": 0.0, "1": 0.0}
        for entry in top:
            if entry["token"].strip() in mass:
                mass[entry["token"].strip()] += math.exp(entry["logprob"])
        floor = math.exp(min(e["logprob"] for e in top))
        m0, m1 = mass["0"] or floor, mass["1"] or floor  # an answer outside the top 20: its bound
        assert p_model == pytest.approx(m1 / (m0 + m1), abs=2e-3)
    served = httpx.get(f"{llama_url}/v1/models", timeout=10).json()["data"][0]["id"]
    assert model.prompt_hash == prompt.hash((), {"backend": "openai", "model": served, "temperature": 0, "seed": 0,
                                                 "max_tokens": 2, "constrain": "grammar"})
    assert all("hard" not in note and "0.5" not in note for note in model.notes)


def test_without_logprobs_scores_are_hard_answers_with_a_note():
    answers = iter(["1", "0", "maybe"])

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "m", "owned_by": "me"}]}
        return 200, chat_completion(next(answers))  # no logprobs field at all

    with FakeServer(handle) as server:
        model = create("llm-zero-shot", url=server.url, task="si").fit(pd.DataFrame({"text": [], "label": []}), CLASSES)
        probs = np.exp(model.predict_logits(["a", "b", "c"]))[:, 1]
    assert probs == pytest.approx([1.0, 0.0, 0.5], abs=1e-9)
    assert any("2 of 3 scores are hard 0/1 answers" in n for n in model.notes)
    assert any("1 of 3 answers were not 0 or 1" in n for n in model.notes)


def test_k_shot_examples_saved_with_the_model_and_binary_only(tmp_path):
    train = pd.DataFrame({"id": [str(i) for i in range(8)], "text": [f"t{i}" for i in range(8)],
                          "label": ["si", "no_si"] * 4, "split": "train"})
    model = create("llm-zero-shot", url="http://127.0.0.1:9", shots=2, seed=1).fit(train, CLASSES)
    assert sorted(y for _, y in model.examples) == [0, 1]
    assert all((text == f"t{int(text[1:])}") and (y == (int(text[1:]) % 2 == 0)) for text, y in model.examples)
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.examples == model.examples and loaded.classes == CLASSES and loaded.name == "llm-zero-shot"
    with pytest.raises(InputError, match="binary classifier"):
        create("llm-zero-shot").fit(train, ["a", "b", "c"])


def test_predictions_table_for_the_audits(tmp_path):
    """Scores enter the predictions table like any model's (logit_<class> columns in class order)."""
    from mhaudit.corpus.schema import Corpus
    from mhaudit.predictions import predict_corpus, read_predictions

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "m", "owned_by": "me"}]}
        yes = "nice day" not in body["messages"][-1]["content"]  # the template itself says "die"
        top = [{"token": "1", "logprob": math.log(0.8 if yes else 0.1)},
               {"token": "0", "logprob": math.log(0.2 if yes else 0.6)}]
        return 200, chat_completion("1" if yes else "0", [{"token": "1" if yes else "0", "logprob": top[0]["logprob"],
                                                          "top_logprobs": top}])

    corpus = Corpus.build(pd.DataFrame({"id": ["a", "b"], "text": ["I want to die", "nice day"], "label": ["si", "no_si"],
                                        "platform": "bluesky", "dataset": "d", "split": "test"}), CLASSES)
    with FakeServer(handle) as server:
        model = create("llm-zero-shot", url=server.url, task="si").fit(corpus.frame, CLASSES)
        table = predict_corpus(model, corpus, model_name="llm-zero-shot", seed=0)
    assert list(table.columns[-2:]) == ["logit_no_si", "logit_si"]
    assert np.exp(table["logit_si"]).tolist() == pytest.approx([0.8, 0.1 / 0.7], abs=1e-9)
    table.to_parquet(tmp_path / "p.parquet")
    assert read_predictions([tmp_path / "p.parquet"]).classes == CLASSES
