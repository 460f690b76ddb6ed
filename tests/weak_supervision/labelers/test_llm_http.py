"""The LLM labeler against scripted HTTP servers (no model): answer parsing, invalid answers, the retry
policy, unreachable servers, request payloads, item and pool readers, the k-shot draw."""

import itertools
import json
import threading
import time

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.labelers.llm import label_items
from mhaudit.weak_supervision.labelers.llm_answers import parse_answer
from mhaudit.weak_supervision.labelers.llm_backends import GRAMMAR, OllamaBackend, OpenAIBackend
from mhaudit.weak_supervision.labelers.llm_items import draw_examples, read_items, read_pool
from mhaudit.weak_supervision.labelers.llm_retry import RetryPolicy, ServerRejected, ServerUnreachable
from mhaudit.weak_supervision.labelers.prompts import load_prompt
from tests.weak_supervision.labelers.servers import FakeServer, chat_completion, free_port

MODELS = {"object": "list", "data": [{"id": "fake-model", "owned_by": "me"}]}


def openai_handler(answers, models=MODELS):
    """Serve /v1/models and answer chats from `answers` (an iterator of (status, payload) or text)."""
    lock = threading.Lock()

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, models
        with lock:
            answer = next(answers)
        return answer if isinstance(answer, tuple) else (200, chat_completion(answer))

    return handle


def run(server_url, items, store, *, policy=RetryPolicy(0, 0.0), timeout=5.0, concurrency=1, **kwargs):
    backend = OpenAIBackend(server_url, policy=policy, timeout=timeout, concurrency=concurrency)
    waits = []
    backend._sleep = waits.append  # record the backoff instead of sleeping
    try:
        report = label_items(
            items, task="si", store=store, backend=backend, prompt=load_prompt("si"), concurrency=concurrency, **kwargs
        )
    finally:
        backend.close()
    return report, waits


@pytest.mark.parametrize(
    "raw, value",
    [
        ("1", 1),
        ("0", 0),
        (" 1\n", 1),
        ("\t0 ", 0),
        ("1.", None),
        ("Yes", None),
        ("10", None),
        ("", None),
        (None, None),
        ("0 1", None),
        ("１", None),
    ],
)
def test_parse_answer_is_exact(raw, value):
    assert parse_answer(raw) == value


def test_invalid_answers_are_stored_raw_never_coerced(tmp_path, items):
    raws = ["1", "0", "Yes", " 1 ", "1.", "", "The post", "0\n"]
    with FakeServer(openai_handler(iter(raws))) as server, LabelStore(tmp_path / "l.sqlite") as store:
        report, _ = run(server.url, items.iloc[:8], store)
        frame = store.frame().set_index("item_id").loc[items["id"].iloc[:8]]
    assert frame["raw_answer"].tolist() == raws
    assert frame["value"].tolist() == [1, 0, pd.NA, 1, pd.NA, pd.NA, pd.NA, 0]
    assert (report.n_answered, report.n_invalid, report.n_positive) == (8, 4, 2)
    assert report.invalid_rate == 0.5 and report.positive_rate == 0.5
    assert (frame["kind"] == "llm").all() and (frame["labeler"] == "fake-model").all()
    assert (frame["prompt_hash"] == report.prompt_hash).all() and (frame["latency_ms"] > 0).all()


def test_retries_with_doubling_backoff_then_success(tmp_path, items):
    answers = iter([(500, "boom"), (503, "busy"), (429, "slow down"), "1"])
    with FakeServer(openai_handler(answers)) as server, LabelStore(tmp_path / "l.sqlite") as store:
        report, waits = run(server.url, items.iloc[:1], store, policy=RetryPolicy(3, 0.5))
        assert len(server.posts()) == 4
        assert store.frame()["value"].tolist() == [1]
    assert waits == [0.5, 1.0, 2.0]
    assert (report.n_answered, report.n_retried, report.n_failed) == (1, 1, 0)


def test_persistent_5xx_fails_the_item_and_a_rerun_asks_again(tmp_path, items):
    answers = itertools.chain([(500, "down")] * 9, itertools.repeat("0"))
    with FakeServer(openai_handler(answers)) as server, LabelStore(tmp_path / "l.sqlite") as store:
        report, waits = run(server.url, items.iloc[:3], store, policy=RetryPolicy(2, 0.25))
        assert len(server.posts()) == 9  # 3 items x (1 + 2 retries)
        assert (report.n_failed, report.n_answered, len(store.frame())) == (3, 0, 0)
        assert waits == [0.25, 0.5] * 3
        assert "HTTP 500" in report.failures[0] and "3 tries" in report.failures[0]
        again, _ = run(server.url, items.iloc[:3], store)
        assert (again.n_skipped, again.n_answered, len(store.frame())) == (0, 3, 3)


def test_timeouts_are_retried_and_4xx_is_not(tmp_path, items):
    def handle(method, path, body):
        if path == "/v1/models":
            return 200, MODELS
        if "slow" in body["messages"][-1]["content"]:
            time.sleep(1.0)
            return 200, chat_completion("1")
        return 400, {"error": "context too long"}

    slow = pd.DataFrame({"id": ["a", "b"], "text": ["slow one", "bad one"]})
    with FakeServer(handle) as server, LabelStore(tmp_path / "l.sqlite") as store:
        report, waits = run(server.url, slow, store, policy=RetryPolicy(1, 0.0), timeout=0.3)
        contents = [b["messages"][-1]["content"] for b in server.posts()]
    assert sum("slow one" in c for c in contents) == 2 and sum("bad one" in c for c in contents) == 1
    assert report.n_failed == 2 and report.n_answered == 0
    failures = sorted(report.failures)
    assert failures[0].startswith("a: ") and "timed out after 0.3 s" in failures[0]
    assert failures[1].startswith("b: ") and "HTTP 400" in failures[1] and "context too long" not in failures[1]


def test_failures_and_the_report_never_carry_the_servers_body(tmp_path, items):
    """A server's error body can echo the prompt (post text): failures keep the status code / exception class."""

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, MODELS
        content = body["messages"][-1]["content"]
        if "zebra" in content:
            return 500, f"CUDA error while decoding: {content}"
        if "quokka" in content:
            return 422, {"error": f"prompt too long: {content}"}
        return 200, f"<html>proxy error for {content}</html>"  # 200 but not JSON

    texts = pd.DataFrame({"id": ["z", "q", "n"], "text": ["my zebra post", "my quokka post", "my narwhal post"]})
    with FakeServer(handle) as server, LabelStore(tmp_path / "l.sqlite") as store:
        report, _ = run(server.url, texts, store, policy=RetryPolicy(1, 0.0))
    assert report.n_failed == 3 and report.n_answered == 0
    failures = dict(f.split(": ", 1) for f in report.failures)
    assert "HTTP 500 on every one of 2 tries" in failures["z"]
    assert failures["q"].endswith("answered HTTP 422") and "not JSON" in failures["n"]
    dumped = json.dumps(report.as_dict())
    for word in ("zebra", "quokka", "narwhal", "CUDA", "proxy error", "prompt too long"):
        assert word not in dumped


def test_unreachable_server_one_sentence_with_url_and_policy(tmp_path, items):
    url = f"http://127.0.0.1:{free_port()}"
    with LabelStore(tmp_path / "l.sqlite") as store, pytest.raises(ServerUnreachable) as caught:
        run(url, items, store, policy=RetryPolicy(2, 0.01))
    message = str(caught.value)
    assert message.startswith(f"cannot reach the openai server at {url}: cannot connect")
    assert (
        "tried 3 times (2 retries on connection errors, timeouts, HTTP 429 and 5xx, waiting 0.01 s, 0.02 s" in message
    )
    result = CliRunner().invoke(
        app,
        [
            "labels",
            "llm",
            "--items",
            str(_csv(tmp_path, items)),
            "--task",
            "si",
            "--labels",
            str(tmp_path / "cli.sqlite"),
            "--backend",
            "ollama",
            "--url",
            url,
            "--retries",
            "1",
            "--backoff",
            "0",
            "--no-progress",
        ],
    )
    assert result.exit_code == 2
    assert f"cannot reach the ollama server at {url}" in result.output and "Traceback" not in result.output


def test_server_dying_mid_run_stops_the_run_and_keeps_answers(tmp_path, items):
    state = {"n": 0}

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, MODELS
        state["n"] += 1
        return 200, chat_completion("1")

    server = FakeServer(handle, keep_alive=False)
    store = LabelStore(tmp_path / "l.sqlite")
    backend = OpenAIBackend(server.url, policy=RetryPolicy(1, 0.0))
    backend._sleep = lambda s: None

    def on_event(event):
        if event.kind == "advance" and event.done == 5:
            server.close()  # the server goes away after 5 answers

    with pytest.raises(ServerUnreachable) as caught:
        label_items(
            items,
            task="si",
            store=store,
            backend=backend,
            prompt=load_prompt("si"),
            concurrency=1,
            progress=Progress(on_event),
        )
    answered = caught.value.report.n_answered
    assert answered in (5, 6) and len(store.frame()) == answered == state["n"]  # nothing answered was lost
    assert f"cannot reach the openai server at {server.url}" in str(caught.value)
    store.close()


def test_model_not_found_stops_with_the_servers_reason(tmp_path, items):
    def handle(method, path, body):
        if path == "/v1/models":
            return 200, MODELS
        return 404, {"error": {"message": "The model `gpt-9` does not exist."}}

    with FakeServer(handle) as server, LabelStore(tmp_path / "l.sqlite") as store:
        with pytest.raises(ServerRejected, match="answered HTTP 404.*gpt-9"):
            run(server.url, items, store)
        assert len(server.posts()) <= 2  # at most the requests already in flight (2 x concurrency)


def test_openai_payload_and_constraint_by_server_kind():
    for owner, constrain, field in [
        ("me", "grammar", "grammar"),
        ("llamacpp", "grammar", "grammar"),
        ("vllm", "choice", "guided_choice"),
        ("openai", "none", None),
    ]:
        models = {"data": [{"id": "served", "owned_by": owner}]}
        with FakeServer(openai_handler(iter([]), models)) as server:
            backend = OpenAIBackend(server.url + "/v1/", seed=7, top_logprobs=5)
            backend.prepare()
        assert backend.url == server.url and backend.model == "served" and backend.constrain == constrain
        payload = backend.payload([{"role": "user", "content": "x"}])
        assert {k: payload[k] for k in ("temperature", "seed", "max_tokens", "logprobs", "top_logprobs")} == {
            "temperature": 0,
            "seed": 7,
            "max_tokens": 2,
            "logprobs": True,
            "top_logprobs": 5,
        }
        if field == "grammar":
            assert payload["grammar"] == GRAMMAR == 'root ::= "0" | "1"'
        elif field:
            assert payload["guided_choice"] == ["0", "1"]
        else:
            assert "grammar" not in payload and "guided_choice" not in payload
            assert "not constrained" in backend.notes[0]
        backend.close()


def test_ollama_payload_and_missing_model():
    def handle(method, path, body):
        return 200, {"models": [{"name": "llama3:8b", "model": "llama3:8b"}]}

    with FakeServer(handle) as server:
        backend = OllamaBackend(server.url, seed=3)
        backend.prepare()
        assert backend.model == "llama3:8b" and backend.constrain == "none"
        assert backend.payload([]) == {
            "model": "llama3:8b",
            "messages": [],
            "stream": False,
            "options": {"temperature": 0, "seed": 3, "num_predict": 2},
        }
        payload = OllamaBackend(server.url, constrain="schema").payload([])
        assert payload["format"] == {"type": "integer", "enum": [0, 1]}
        with pytest.raises(ServerRejected, match="has no model 'mistral'.*ollama pull mistral"):
            OllamaBackend(server.url, "mistral").prepare()


def _csv(tmp_path, frame):
    path = tmp_path / "items.csv"
    frame.to_csv(path, index=False)
    return path


def test_read_items_from_tables_and_post_store(tmp_path, items):
    from mhaudit.weak_supervision.collect.store import PostStore

    table = pd.concat([items.iloc[:3], pd.DataFrame({"id": ["blank"], "text": ["   "]})])
    assert read_items(_csv(tmp_path, table))["id"].tolist() == ["post-00", "post-01", "post-02"]  # blank dropped
    dup = tmp_path / "dup.csv"
    pd.DataFrame({"id": ["a", "a"], "text": ["x", "y"]}).to_csv(dup, index=False)
    with pytest.raises(InputError, match="id 'a' appears twice"):
        read_items(dup)
    with pytest.raises(InputError, match="missing|column"):
        read_items(_csv(tmp_path, items.rename(columns={"text": "body"})))
    store_path = tmp_path / "posts.sqlite"
    with PostStore(store_path, secret=b"k") as posts:
        posts.commit_batch(
            [
                {"uri": f"at://did:plc:abc/app.bsky.feed.post/{i}", "did": "did:plc:abc", "text": f"post {i}"}
                for i in range(3)
            ],
            cursor=5,
        )
    got = read_items(store_path)
    assert len(got) == 3 and got["text"].tolist() == ["post 0", "post 1", "post 2"]
    assert all(i.startswith("at://") and "did:plc:abc" not in i for i in got["id"])  # pseudonymised URIs


def test_read_pool_labels(tmp_path):
    from mhaudit.tables.corpus.schema import Corpus

    path = tmp_path / "pool.csv"
    pd.DataFrame({"text": ["a", "b", "c"], "label": ["yes", "no", "yes"]}).to_csv(path, index=False)
    with pytest.raises(InputError, match="not 0/1; pass --positive"):
        read_pool(path)
    assert read_pool(path, positive="yes")["y"].tolist() == [1, 0, 1]
    corpus = Corpus.build(
        pd.DataFrame(
            {
                "id": ["1", "2", "3"],
                "text": ["a", "b", "c"],
                "label": ["no_stress", "stress", "no_stress"],
                "platform": "reddit",
                "dataset": "d",
                "split": "train",
            }
        ),
        ["no_stress", "stress"],
    )
    corpus.write(tmp_path / "pool.parquet")
    assert read_pool(tmp_path / "pool.parquet")["y"].tolist() == [0, 1, 0]  # the positive class is last


def test_k_shot_draw_is_seeded_stratified_and_excludes_items():
    pool = pd.DataFrame(
        {"id": [f"p{i}" for i in range(20)], "text": [f"text {i}" for i in range(20)], "y": [1] * 4 + [0] * 16}
    )
    three = draw_examples(pool, 3, seed=0)
    assert three == draw_examples(pool, 3, seed=0) and three != draw_examples(pool, 3, seed=5)
    assert sorted(y for _, y in three) in ([0, 1, 1], [0, 0, 1])
    four = draw_examples(pool, 4, seed=1, exclude_ids={"p0"}, exclude_texts={" TEXT 1"})
    assert sorted(y for _, y in four) == [0, 0, 1, 1] and not {"text 0", "text 1"} & {t for t, _ in four}
    with pytest.raises(InputError, match="the pool has 1 usable example"):
        draw_examples(pool, 4, exclude_ids={"p0", "p1", "p2"})
    assert draw_examples(pool, 0) == []
