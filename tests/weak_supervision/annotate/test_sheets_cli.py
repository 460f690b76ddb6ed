"""`mhaudit labels export / import` (mhaudit sheets, Label Studio, Argilla) and `mhaudit annotate` from the CLI."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading

import httpx
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.label_store import LabelStore, read_labels
from tests.cli_checks import assert_one_sentence_failure

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "labels.sqlite"
    with LabelStore(path) as store:
        store.add(
            [
                {
                    "item_id": f"p{i}",
                    "task": "mh",
                    "labeler": name,
                    "kind": "human",
                    "value": v,
                    "tags": ["news"] if (name, i) == ("alice", 1) else [],
                    "note": "hm" if i == 2 else None,
                }
                for name, values in (("alice", (1, 0, 1)), ("bob", (1, 1, 1)))
                for i, v in enumerate(values, 1)
            ]
        )
        store.add(
            [{"item_id": "p1", "task": "si", "labeler": "smollm2", "kind": "llm", "value": None, "raw_answer": "maybe"}]
        )
    return path


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample.csv"
    pd.DataFrame(
        {
            "item_id": ["p1", "p2", "p3", "p4"],
            "task": "mh",
            "text": ["one", "two, with comma", "three", "four\nlines"],
            "stratum": [1, 0, 1, 0],
        }
    ).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_export_round_trips_through_read_labels(tmp_path, store_path, suffix):
    out = tmp_path / f"sheet{suffix}"
    result = invoke("labels", "export", "--labels", store_path, "--out", out, "--task", "mh", "--labeler", "alice")
    assert result.exit_code == 0, result.output
    assert "wrote 3 labels (1 labelers)" in result.stdout
    back = read_labels(out)
    with LabelStore(store_path) as store:
        expected = store.frame(task="mh", labeler="alice")
    pd.testing.assert_frame_equal(back.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)
    everything = tmp_path / f"all{suffix}"
    assert invoke("labels", "export", "--labels", store_path, "--out", everything).exit_code == 0
    assert len(read_labels(everything)) == 7  # the invalid LLM answer (value null) travels too


def test_export_with_no_match_names_the_labelers(tmp_path, store_path):
    result = invoke("labels", "export", "--labels", store_path, "--out", tmp_path / "x.csv", "--labeler", "alicia")
    assert_one_sentence_failure(result, "no labels match --labeler 'alicia'", "alice, bob, smollm2")
    assert not (tmp_path / "x.csv").exists()


def test_sheet_for_labelling_elsewhere_goes_out_and_back(tmp_path, store_path, sample):
    sheet = tmp_path / "dave.csv"
    result = invoke("labels", "export", "--labels", store_path, "--sample", sample, "--labeler", "dave", "--out", sheet)
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    assert list(frame.columns) == ["item_id", "task", "labeler", "kind", "value", "tags", "note", "text"]
    assert frame["text"].tolist() == ["one", "two, with comma", "three", "four\nlines"]
    assert "stratum" not in frame.columns and (frame["value"] == "").all()
    frame.loc[0, "value"], frame.loc[1, "value"], frame.loc[2, "value"] = "1", "0", "1.0"  # a spreadsheet's 1.0
    frame.loc[1, "tags"] = "news; hypothetical"
    frame.to_csv(sheet, index=False)
    result = invoke("labels", "import", sheet, "--labels", store_path)
    assert result.exit_code == 0, result.output
    assert "read 3 labels" in result.stdout and "wrote 3" in result.stdout
    assert "skipped 1 rows without a label" in result.stdout
    with LabelStore(store_path) as store:
        dave = store.frame(labeler="dave").set_index("item_id")
    assert dave["value"].to_dict() == {"p1": 1, "p2": 0, "p3": 1}
    assert dave["kind"].eq("human").all() and json.loads(dave.loc["p2", "tags"]) == ["news", "hypothetical"]
    # exported again with --sample, the sheet is prefilled with dave's labels
    again = tmp_path / "dave2.jsonl"
    assert (
        invoke(
            "labels", "export", "--labels", store_path, "--sample", sample, "--labeler", "dave", "--out", again
        ).exit_code
        == 0
    )
    assert pd.read_json(again, lines=True)["value"].tolist()[:3] == [1, 0, 1]


def test_import_refuses_a_label_outside_0_1_with_its_row(tmp_path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("item_id,task,labeler,value\np1,mh,alice,1\np2,mh,alice,2\n")
    labels = tmp_path / "labels.sqlite"
    result = invoke("labels", "import", sheet, "--labels", labels)
    assert_one_sentence_failure(result, "sheet.csv row 2: label value '2' is not 0, 1 or empty")  # 2nd data row
    assert not labels.exists()  # nothing written, not even an empty store


def test_import_bad_sheets(tmp_path, store_path):
    sheet = tmp_path / "s.csv"
    sheet.write_text("item_id,task,value\np1,mh,1\n")
    assert_one_sentence_failure(
        invoke("labels", "import", sheet, "--labels", store_path), "missing column 'labeler' (or pass --labeler)"
    )
    assert_one_sentence_failure(
        invoke("labels", "import", sheet, "--labels", store_path, "--labeler", "smollm2"),
        "labeler 'smollm2' already has llm labels",
    )
    assert_one_sentence_failure(
        invoke("labels", "import", sheet, "--labels", store_path, "--labeler", "x", "--format", "prodigy"),
        "unknown sheet format 'prodigy'",
    )
    twice = tmp_path / "twice.csv"
    twice.write_text("item_id,task,labeler,value\np1,mh,eve,1\np1,mh,eve,0\n")
    assert_one_sentence_failure(
        invoke("labels", "import", twice, "--labels", store_path), "item 'p1' has two labels from 'eve'"
    )
    assert_one_sentence_failure(
        invoke("labels", "import", tmp_path / "nope.csv", "--labels", store_path), "nope.csv: no such file"
    )


def test_import_keeps_existing_labels_unless_replace(tmp_path, store_path):
    sheet = tmp_path / "s.jsonl"
    sheet.write_text('{"item_id": "p2", "task": "mh", "labeler": "alice", "value": 1}\n')
    result = invoke("labels", "import", sheet, "--labels", store_path)
    assert result.exit_code == 0 and "kept 1 labels the store already had" in result.stdout
    with LabelStore(store_path) as store:
        assert store.frame(labeler="alice", item_id="p2")["value"].tolist() == [0]
    assert invoke("labels", "import", sheet, "--labels", store_path, "--replace").exit_code == 0
    with LabelStore(store_path) as store:
        assert store.frame(labeler="alice", item_id="p2")["value"].tolist() == [1]


def ls_choice(name: str, *choices: str) -> dict:
    return {
        "from_name": name,
        "to_name": "text",
        "type": "choices",
        "value": {"choices": list(choices)},
        "origin": "manual",
    }


LABEL_STUDIO = [
    {
        "id": 101,
        "data": {"item_id": "p1", "task": "mh", "text": "..."},
        "annotations": [
            {
                "id": 1,
                "completed_by": 1,
                "was_cancelled": False,
                "lead_time": 4.5,
                "created_at": "2025-01-02T10:00:00Z",
                "result": [
                    ls_choice("label", "Positive"),
                    ls_choice("tags", "news", "hypothetical"),
                    {"from_name": "note", "to_name": "text", "type": "textarea", "value": {"text": ["unsure"]}},
                ],
            },
            {
                "id": 2,
                "completed_by": {"id": 2, "email": "b@example.org"},
                "was_cancelled": False,
                "result": [ls_choice("label", "Negative")],
            },
            {"id": 3, "completed_by": 3, "was_cancelled": True, "result": [ls_choice("label", "Positive")]},
            {"id": 5, "completed_by": 3, "was_cancelled": False, "result": []},
        ],  # skipped: no label
        "predictions": [{"model_version": "llm", "result": [ls_choice("label", "Positive")]}],
    },
    {
        "id": 102,
        "data": {"item_id": "p2", "task": "mh", "text": "..."},
        "annotations": [{"id": 4, "completed_by": 1, "result": [ls_choice("label", "Negative")]}],
    },
]


def test_label_studio_json_export(tmp_path):
    export = tmp_path / "project-1-at-2025.json"
    export.write_text(json.dumps(LABEL_STUDIO))
    labels = tmp_path / "labels.sqlite"
    result = invoke("labels", "import", export, "--labels", labels, "--format", "label-studio")
    assert result.exit_code == 0, result.output
    assert "read 3 labels" in result.stdout and "skipped 1 rows" in result.stdout
    with LabelStore(labels) as store:
        frame = store.frame().set_index(["labeler", "item_id"])
    assert frame["value"].to_dict() == {
        ("label-studio-1", "p1"): 1,
        ("label-studio-1", "p2"): 0,
        ("label-studio-2", "p1"): 0,
    }
    first = frame.loc[("label-studio-1", "p1")]
    assert json.loads(first["tags"]) == ["news", "hypothetical"] and first["note"] == "unsure"
    assert first["latency_ms"] == 4500.0 and first["raw_answer"] == '["Positive"]' and first["kind"] == "human"
    # one annotator at a time under a readable name
    named = tmp_path / "named.sqlite"
    result = invoke(
        "labels", "import", export, "--labels", named, "--format", "label-studio", "--user", "1", "--labeler", "alice"
    )
    assert result.exit_code == 0, result.output
    with LabelStore(named) as store:
        assert store.frame()["labeler"].unique().tolist() == ["alice"] and len(store.frame()) == 2
    assert_one_sentence_failure(
        invoke("labels", "import", export, "--labels", named, "--format", "label-studio", "--labeler", "alice"),
        "labels from 2 annotators (1, 2)",
        "--user",
    )


def test_label_studio_emails_are_never_stored(tmp_path):
    """An annotator without a numeric user id (a `completed_by` object without `id`, or JSON-MIN's email) is not
    named by the email: the import asks for --labeler, and no email reaches the store."""
    tasks = json.loads(json.dumps(LABEL_STUDIO))
    tasks[0]["annotations"][1]["completed_by"] = {"email": "b@example.org", "first_name": "B"}
    export = tmp_path / "project.json"
    export.write_text(json.dumps(tasks))
    labels = tmp_path / "labels.sqlite"
    message = assert_one_sentence_failure(
        invoke("labels", "import", export, "--labels", labels, "--format", "label-studio"),
        "no numeric Label Studio user id",
        "--labeler",
    )
    assert "example.org" not in message and not labels.exists()
    result = invoke(
        "labels",
        "import",
        export,
        "--labels",
        labels,
        "--format",
        "label-studio",
        "--user",
        "b@example.org",
        "--labeler",
        "bea",
    )
    assert result.exit_code == 0, result.output
    assert "example.org" not in result.output
    result = invoke("labels", "import", export, "--labels", labels, "--format", "label-studio", "--user", "1")
    assert result.exit_code == 0, result.output
    with LabelStore(labels) as store:
        frame = store.frame()
    assert sorted(set(frame["labeler"])) == ["bea", "label-studio-1"]
    assert "example.org" not in labels.read_bytes().decode("latin-1")
    assert_one_sentence_failure(
        invoke(
            "labels", "import", export, "--labels", tmp_path / "x.sqlite", "--format", "label-studio", "--labeler", "x"
        ),
        "2 annotators (1 and 1 without a user id)",
    )
    minimal = [{"item_id": "p7", "task": "si", "label": "positive", "annotator": "c@example.org"}]
    export_min = tmp_path / "min.json"
    export_min.write_text(json.dumps(minimal))
    assert_one_sentence_failure(
        invoke("labels", "import", export_min, "--labels", labels, "--format", "label-studio"),
        "no numeric Label Studio user id",
    )
    assert (
        invoke(
            "labels", "import", export_min, "--labels", labels, "--format", "label-studio", "--labeler", "cleo"
        ).exit_code
        == 0
    )
    assert "example.org" not in labels.read_bytes().decode("latin-1")


def test_import_a_parquet_sheet_with_list_tags(tmp_path):
    sheet = tmp_path / "sheet.parquet"
    pd.DataFrame(
        {
            "item_id": ["p1", "p2", "NA"],
            "task": "mh",
            "labeler": "dave",
            "value": [1, 0, 1],
            "tags": [["news"], [], ["news", "third-person"]],
        }
    ).to_parquet(sheet)
    labels = tmp_path / "labels.sqlite"
    result = invoke("labels", "import", sheet, "--labels", labels)
    assert result.exit_code == 0, result.output
    assert "tags outside the app's list" not in result.output  # not "['news']"
    with LabelStore(labels) as store:
        frame = store.frame().set_index("item_id")
    assert json.loads(frame.loc["p1", "tags"]) == ["news"] and pd.isna(frame.loc["p2", "tags"])
    assert json.loads(frame.loc["NA", "tags"]) == ["news", "third-person"]  # an item called NA is an item


def test_label_studio_custom_choices_and_json_min(tmp_path):
    tasks = json.loads(
        json.dumps(LABEL_STUDIO).replace('"Positive"', '"Self-disclosure"').replace('"Negative"', '"Not a disclosure"')
    )
    export = tmp_path / "custom.json"
    export.write_text(json.dumps(tasks))
    labels = tmp_path / "labels.sqlite"
    assert_one_sentence_failure(
        invoke("labels", "import", export, "--labels", labels, "--format", "label-studio"),
        "label choice 'Self-disclosure' is neither positive",
        "--positive",
    )
    result = invoke(
        "labels",
        "import",
        export,
        "--labels",
        labels,
        "--format",
        "label-studio",
        "--positive",
        "Self-disclosure",
        "--negative",
        "Not a disclosure",
    )
    assert result.exit_code == 0, result.output
    minimal = [
        {
            "item_id": "p7",
            "task": "si",
            "text": "...",
            "id": 7,
            "label": "positive",
            "annotator": 4,
            "annotation_id": 9,
            "lead_time": 1.5,
            "tags": {"choices": ["sarcasm/humour", "news"]},
        },
        {
            "item_id": "p8",
            "task": "si",
            "text": "...",
            "id": 8,
            "label": "no",
            "annotator": 4,
            "annotation_id": 10,
            "tags": "hypothetical",
        },
    ]
    export_min = tmp_path / "min.json"
    export_min.write_text(json.dumps(minimal))
    assert invoke("labels", "import", export_min, "--labels", labels, "--format", "label-studio").exit_code == 0
    with LabelStore(labels) as store:
        si = store.frame(task="si").set_index("item_id")
    assert si["value"].to_dict() == {"p7": 1, "p8": 0} and si["labeler"].eq("label-studio-4").all()
    assert json.loads(si.loc["p7", "tags"]) == ["sarcasm/humour", "news"]
    assert json.loads(si.loc["p8", "tags"]) == ["hypothetical"]


ARGILLA_NESTED = [
    {
        "id": "p1",
        "fields": {"text": "..."},
        "metadata": {"task": "mh"},
        "responses": {
            "label": [
                {"value": "positive", "user_id": "u-a", "status": "submitted"},
                {"value": "negative", "user_id": "u-b", "status": "submitted"},
            ],
            "tags": [{"value": ["news"], "user_id": "u-a"}],
            "note": [{"value": "hm", "user_id": "u-b"}],
        },
        "suggestions": {"label": {"value": "positive", "score": 0.9, "agent": "llama3"}},
        "vectors": {},
        "_server_id": "5a0c",
    },
    {
        "id": "x-2",
        "fields": {"text": "...", "item_id": "p2"},
        "metadata": {"task": "mh"},
        "responses": {
            "label": [
                {"value": "negative", "user_id": "u-a", "status": "draft"},
                {"value": "yes", "user_id": "u-b", "status": "submitted"},
            ]
        },
        "suggestions": {},
        "vectors": {},
        "_server_id": "5a0d",
    },
]
ARGILLA_FLAT = [
    {
        "id": "p1",
        "text": "...",
        "task": "mh",
        "label.responses": ["positive", "negative"],
        "label.responses.users": ["u-a", "u-b"],
        "label.responses.status": ["submitted", "discarded"],
        "tags.responses": [["metaphorical use"]],
        "tags.responses.users": ["u-a"],
        "tags.responses.status": ["submitted"],
        "label.suggestion": "positive",
        "label.suggestion.score": 0.9,
        "label.suggestion.agent": "llama3",
    },
]


def test_argilla_exports_nested_and_flat(tmp_path):
    nested = tmp_path / "records.json"
    nested.write_text(json.dumps(ARGILLA_NESTED))
    labels = tmp_path / "labels.sqlite"
    result = invoke("labels", "import", nested, "--labels", labels, "--format", "argilla")
    assert result.exit_code == 0, result.output
    with LabelStore(labels) as store:
        frame = store.frame().set_index(["labeler", "item_id"])
    assert frame["value"].to_dict() == {("argilla-u-a", "p1"): 1, ("argilla-u-b", "p1"): 0, ("argilla-u-b", "p2"): 1}
    assert json.loads(frame.loc[("argilla-u-a", "p1"), "tags"]) == ["news"]
    assert frame.loc[("argilla-u-b", "p1"), "note"] == "hm"
    flat = tmp_path / "records.jsonl"
    flat.write_text("\n".join(json.dumps(r) for r in ARGILLA_FLAT))
    flat_labels = tmp_path / "flat.sqlite"
    result = invoke(
        "labels", "import", flat, "--labels", flat_labels, "--format", "argilla", "--user", "u-a", "--labeler", "alice"
    )
    assert result.exit_code == 0, result.output
    with LabelStore(flat_labels) as store:
        frame = store.frame()
    assert frame[["item_id", "labeler", "value"]].values.tolist() == [["p1", "alice", 1]]
    assert json.loads(frame["tags"][0]) == ["metaphorical use"]


# --- mhaudit annotate from the command line ------------------------------------------------------------
def test_annotate_bad_input(tmp_path, sample):
    labels = tmp_path / "labels.sqlite"
    pd.read_csv(sample).drop(columns="task").to_csv(tmp_path / "bad.csv", index=False)
    base = ("annotate", "--labels", labels, "--annotator", "alice", "--annotator", "bob", "--port", "0")
    assert_one_sentence_failure(invoke(*base, "--sample", tmp_path / "bad.csv"), "bad.csv: missing column 'task'")
    assert_one_sentence_failure(invoke(*base, "--sample", tmp_path / "none.parquet"), "none.parquet: no such file")
    assert_one_sentence_failure(
        invoke(*base, "--sample", sample, "--host", "0.0.0.0"), "refusing to serve on '0.0.0.0'", "--public"
    )
    assert_one_sentence_failure(invoke(*base, "--sample", sample, "--annotator", "alice"), "named twice")
    assert_one_sentence_failure(invoke(*base, "--sample", sample, "--annotator", "bad name"), "person name 'bad name'")
    assert not labels.exists()


def _lines(stream, sink: queue.Queue) -> None:
    for line in stream:
        sink.put(line)


def _as_a_background_job() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does to a job started with '&'


@pytest.mark.parametrize(
    "stop, start",
    [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGINT, _as_a_background_job)],
    ids=["ctrl-c", "sigterm", "sigint-to-a-background-job"],
)
def test_annotate_serves_prints_links_and_stops_on_ctrl_c(tmp_path, sample, stop, start):
    labels = tmp_path / "labels.sqlite"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "annotate",
            "--sample",
            str(sample),
            "--labels",
            str(labels),
            "--annotator",
            "alice",
            "--annotator",
            "bob",
            "--adjudicator",
            "carol",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=start,
    )
    stdout: queue.Queue = queue.Queue()
    stderr: queue.Queue = queue.Queue()
    pumps = [
        threading.Thread(target=_lines, args=(process.stdout, stdout), daemon=True),
        threading.Thread(target=_lines, args=(process.stderr, stderr), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    try:
        printed = []
        while not printed or "Ctrl-C" not in printed[-1]:
            printed.append(stdout.get(timeout=120))  # the event is the line; the bound only stops a hang
        links = {line.split()[0]: line.split()[-1] for line in printed if "/s/" in line}
        assert set(links) == {"alice", "bob", "carol"}
        assert printed[0].startswith("serving 4 items (task mh)")
        alice = links["alice"]
        token = alice.rstrip("/").rsplit("/", 1)[1]
        assert httpx.get(alice).headers["location"].endswith("/item/1")
        item = httpx.get(alice + "item/1").text
        item_id = item.split('data-item-id="')[1].split('"')[0]
        saved = httpx.post(alice + "api/label", json={"token": token, "item_id": item_id, "task": "mh", "value": 1})
        assert saved.json()["ok"]
        assert httpx.get(alice.replace(token, "nottherighttoken")).status_code == 403
        message = stderr.get(timeout=60)
        assert "unknown token (HTTP 403)" in message and token not in message
    finally:
        process.send_signal(stop)  # Ctrl-C, or SIGTERM from a service manager: both print the summary
        try:
            process.wait(timeout=60)  # generous: stopping takes a moment on a busy machine
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    for pump in pumps:  # the pipes end with the process: then every line it printed is in the queues
        pump.join(60)
    rest = "".join(stdout.get_nowait() for _ in range(stdout.qsize()))
    assert process.returncode == 0
    assert "stopped. labelled: alice 1/4, bob 0/4" in rest
    with LabelStore(labels) as store:
        assert store.frame()[["item_id", "labeler", "value"]].values.tolist() == [[item_id, "alice", 1]]
    # a non-loopback host is refused before anything is served
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "annotate",
            "--sample",
            str(sample),
            "--labels",
            str(labels),
            "--annotator",
            "alice",
            "--port",
            "0",
            "--host",
            "10.1.2.3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "not a loopback address" in again.stderr
    # nor is an adjudicator who is also an annotator (a subprocess: a server that started would never return)
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "annotate",
            "--sample",
            str(sample),
            "--labels",
            str(labels),
            "--annotator",
            "alice",
            "--annotator",
            "bob",
            "--adjudicator",
            "bob",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "'bob' is named as an annotator and as the adjudicator" in again.stderr
    assert again.stderr.count("\n") == 1 and again.stdout == ""
