"""The LLM as a zero-shot classifier in the models layer ("llm-zero-shot"): scores from the 0/1 token
log-probabilities, checked by hand against the raw server answer; hard 0/1 with a note without them."""

import math

import httpx
import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import create, load_model, save_model
from mhaudit.models.llm import positive_probability
from mhaudit.weak_supervision.labelers.prompts import load_prompt
from tests.weak_supervision.labelers.servers import FakeServer, chat_completion, free_port, llama_server

CLASSES = ["no_si", "si"]  # the positive class last, as the binary mappings order them
TEXTS = [
    "I want to die. I can't do this anymore.",
    "Had a great day at the beach with the kids!",
    "Everyone would be better off without me.",
    "New study links social media use to teen depression.",
    "This traffic is killing me lol",
    "I keep thinking about ending it all.",
]


@pytest.fixture(scope="module")
def llama_url():
    return llama_server()


def test_positive_probability_by_hand():
    top = [("1", -0.2), ("0", -1.9), (" 1", -3.0), ("The", -4.0), ("0.", -5.0)]
    lp1 = math.log(math.exp(-0.2) + math.exp(-3.0))  # "1" and " 1" pooled; "0." is not an answer
    p, how = positive_probability(top)
    assert how == "logprobs" and p == pytest.approx(math.exp(lp1) / (math.exp(lp1) + math.exp(-1.9)), abs=1e-12)
    assert positive_probability([("The", -0.1)]) == (None, "none")
    assert positive_probability(None) == (None, "none")


@pytest.mark.parametrize(
    "top, expected, by_hand",
    [
        # one answer token listed with p = e^-0.01 = 0.99005: the rest (0.00995) is all "0" can have
        ([("1", -0.01)], 0.990050, lambda e: e(-0.01) / (e(-0.01) + (1 - e(-0.01)))),
        # "1" and " 1" pooled: 0.49659 + 0.44933 = 0.94591; "0" has at most the rest, 0.05409 (not the floor 0.449)
        ([("1", -0.7), (" 1", -0.8)], 0.945914, lambda e: (e(-0.7) + e(-0.8)) / 1.0),
        # the floor binds: "0" pooled 0.74082; rest 1 - 0.74082 - 0.13534 - 0.01832 = 0.10553 > floor 0.01832
        ([("0", -0.3), ("The", -2.0), ("1.", -4.0)], 0.024127, lambda e: e(-4.0) / (e(-4.0) + e(-0.3))),
        # the rest binds: "0" pooled 0.81873 + 0.08208; rest 1 - 0.95060 = 0.04940 < floor e^-3 = 0.04979
        (
            [("0", -0.2), (" 0", -2.5), ("The", -3.0)],
            0.051985,
            lambda e: (1 - e(-0.2) - e(-2.5) - e(-3.0)) / (1 - e(-3.0)),
        ),
        # the listed mass already sums to 1 (rounding): nothing is left for "0"
        ([("1", 0.0), ("The", -30.0)], 1.0, lambda e: 1.0),
    ],
)
def test_bound_for_an_answer_missing_from_the_top_logprobs(top, expected, by_hand):
    """The missing answer's mass is at most min(smallest listed probability, 1 - sum of listed probabilities)."""
    p, how = positive_probability(top)
    assert how == "bound"
    assert p == pytest.approx(expected, abs=1e-6) and p == pytest.approx(by_hand(math.exp), abs=1e-12)


def test_scores_from_logprobs_match_the_raw_answer(llama_url):
    model = create("llm-zero-shot", backend="openai", url=llama_url, task="si", top_logprobs=20).fit(
        pd.DataFrame({"text": ["x"], "label": ["si"]}), CLASSES
    )
    logits = model.predict_logits(TEXTS)
    probs = np.exp(logits)
    assert logits.shape == (6, 2) and np.isfinite(logits).all()
    assert ((probs >= 0) & (probs <= 1)).all() and np.allclose(probs.sum(axis=1), 1.0, atol=1e-9)
    # by hand: the same request, the raw top_logprobs of the first answer token, the 0/1 mass renormalised
    prompt = load_prompt("si")
    for text, p_model in zip(TEXTS, probs[:, 1]):
        body = httpx.post(
            f"{llama_url}/v1/chat/completions",
            timeout=60,
            json={
                "model": "x",
                "messages": prompt.messages(text),
                "temperature": 0,
                "seed": 0,
                "max_tokens": 2,
                "grammar": 'root ::= "0" | "1"',
                "logprobs": True,
                "top_logprobs": 20,
            },
        ).json()
        top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        mass = {"0": 0.0, "1": 0.0}
        for entry in top:
            if entry["token"].strip() in mass:
                mass[entry["token"].strip()] += math.exp(entry["logprob"])
        listed = [math.exp(e["logprob"]) for e in top]
        bound = min(min(listed), max(0.0, 1 - sum(listed)))  # an answer outside the top 20: its bound
        m0, m1 = mass["0"] or bound, mass["1"] or bound
        assert p_model == pytest.approx(m1 / (m0 + m1), abs=2e-3)
    served = httpx.get(f"{llama_url}/v1/models", timeout=10).json()["data"][0]["id"]
    assert model.prompt_hash == prompt.hash(
        (), {"backend": "openai", "model": served, "temperature": 0, "seed": 0, "max_tokens": 2, "constrain": "grammar"}
    )
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
    train = pd.DataFrame(
        {
            "id": [str(i) for i in range(8)],
            "text": [f"t{i}" for i in range(8)],
            "label": ["si", "no_si"] * 4,
            "split": "train",
        }
    )
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
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.prediction_files import read_predictions
    from mhaudit.tables.predictions import predict_corpus

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "m", "owned_by": "me"}]}
        yes = "nice day" not in body["messages"][-1]["content"]  # the template itself says "die"
        top = [
            {"token": "1", "logprob": math.log(0.8 if yes else 0.1)},
            {"token": "0", "logprob": math.log(0.2 if yes else 0.6)},
        ]
        return 200, chat_completion(
            "1" if yes else "0", [{"token": "1" if yes else "0", "logprob": top[0]["logprob"], "top_logprobs": top}]
        )

    corpus = Corpus.build(
        pd.DataFrame(
            {
                "id": ["a", "b"],
                "text": ["I want to die", "nice day"],
                "label": ["si", "no_si"],
                "platform": "bluesky",
                "dataset": "d",
                "split": "test",
            }
        ),
        CLASSES,
    )
    with FakeServer(handle) as server:
        model = create("llm-zero-shot", url=server.url, task="si").fit(corpus.frame, CLASSES)
        table = predict_corpus(model, corpus, model_name="llm-zero-shot", seed=0)
    assert list(table.columns[-2:]) == ["logit_no_si", "logit_si"]
    assert np.exp(table["logit_si"]).tolist() == pytest.approx([0.8, 0.1 / 0.7], abs=1e-9)
    table.to_parquet(tmp_path / "p.parquet")
    assert read_predictions([tmp_path / "p.parquet"]).classes == CLASSES


@pytest.fixture
def warned(monkeypatch):
    """Messages passed to warnings.warn (recorded here: pytest.warns' "always" filter makes llama_cpp's
    module-level /dev/null files report ResourceWarnings at interpreter exit)."""
    seen: list[str] = []
    monkeypatch.setattr("warnings.warn", lambda message, *args, **kwargs: seen.append(str(message)))
    return seen


def _scripted(answers):
    """A chat server: /v1/models, then per post the (status, payload) that `answers(post_text)` gives."""

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "m", "owned_by": "me"}]}
        return answers(body["messages"][-1]["content"])

    return handle


def test_failed_requests_score_half_with_a_note_and_keep_the_other_answers(warned):
    """A 5xx after the retries or a body that is not JSON fails that item only: scored 0.5, counted in a note."""

    def answers(content):
        if "second" in content:
            return 500, f"internal error while reading: {content}"  # a server echoing the prompt
        if "third" in content:
            return 200, "<html>oops</html>"
        top = [{"token": "1", "logprob": math.log(0.9)}, {"token": "0", "logprob": math.log(0.1)}]
        return 200, chat_completion("1", [{"token": "1", "logprob": top[0]["logprob"], "top_logprobs": top}])

    with FakeServer(_scripted(answers)) as server:
        model = create("llm-zero-shot", url=server.url, task="si", retries=1, backoff=0.0).fit(
            pd.DataFrame({"text": [], "label": []}), CLASSES
        )
        probs, hows = model.predict_proba_positive(["first", "second", "third", "fourth"])
        assert sum("second" in b["messages"][-1]["content"] for b in server.posts()) == 2  # retried once
    assert probs.tolist() == pytest.approx([0.9, 0.5, 0.5, 0.9], abs=1e-9)
    assert hows == ["logprobs", "failed", "failed", "logprobs"]
    note = next(n for n in model.notes if "requests failed" in n)
    assert note.startswith("2 of 4 requests failed after their retries") and "scored 0.5" in note
    assert "HTTP 500" in note and "internal error" not in note and "oops" not in note
    assert warned == [f"llm-zero-shot: {note}"]


def test_every_request_failing_or_no_server_is_one_input_error():
    with FakeServer(_scripted(lambda content: (503, "busy"))) as server:
        model = create("llm-zero-shot", url=server.url, task="si", retries=0).fit(
            pd.DataFrame({"text": [], "label": []}), CLASSES
        )
        with pytest.raises(InputError, match=r"all 3 requests to the openai server at .* failed \(first: HTTP 503"):
            model.predict_logits(["a", "b", "c"])
    url = f"http://127.0.0.1:{free_port()}"
    model = create("llm-zero-shot", url=url, task="si", retries=0).fit(pd.DataFrame({"text": [], "label": []}), CLASSES)
    with pytest.raises(InputError, match=f"cannot reach the openai server at {url}"):
        model.predict_logits(["a"])


def test_server_gone_mid_run_keeps_the_answers_and_asks_no_more(warned):
    state = {"n": 0}

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "m", "owned_by": "me"}]}
        state["n"] += 1
        if state["n"] == 2:
            server.close()  # goes away after answering this one
        return 200, chat_completion("1")

    server = FakeServer(handle, keep_alive=False)
    model = create("llm-zero-shot", url=server.url, task="si", retries=2, backoff=0.0).fit(
        pd.DataFrame({"text": [], "label": []}), CLASSES
    )
    probs, hows = model.predict_proba_positive(["a", "b", "c", "d", "e"])
    assert hows == ["hard", "hard", "failed", "failed", "failed"] and probs.tolist() == [1.0, 1.0, 0.5, 0.5, 0.5]
    assert model.notes[0] == (
        "3 of 5 requests failed (1 after their retries, first: ServerUnreachable; 2 not sent: "
        "the server could not be reached any more); scored 0.5 like an invalid answer"
    )
    assert len(warned) == 1 and "3 of 5 requests failed" in warned[0]


def test_predict_command_keeps_answers_when_one_request_fails(tmp_path, warned):
    """`mhaudit predict` with one failing request writes every row (exit 0); all failing is exit 2, no traceback."""
    from typer.testing import CliRunner

    from mhaudit.cli import app
    from mhaudit.tables.corpus.schema import Corpus

    corpus = Corpus.build(
        pd.DataFrame(
            {
                "id": ["a", "b", "c"],
                "text": ["one", "two", "three"],
                "label": ["si", "no_si", "si"],
                "platform": "bluesky",
                "dataset": "d",
                "split": "test",
            }
        ),
        CLASSES,
    )
    corpus.write(tmp_path / "c.parquet")
    mode = {"fail": "two"}

    def answers(content):
        return (500, "boom") if mode["fail"] in content else (200, chat_completion("1"))

    with FakeServer(_scripted(answers)) as server:
        save_model(
            create("llm-zero-shot", url=server.url, task="si", retries=0).fit(corpus.frame, CLASSES), tmp_path / "m"
        )
        args = ["predict", "--model", str(tmp_path / "m"), "--corpus", str(tmp_path / "c.parquet"), "--out"]
        result = CliRunner().invoke(app, [*args, str(tmp_path / "p.parquet")])
        assert result.exit_code == 0, result.output
        expected = "1 of 3 requests failed after their retries (first: HTTP 500 on every one of 1 tries)"
        assert any(expected in w for w in warned)
        mode["fail"] = ""  # every post now fails
        failed = CliRunner().invoke(app, [*args, str(tmp_path / "q.parquet")])
    table = pd.read_parquet(tmp_path / "p.parquet")
    assert np.exp(table["logit_si"]).tolist() == pytest.approx([1.0, 0.5, 1.0], abs=1e-9)
    assert failed.exit_code == 2 and "Traceback" not in failed.output and "all 3 requests" in failed.output
    assert not (tmp_path / "q.parquet").exists()
