"""The CLI's progress renderers: timestamped lines in a log (steps thinned out), a live bar on a terminal."""

import io
import re

from rich.console import Console

from mhaudit.cli.progress import LiveBar, PlainLines, for_console
from mhaudit.core.progress import Progress

STAMP = r"\[\d\d:\d\d:\d\d\] "


def test_plain_lines_are_timestamped_and_show_steps_at_each_tenth():
    stream = io.StringIO()
    progress = Progress(PlainLines(stream, every_s=1e9))
    with progress.stage("train transformer seed 42 epoch 1/5", total=100):
        for step in range(100):
            progress.advance(status=f"loss {1 - step / 100:.2f}" if step % 10 == 9 else None)
        progress.note("train loss 0.01")
    lines = stream.getvalue().splitlines()
    assert all(re.match(STAMP, line) for line in lines)
    text = [line[11:] for line in lines]
    assert text[0] == "start train transformer seed 42 epoch 1/5"
    assert text[1] == "      train transformer seed 42 epoch 1/5: 10/100 (10%) · loss 0.91"
    assert text[10] == "      train transformer seed 42 epoch 1/5: 100/100 (100%) · loss 0.01"
    assert len(text) == 1 + 10 + 1 + 1 and text[11] == "      train loss 0.01"
    assert re.fullmatch(r"done  train transformer seed 42 epoch 1/5 \(\d+\.\d s\)", text[12])


def test_plain_lines_without_a_total_show_steps_every_so_many_seconds():
    stream, now = io.StringIO(), [0.0]
    progress = Progress(PlainLines(stream, every_s=60, clock=lambda: now[0]))
    with progress.stage("collect posts (si) from wss://relay.example"):
        for second in range(0, 300, 5):  # a step every 5 s for 5 minutes
            now[0] = second
            progress.advance(3, status=f"{second} s")
    steps = [line[11:] for line in stream.getvalue().splitlines() if "·" in line]
    assert steps == [
        f"      collect posts (si) from wss://relay.example: {n:,} · {s} s"
        for n, s in ((39, 60), (75, 120), (111, 180), (147, 240))
    ]


def test_without_steps_only_stages_and_notes_are_lines():
    stream = io.StringIO()
    progress = Progress(PlainLines(stream, steps=False))
    with progress.stage("label si with llama3", total=3):
        progress.note("labelling 3 of 3 items")
        for _ in range(3):
            progress.advance()
    assert [line[11:16] for line in stream.getvalue().splitlines()] == ["start", "     ", "done "]


def test_for_console_chooses_the_bar_on_a_terminal_only():
    assert isinstance(for_console(Console(file=io.StringIO(), force_terminal=True)), LiveBar)
    assert isinstance(for_console(Console(file=io.StringIO(), force_terminal=True), steps=False), PlainLines)
    assert isinstance(for_console(Console(file=io.StringIO())), PlainLines)


def test_the_live_bar_keeps_finished_stages_and_notes_and_goes_away():
    stream = io.StringIO()
    bar = LiveBar(Console(file=stream, force_terminal=True, width=100))
    progress = Progress(bar)
    with progress.stage("outer", total=2):
        with progress.stage("inner [x]"):
            progress.advance(7, status="status [y]")
        progress.note("a note")
        progress.advance(2)
    assert not bar.tasks and not bar.bars.live.is_started
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    assert "done inner [x] (" in shown and "a note" in shown and "done outer (" in shown
