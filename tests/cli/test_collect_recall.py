"""`mhaudit collect recall` on the real Bluesky depression set (read in place through a folder that holds only
it), its bad inputs, and the recall line of `collect bluesky` (a local relay on 127.0.0.1) and of `collect summary`
for the filters a store's runs recorded."""

from __future__ import annotations

from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir
from tests.weak_supervision.collect.stream_server import StreamServer, jetstream_frames
from tests.weak_supervision.collect.test_collector import stream

runner = CliRunner()


def test_collect_recall_prints_a_table_per_set_found(tmp_path):
    (tmp_path / "bluesky_depression").symlink_to(data_dir("bluesky_depression"))
    result = runner.invoke(
        app, ["collect", "recall", "--data", str(tmp_path), "--lexicon", "mh", "--lexicon", "wide"], terminal_width=100
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "bluesky_depression: 4,568 posts, 514 depressive by two clinical psychologists" in out
    assert "0.265 (0.228–0.304)  0.167 (0.156–0.178)  0.178 (0.153–0.207)" in out  # mh, all posts
    assert "bluesky_depression (held-out half): 2,275 posts, 259 depressive" in out
    assert "0.911 (0.870–0.940)  0.617 (0.597–0.637)  0.168 (0.149–0.189)" in out  # wide, held-out half
    assert "not found under" in out and "dreaddit" in out and "kaggle_mh suicidal" in out
    # wide was written looking at the tuning half: said under the two tables with those posts, not the held-out one
    tuned = "note: wide was tuned on posts of this set, so the recall here is optimistic; the held-out half judges it"
    assert " ".join(out.split()).count(tuned) == 2


def test_collect_recall_bad_inputs(tmp_path):
    assert_one_sentence_failure(
        runner.invoke(app, ["collect", "recall", "--data", str(tmp_path / "nope")]), "no such folder of labelled sets"
    )
    assert_one_sentence_failure(
        runner.invoke(app, ["collect", "recall", "--data", str(tmp_path)]),
        "none of the labelled sets is in this folder",
    )
    assert_one_sentence_failure(
        runner.invoke(app, ["collect", "recall", "--data", str(tmp_path), "--lexicon", "si+"]), "names no lexicon"
    )


def test_collect_summary_states_the_recall_of_the_lexicons_used(tmp_path):
    store = tmp_path / "posts.sqlite"
    with PostStore(store) as posts:
        posts.start_run("r1", lexicons={"si": Lexicon.load("si").sha256, "mh": Lexicon.load("mh").sha256})
        posts.start_run("r2", lexicons={"mine": "0" * 64})
    result = runner.invoke(app, ["collect", "summary", "--db", str(store)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())  # the console wraps long lines
    assert (
        "recall: the collection's filter (si+mh) keeps an estimated 0.613 (95% CI 0.570–0.654) of the depressive "
        "posts of the Bluesky depression set"
    ) in text
    assert "recall: the collection's filter (mine) has no measured recall" in text


def test_collect_bluesky_states_the_recall_of_its_filter(tmp_path):
    events, _ = stream(5)
    with StreamServer(jetstream_frames(events)) as server:
        result = runner.invoke(
            app,
            [
                "collect",
                "bluesky",
                "--db",
                str(tmp_path / "posts.sqlite"),
                "--lexicon",
                "wide",
                "--relay",
                server.url,
                "--max-posts",
                "5",
                "--duration",
                "20s",
            ],
        )
    assert result.exit_code == 0, result.output
    assert (
        "recall: the collection's filter (wide) keeps an estimated 0.914 (95% CI 0.887–0.936) of the depressive "
        "posts of the Bluesky depression set (0.911 on the half it was not tuned on;"
    ) in " ".join(result.stderr.split())


def test_every_lexicon_flag_lists_every_built_in_lexicon():
    from mhaudit.weak_supervision.lexicons import BUILTIN

    for command in (["labels", "lexicon"], ["collect", "bluesky"], ["collect", "recall"]):
        shown = " ".join(runner.invoke(app, [*command, "--help"], terminal_width=200).stdout.split())
        assert all(f"{name}," in shown or f"{name})" in shown or f"'{name}'" in shown for name in BUILTIN), command
