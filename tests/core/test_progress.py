"""Progress: stages are timed and counted, steps go to the innermost stage, and each event reaches `announce`."""

import pytest

from mhaudit.core.progress import Event, Progress


def recorded() -> tuple[Progress, list[Event]]:
    events: list[Event] = []
    return Progress(events.append), events


def test_a_stage_with_a_total_counts_its_steps_and_times_itself():
    progress, events = recorded()
    with progress.stage("train tfidf-lr seed 0", total=4):
        progress.advance()
        progress.advance(2, status="loss 0.41")
        progress.advance()
    assert [(e.kind, e.name, e.done, e.total, e.status) for e in events[:-1]] == [
        ("start", "train tfidf-lr seed 0", 0, 4, None),
        ("advance", "train tfidf-lr seed 0", 1, 4, None),
        ("advance", "train tfidf-lr seed 0", 3, 4, "loss 0.41"),
        ("advance", "train tfidf-lr seed 0", 4, 4, None),
    ]
    done = events[-1]
    assert (done.kind, done.done, done.total) == ("done", 4, 4) and done.seconds >= 0
    assert progress.seconds == {"train tfidf-lr seed 0": done.seconds}


def test_steps_go_to_the_innermost_stage_and_leaving_a_stage_ends_what_opened_inside_it():
    progress, events = recorded()
    with progress.stage("outer", total=2):
        with progress.stage("inner"):
            progress.advance(5)
        progress.advance()
        progress.step("a step")  # opened inside "outer", never closed: "outer" ends it first
    assert [(e.kind, e.name, e.done) for e in events] == [
        ("start", "outer", 0),
        ("start", "inner", 0),
        ("advance", "inner", 5),
        ("done", "inner", 5),
        ("advance", "outer", 1),
        ("start", "a step", 0),
        ("done", "a step", 0),
        ("done", "outer", 1),
    ]
    assert set(progress.seconds) == {"outer", "inner", "a step"}


def test_step_ends_the_previous_step_and_close_ends_the_last():
    progress, events = recorded()
    progress.step("one", total=1)
    progress.advance()
    progress.step("two")
    progress.close()
    progress.close()  # nothing open: nothing happens
    assert [(e.kind, e.name) for e in events] == [
        ("start", "one"),
        ("advance", "one"),
        ("done", "one"),
        ("start", "two"),
        ("done", "two"),
    ]


def test_a_repeated_stage_name_sums_its_seconds_and_a_note_is_not_timed():
    progress, events = recorded()
    for _ in range(2):
        with progress.stage("fold"):
            progress.note("trained in 0.1 s")
    assert list(progress.seconds) == ["fold"]
    assert progress.seconds["fold"] == pytest.approx(sum(e.seconds for e in events if e.kind == "done"))
    assert [e for e in events if e.kind == "note"] == [Event("note", "trained in 0.1 s")] * 2


def test_a_silent_progress_still_records_and_misuse_is_refused():
    progress = Progress()
    with progress.stage("s", total=0):
        progress.advance()
    assert list(progress.seconds) == ["s"]
    with pytest.raises(RuntimeError, match="outside a stage"):
        progress.advance()
    with pytest.raises(ValueError, match="total"), progress.stage("bad", total=-1):
        pass
