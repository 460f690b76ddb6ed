"""`mhaudit label llm` and `mhaudit label prompts` on the command line."""

import json

from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.labels import LabelStore

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["label", *map(str, args)])


def test_label_llm_limit_then_resume_with_report(llama_url, items, tmp_path):
    items_csv = tmp_path / "items.csv"
    items.iloc[:6].to_csv(items_csv, index=False)
    db, report = tmp_path / "labels.sqlite", tmp_path / "report.json"
    args = ["llm", "--items", items_csv, "--task", "mh", "--labels", db, "--backend", "openai", "--url", llama_url,
            "--concurrency", "2", "--no-progress", "--report-json", report]
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


def test_label_prompts_lists_the_builtins():
    result = invoke("prompts")
    assert result.exit_code == 0
    for name in ("si", "mh", "stress"):
        assert name in result.output
    assert "Labelling prompts" in result.output
