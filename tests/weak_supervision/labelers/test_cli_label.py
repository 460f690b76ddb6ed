"""`mhaudit labels llm` and `mhaudit labels prompts` on the command line."""

import json

from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.label_store import LabelStore
from tests.weak_supervision.labelers.servers import FakeServer, chat_completion, free_port

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["labels", *map(str, args)])


def test_label_llm_limit_then_resume_with_report(llama_url, items, tmp_path):
    items_csv = tmp_path / "items.csv"
    items.iloc[:6].to_csv(items_csv, index=False)
    db, report = tmp_path / "labels.sqlite", tmp_path / "report.json"
    args = [
        "llm",
        "--items",
        items_csv,
        "--task",
        "mh",
        "--labels",
        db,
        "--backend",
        "openai",
        "--url",
        llama_url,
        "--concurrency",
        "2",
        "--no-progress",
        "--report-json",
        report,
    ]
    first = invoke(*args, "--limit", "2")
    assert first.exit_code == 0, first.output
    assert "labelling 2 of 6 items for task 'mh'" in first.output and "constrain grammar, 0-shot" in first.output
    second = invoke(*args)
    assert second.exit_code == 0, second.output
    data = json.loads(report.read_text())
    with LabelStore(db) as store:
        frame = store.frame()
    assert data["answered this run"] == 4 and data["already labelled (skipped)"] == 2 and data["items in input"] == 6
    assert data["invalid rate"] == 0.0 and len(frame) == 6 and set(frame["task"]) == {"mh"}
    assert data["prompt_hash"] == frame["prompt_hash"].iat[0] and data["interrupted"] is False
    assert data[f"labels stored for task 'mh' by '{data['labeler']}'"] == 6
    assert data["positive rate of stored valid labels (mh)"] == round(frame["value"].astype(float).mean(), 4)
    assert "answered this run" in second.output and "latency p99 ms" in second.output


def test_prompt_without_placeholder_and_missing_pool_exit_2(tmp_path, items):
    items_csv = tmp_path / "items.csv"
    items.to_csv(items_csv, index=False)
    bad = tmp_path / "bad.toml"
    bad.write_text('task = "si"\nversion = "1"\nsystem = "Answer 1 or 0."\nuser = "Post: {post}"\n')
    base = ["llm", "--items", items_csv, "--labels", tmp_path / "l.sqlite", "--url", "http://127.0.0.1:9"]
    result = invoke(*base, "--task", "si", "--prompt", bad)
    assert result.exit_code == 2 and f"{bad}: the user template has no {{text}} placeholder" in result.output
    result = invoke(*base, "--task", "stress")
    assert result.exit_code == 2 and "3-shot prompting needs --pool" in result.output and "--shots 0" in result.output
    result = invoke(*base, "--task", "si", "--backend", "claude")
    assert result.exit_code == 2 and "--backend 'claude' must be one of openai, ollama" in result.output
    missing = invoke("llm", "--items", tmp_path / "absent.parquet", "--task", "si", "--labels", tmp_path / "l.sqlite")
    assert missing.exit_code == 2 and "absent.parquet: no such file" in missing.output
    assert not (tmp_path / "l.sqlite").exists() or LabelStore(tmp_path / "l.sqlite").frame().empty


def test_unreachable_server_creates_no_store_and_writes_a_stopped_report(tmp_path, items):
    items_csv = tmp_path / "items.csv"
    items.to_csv(items_csv, index=False)
    db, report = tmp_path / "labels.sqlite", tmp_path / "report.json"
    report.write_text('{"stale": true}')  # a previous run's report must not survive a failed run
    url = f"http://127.0.0.1:{free_port()}"
    result = invoke(
        "llm",
        "--items",
        items_csv,
        "--task",
        "si",
        "--labels",
        db,
        "--backend",
        "openai",
        "--url",
        url,
        "--retries",
        "0",
        "--no-progress",
        "--report-json",
        report,
    )
    assert result.exit_code == 2 and f"cannot reach the openai server at {url}" in result.output
    assert not db.exists() and not list(tmp_path.glob("labels.sqlite*"))
    data = json.loads(report.read_text())
    assert data["stopped"] is True and data["stop_reason"] == "ServerUnreachable" and "stale" not in data
    assert data["items in input"] == len(items) and data["answered this run"] == 0
    assert data["invalid rate"] is None  # undefined is null, not NaN (strict JSON)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.csv", "report.json"]  # no temporary files left


def test_fatal_error_mid_run_writes_the_partial_report(tmp_path, items):
    served = {"n": 0}

    def handle(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "fake-model", "owned_by": "me"}]}
        served["n"] += 1
        if served["n"] > 3:  # e.g. the model was unloaded: every item would get the same answer
            return 404, {"error": {"message": "model not found"}}
        return 200, chat_completion("1")

    items_csv = tmp_path / "items.csv"
    items.to_csv(items_csv, index=False)
    db, report = tmp_path / "labels.sqlite", tmp_path / "report.json"
    with FakeServer(handle) as server:
        result = invoke(
            "llm",
            "--items",
            items_csv,
            "--task",
            "si",
            "--labels",
            db,
            "--backend",
            "openai",
            "--url",
            server.url,
            "--concurrency",
            "1",
            "--no-progress",
            "--report-json",
            report,
        )
    assert result.exit_code == 2 and "answered HTTP 404" in result.output
    data = json.loads(report.read_text())
    assert data["stopped"] is True and data["stop_reason"] == "ServerRejected (HTTP 404)"
    assert data["answered this run"] == 3 and data["labels stored for task 'si' by 'fake-model'"] == 3
    assert "model not found" not in report.read_text()
    with LabelStore(db) as store:
        assert len(store.frame()) == 3
    assert sorted(p.name for p in tmp_path.iterdir() if "sqlite" not in p.name) == ["items.csv", "report.json"]


def test_label_prompts_lists_the_builtins():
    result = invoke("prompts")
    assert result.exit_code == 0
    for name in ("si", "mh", "stress"):
        assert name in result.output
    assert "Labelling prompts" in result.output


def test_exit_codes_say_whether_the_requests_were_answered(tmp_path, items):
    """Every request failed (a non-JSON body, no `choices`, HTTP 500): exit 2 with one sentence; some failed:
    exit 3 (docs/cli.md, exit codes) with the counts; the answered ones are stored either way."""
    answers = iter([b"not json", {"id": "x"}, (500, {"error": {"message": "boom"}})])

    def broken(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "fake-model"}]}
        answer = next(answers, (500, {"error": {"message": "boom"}}))
        return answer if isinstance(answer, tuple) else (200, answer)

    few = tmp_path / "few.csv"
    items.iloc[:3].to_csv(few, index=False)
    with FakeServer(broken) as server:
        result = invoke(
            "llm",
            "--items",
            few,
            "--task",
            "si",
            "--labels",
            tmp_path / "a.sqlite",
            "--backend",
            "openai",
            "--url",
            server.url,
            "--concurrency",
            "1",
            "--retries",
            "0",
            "--no-progress",
        )
    assert result.exit_code == 2, result.output
    assert "no item got an answer: all 3 request(s) failed" in result.stderr and "Traceback" not in result.output
    served = {"n": 0}

    def flaky(method, path, body):
        if path == "/v1/models":
            return 200, {"data": [{"id": "fake-model"}]}
        served["n"] += 1
        return (200, chat_completion("1")) if served["n"] <= 2 else (500, {"error": {"message": "busy"}})

    with FakeServer(flaky) as server:
        result = invoke(
            "llm",
            "--items",
            few,
            "--task",
            "si",
            "--labels",
            tmp_path / "b.sqlite",
            "--backend",
            "openai",
            "--url",
            server.url,
            "--concurrency",
            "1",
            "--retries",
            "0",
            "--no-progress",
        )
    assert result.exit_code == 3, result.output
    assert "1 of 3 request(s) failed (exit code 3)" in result.stderr
    with LabelStore(tmp_path / "b.sqlite") as store:
        assert len(store.frame()) == 2


def test_a_model_list_that_is_not_json_is_reported_as_such(tmp_path, items):
    """`/v1/models` answering with HTML (a proxy's error page): the message says what came back, not that the
    server lists no models; and the dead-server report names no empty labeler."""
    few = tmp_path / "few.csv"
    items.iloc[:2].to_csv(few, index=False)
    report = tmp_path / "report.json"
    with FakeServer(lambda method, path, body: (200, b"<html>proxy error</html>")) as server:
        result = invoke(
            "llm",
            "--items",
            few,
            "--task",
            "si",
            "--labels",
            tmp_path / "l.sqlite",
            "--backend",
            "openai",
            "--url",
            server.url,
            "--retries",
            "0",
            "--no-progress",
            "--report-json",
            report,
        )
    assert result.exit_code == 2, result.output
    assert "gave no model at /v1/models" in result.stderr and "not JSON" in result.stderr
    assert "lists no models" not in result.stderr and "proxy error" not in result.stderr  # the body is not echoed
    data = json.loads(report.read_text())
    assert not any(key.endswith("by ''") for key in data), list(data)
