"""`mhaudit annotate` as a real server process on 127.0.0.1, and HTTP annotators that label through it the way
the page's script does (load the item, post the answer, follow the "next" the server returns).

The sample is SYNTHETIC: item texts are generated, and each annotator's answers are drawn from a seeded
"truth" flipped with a per-annotator error rate, so that the agreement report has non-trivial kappas.
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from mhaudit.tables.label_store import LabelStore

SRC = Path(__file__).resolve().parents[3] / "src"
WEAK = "weak-llm"  # the weak labeler whose labels are in the store before the study starts
ERROR_RATE = {"alice": 0.10, "bob": 0.15, "dan": 0.20, "erin": 0.10}
# Waits are for events (the "Ctrl-C" line, the process's exit); these bounds only stop a hang, and are generous
# because a busy machine may take many seconds to start or stop a Python process (docs/architecture.md).
START_WITHIN_S = 120
STOP_WITHIN_S = 60
TRANSPORT_ERRORS = (httpx.TransportError,)


def write_study(folder: Path, n_items: int, seed: int) -> tuple[Path, Path, dict[str, dict[str, int]]]:
    """A SYNTHETIC sample of `n_items`, a label store holding the weak labels, and every annotator's answers."""
    rng = np.random.default_rng(seed)
    ids = [f"syn{i:04d}" for i in range(n_items)]
    truth = rng.random(n_items) < 0.3
    sample = folder / "sample.parquet"
    pd.DataFrame(
        {
            "item_id": ids,
            "task": "mh",
            "text": [f"SYNTHETIC post {i}: a made-up sentence for the load test" for i in ids],
        }
    ).to_parquet(sample)
    labels = folder / "labels.sqlite"
    weak = truth ^ (rng.random(n_items) < 0.2)
    with LabelStore(labels) as store:
        store.add(
            [
                {"item_id": i, "task": "mh", "labeler": WEAK, "kind": "llm", "value": int(v)}
                for i, v in zip(ids, weak, strict=True)
            ]
        )
    answers = {
        name: dict(zip(ids, (truth ^ (rng.random(n_items) < rate)).astype(int).tolist(), strict=True))
        for name, rate in ERROR_RATE.items()
    }
    return sample, labels, answers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """One `mhaudit annotate` process; `start()` again after `kill()` serves the same store on the same port."""

    def __init__(self, sample: Path, labels: Path, annotators: list[str], adjudicator: str | None = None):
        self.args = [
            sys.executable,
            "-m",
            "mhaudit",
            "annotate",
            "--sample",
            str(sample),
            "--labels",
            str(labels),
            *[a for name in annotators for a in ("--annotator", name)],
            *(["--adjudicator", adjudicator] if adjudicator else []),
            "--port",
            str(free_port()),
        ]
        self.env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.links: dict[str, str] = {}
        self.stderr: list[str] = []
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.pumps: list[threading.Thread] = []
        self.stdout: queue.Queue = queue.Queue()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.args[-1]}"

    def start(self) -> Served:
        self.process = subprocess.Popen(
            self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )
        self.stdout = lines = queue.Queue()  # what it prints after the links stays here for the test
        self.pumps = [
            threading.Thread(target=_pump, args=(self.process.stdout, lines.put), daemon=True),
            threading.Thread(target=_pump, args=(self.process.stderr, self.stderr.append), daemon=True),
        ]
        for pump in self.pumps:
            pump.start()
        while True:
            line = lines.get(timeout=START_WITHIN_S)
            if "/s/" in line:  # "  alice (annotator): http://127.0.0.1:PORT/s/TOKEN/"
                self.links[line.split()[0]] = line.split()[-1]
            if "Ctrl-C" in line:
                break
        self.starts += 1
        return self

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(STOP_WITHIN_S)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_WITHIN_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_WITHIN_S)
        for pump in self.pumps:  # everything the process wrote is in self.stderr before a test reads it
            pump.join(STOP_WITHIN_S)


def _pump(stream, sink) -> None:
    for line in stream:
        sink(line)


def token_of(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[1]


def attribute(html: str, name: str) -> str:
    return html.split(f'{name}="', 1)[1].split('"', 1)[0]


@dataclass
class Annotator:
    """One person labelling every item in the server's order over HTTP, with small random pauses."""

    name: str
    link: str
    answers: dict[str, int]
    seed: int
    acked: dict[str, int] = field(default_factory=dict)  # item -> value the server acknowledged (2xx)
    order: list[str] = field(default_factory=list)  # the acknowledged items, in order
    in_flight: str | None = None  # posted, no answer yet (the server died meanwhile)
    resumes: list[tuple[int, str, str | None]] = field(default_factory=list)  # (acked so far, resumed at, in flight)
    asked_again: list[str] = field(default_factory=list)  # acknowledged items the server showed again
    errors: list[str] = field(default_factory=list)

    def run(self, deadline: float) -> None:
        rng = np.random.default_rng(self.seed)
        token = token_of(self.link)
        with httpx.Client(timeout=60) as client:  # a slow answer on a busy machine is not an outage
            url = self._resume(client, deadline, first=True)
            while url and not url.endswith("/done") and time.monotonic() < deadline:
                try:
                    page = client.get(url)
                    if page.status_code != 200:
                        self.errors.append(f"GET item: HTTP {page.status_code}")
                        return
                    item_id = attribute(page.text, "data-item-id")
                    if item_id in self.acked:
                        self.asked_again.append(item_id)
                    time.sleep(rng.uniform(0, 0.004))  # reading the post
                    self.in_flight = item_id
                    reply = client.post(
                        self.link + "api/label",
                        json={
                            "token": token,
                            "item_id": item_id,
                            "task": "mh",
                            "value": self.answers[item_id],
                            "elapsed_ms": 1000,
                        },
                    )
                except TRANSPORT_ERRORS:
                    url = self._resume(client, deadline)
                    continue
                if reply.status_code != 200:
                    self.errors.append(f"POST label: HTTP {reply.status_code} {reply.text[:200]}")
                    return
                self.acked[item_id] = self.answers[item_id]
                self.order.append(item_id)
                self.in_flight = None
                url = self.link.split("/s/")[0] + reply.json()["next"]

    def _resume(self, client: httpx.Client, deadline: float, *, first: bool = False) -> str | None:
        """Open the personal link (as a person reloading the page does) until the server answers: where it
        sends us is our next item."""
        while time.monotonic() < deadline:
            try:
                reply = client.get(self.link)
            except TRANSPORT_ERRORS:
                time.sleep(0.05)
                continue
            location = reply.headers.get("location", "")
            if not first:
                self.resumes.append((len(self.order), location.rsplit("/", 1)[-1], self.in_flight))
            self.in_flight = None
            return self.link.split("/s/")[0] + location
        self.errors.append("the server did not come back")
        return None


def run_all(annotators: list[Annotator], seconds: float) -> list[threading.Thread]:
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=a.run, args=(deadline,), name=a.name, daemon=True) for a in annotators]
    for thread in threads:
        thread.start()
    return threads


def human_rows(labels: Path) -> pd.DataFrame:
    with LabelStore(labels) as store:
        return store.frame(kind="human")
