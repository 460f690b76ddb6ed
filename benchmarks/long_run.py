"""Long runs (issue 32.5): memory, store growth, file handles and threads of `audit monitor --follow` and
`collect bluesky` over long SYNTHETIC streams (not a test).

    python benchmarks/long_run.py [--part monitor|collect|both] [--quick] [--work DIR] [--json FILE]
        monitor: [--windows 2000] [--per-window 20] [--initial-windows 200] [--write-rate 20] [--n-boot 40]
                 [--steady-rounds 10] [--window 1min|1h] [--history 0]
        collect: [--events 1000000] [--match-share 0.05] [--templates 20000]

Both commands run as their own process (`python -m mhaudit ...`), sampled from outside every --sample-s seconds
through /proc/<pid>: RSS (VmRSS), the kernel's peak RSS (VmHWM), open file descriptors (/proc/<pid>/fd) and
threads (/proc/<pid>/task); the store is read beside them through a read-only SQLite connection (posts, the
collector's cursor, page_count x page_size = the store's size including committed WAL pages).

monitor: a binary tfidf-lr trained on the SYNTHETIC corpus's tweets (as tests/audits/test_monitor.py) and its
reference predictions; a SYNTHETIC stream (mhaudit.synthetic.simulate_stream) of --windows windows of 1 minute
(or --window 1h; synthetic time, createdAt spread evenly) with --per-window posts each. The store starts with
--initial-windows windows; a writer thread in this process appends the rest, one window per commit, at
--write-rate windows per second, while `audit monitor --window 1min --follow 0.001` runs round after round (each
scores the new posts and re-analyses every window). Once the writer is done the monitor runs --steady-rounds more
rounds on the unchanged store (the leak check: the same work again and again), then gets SIGINT (Ctrl-C, how
--follow is stopped). Reported: the peak RSS of each round against the windows in the store (least squares,
MiB per 1,000 windows: the cost of holding more windows, not a leak) and against the round number in the steady
phase (MiB per round: must be ~0), fds and threads after the first round and at the end. --history N passes
`--history` of N windows: each round then analyses the last N windows only and reads them plus at most 2 days
(the SQL bound's slack on the createdAt text, so use --window 1h: with 1-minute windows 2 days are 2,880), and
the RSS slope is also fitted over the growing rounds once the store holds more than that (must be ~0).

collect: a relay process on 127.0.0.1 serves --events SYNTHETIC Jetstream /subscribe events (the shapes of
benchmarks/collect_speed.py: posts with mentions, links, emoji, a quarter not English, a third replies, 10%
deletes, 3% identity/account events, 0.1% malformed frames), built from --templates pre-generated frames with
a fresh time_us, rkey and createdAt each, as fast as the collector takes them; --match-share of the English posts
carry an SI or MH term. `collect bluesky --lexicon si --lexicon mh` stores them into a fresh SQLite store and
gets SIGTERM once its saved cursor is the last event's. Reported: events/s, RSS against events processed (least
squares after the first 10%, MiB per 100,000 events), the store's size against its posts (linear fit, R^2,
bytes per post), fds and threads once the first events are in and at the end.

--quick: a smoke run of well under a minute (monitor 60 windows of 10 posts, 2 steady rounds; 100,000 events).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # benchmarks.collect_speed's word lists
os.environ.setdefault("MHAUDIT_SECRET", "long-run-benchmark-secret")  # never touch ~/.config

T0 = 1_747_000_000_000_000  # the relay's first time_us
STEP_US = 1000  # between consecutive events: 1,000,000 events are 1,000 s of SYNTHETIC stream time
CLASSES = ["other", "depression"]


# ------------------------------------------------------------------------------ sampling from outside
def proc_stats(pid: int) -> dict | None:
    """RSS, peak RSS (MiB), open fds, threads and child processes of a live process, from /proc; None once gone."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        threads = len(os.listdir(f"/proc/{pid}/task"))
        children = sum(len(Path(f"/proc/{pid}/task/{t}/children").read_text().split())
                       for t in os.listdir(f"/proc/{pid}/task"))
    except (OSError, ValueError):
        return None
    kib = {key: int(status[key].split()[0]) for key in ("VmRSS", "VmHWM") if key in status}
    if "VmRSS" not in kib:  # a zombie
        return None
    return {"rss_mib": kib["VmRSS"] / 1024, "hwm_mib": kib.get("VmHWM", 0) / 1024, "fds": fds, "threads": threads,
            "children": children}


def store_stats(path: Path) -> dict:
    """Posts, the saved Jetstream cursor and the logical size of an SQLite post store, read-only (zeros before
    the store exists)."""
    if not path.exists():
        return {"posts": 0, "cursor": None, "store_bytes": 0}
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
            posts = conn.execute("SELECT count(*) FROM posts").fetchone()[0]
            row = conn.execute("SELECT cursor FROM cursor WHERE stream = 'jetstream'").fetchone()
            pages, size = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "page_size"))
        conn.close()
    except sqlite3.Error:  # not yet created by the command
        return {"posts": 0, "cursor": None, "store_bytes": 0}
    return {"posts": posts, "cursor": row[0] if row else None, "store_bytes": pages * size}


@dataclass
class Sampler:
    """Samples a process and its store every `every_s` seconds in a thread, with `extra()`'s progress fields."""

    pid: int
    store: Path
    every_s: float
    extra: object = None
    rows: list = field(default_factory=list)

    def __post_init__(self):
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.started = time.perf_counter()

    def sample(self) -> dict | None:
        proc = proc_stats(self.pid)
        if proc is None:
            return None
        row = {"t": time.perf_counter() - self.started, **proc, **store_stats(self.store),
               **(self.extra() if self.extra else {})}
        self.rows.append(row)
        return row

    def _run(self):
        while not self._done.wait(self.every_s):
            self.sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


def fit(x, y) -> dict:
    """Least squares y = slope x + intercept, with R^2 (NaN slope with fewer than 3 points or no spread in x)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3 or np.ptp(x) == 0:
        return {"slope": float("nan"), "intercept": float("nan"), "r2": float("nan"), "n": int(x.size)}
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    total = ((y - y.mean()) ** 2).sum()
    return {"slope": float(slope), "intercept": float(intercept),
            "r2": float(1 - (resid ** 2).sum() / total) if total > 0 else 1.0, "n": int(x.size)}


def fresh(store: Path) -> Path:
    """The store's path, with any store a previous run left there (and its WAL files) removed."""
    for path in store.parent.glob(store.name + "*"):
        path.unlink()
    return store


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mhaudit", *args]


def child_env() -> dict:
    # the command imports this checkout's mhaudit; unbuffered output so each round's line is seen as it happens
    path = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", COLUMNS="250")


# ---------------------------------------------------------------------------------------- monitor
def monitor_setup(work: Path):
    """SYNTHETIC: the model saved to work/model, its reference predictions, the texts the stream is drawn from."""
    import mhaudit as mh
    from benchmarks.synthetic_monitor import tweet_model

    model, texts = tweet_model(work)
    mh.save_model(model, work / "model")
    return texts


def write_windows(store: Path, windows: list[list[dict]], rate: float, done: threading.Event) -> None:
    """The writer: one window of posts per commit, `rate` windows per second, as a collector appends."""
    from mhaudit.weak_supervision.collect.store import PostStore

    with PostStore(store) as posts:
        start = time.perf_counter()
        for i, window in enumerate(windows):
            time.sleep(max(0.0, start + i / rate - time.perf_counter()))
            posts.commit_batch(window, cursor=i + 1)
    done.set()


def run_monitor(args, work: Path) -> dict:
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
    from mhaudit.weak_supervision.collect.store import PostStore

    texts = monitor_setup(work)
    most = max(args.full_posts, args.per_window)
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(
        n_windows=args.windows, per_window=most, window=args.window, seed=0))
    windows = [posts[i:i + (most if args.full_every and w % args.full_every == 0 else args.per_window)]
               for w, i in enumerate(range(0, len(posts), most))]
    store = fresh(work / "monitor.sqlite")
    with PostStore(store) as first:
        for window in windows[:args.initial_windows]:
            first.commit_batch(window, cursor=0)
    log = work / "monitor.log"
    cmd = command("audit", "monitor", "--store", str(store), "--model", str(work / "model"), "--reference",
                  str(work / "reference.parquet"), "--window", args.window, "--positive", "depression", "--n-boot",
                  str(args.n_boot), "--follow", "0.001", "--out", str(work / "monitor-report"),
                  *(("--history", f"{args.history}{args.window[1:]}") if args.history else ()))
    started = time.perf_counter()
    with open(log, "w") as out:
        # SIGINT stops it; a shell's background job (nohup ... &) has SIGINT ignored, which it would inherit
        proc = subprocess.Popen(cmd, env=child_env(), stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    ends = np.cumsum([len(w) for w in windows])

    def rounds() -> dict:  # rounds finished, and windows in the store (from its posts)
        posts = store_stats(store)["posts"]
        return {"rounds": log.read_text(errors="replace").count("report: "),
                "windows": int(np.searchsorted(ends, posts, side="right"))}

    written = threading.Event()
    writer = steady_from = stop_at = None
    with Sampler(proc.pid, store, args.sample_s, rounds) as sampler:
        while proc.poll() is None:
            time.sleep(0.05)
            done = rounds()["rounds"]
            if writer is None and done >= 1:  # the first round is the baseline; the writer starts after it
                writer = threading.Thread(target=write_windows, args=(store, windows[args.initial_windows:],
                                                                      args.write_rate, written), daemon=True)
                writer.start()
            if written.is_set() and steady_from is None:
                steady_from = done + 1  # the round in flight may have missed the last windows
            if steady_from is not None and done >= steady_from + args.steady_rounds - 1:
                sampler.sample()
                stop_at = len(sampler.rows)  # the samples after it are the command's shutdown
                proc.send_signal(signal.SIGINT)
                break
        code = proc.wait(timeout=300)
    wall = time.perf_counter() - started
    report = json.loads((work / "monitor-report" / "report.json").read_text())
    table = report["sections"][0]["tables"]["windows"]
    estimated = sum(1 for row in table if row["n_posts"] >= 20)  # windows whose estimate was computed
    return summarise_monitor(args, sampler.rows, stop_at, steady_from, code, wall, len(table), estimated, log)


def summarise_monitor(args, rows: list[dict], stop_at: int | None, steady_from: int | None, code: int, wall: float,
                      last_windows: int, estimated: int, log: Path) -> dict:
    """Per round (samples tagged by the rounds finished when taken, so round r's samples have rounds = r - 1):
    its peak RSS and the windows in the store; fits over the growing and the steady rounds. Counts at the end are
    those of the sample just before the stop signal; the peak RSS is over all samples."""
    everything, rows = rows, rows[:stop_at]
    per_round = {}
    for row in rows:
        r = row["rounds"] + 1
        entry = per_round.setdefault(r, {"round": r, "peak_rss_mib": 0.0, "windows": 0, "fds": 0, "threads": 0,
                                         "fds_min": row["fds"], "threads_min": row["threads"]})
        entry["fds_min"], entry["threads_min"] = min(entry["fds_min"], row["fds"]), min(entry["threads_min"],
                                                                                        row["threads"])
        entry["peak_rss_mib"] = max(entry["peak_rss_mib"], row["rss_mib"])
        entry["windows"] = max(entry["windows"], row["windows"])
        entry["fds"], entry["threads"] = max(entry["fds"], row["fds"]), max(entry["threads"], row["threads"])
    finished = [per_round[r] for r in sorted(per_round) if r <= rows[-1]["rounds"]]  # whole rounds only
    growing = [e for e in finished if steady_from is None or e["round"] < steady_from]
    steady = [e for e in finished if steady_from is not None and e["round"] >= steady_from]
    slack = int(np.ceil(pd.Timedelta("2D") / pd.Timedelta(args.window)))  # the SQL read's slack, in windows
    full = [e for e in growing if args.history and e["windows"] > args.history + slack]
    after_first = next(r for r in rows if r["rounds"] >= 1)
    later = [e for e in finished if e["round"] >= 2] or finished
    end = rows[-1]
    return {
        "part": "monitor", "exit_code": code, "wall_s": wall, "rounds": end["rounds"],
        "steady_rounds": end["rounds"] - steady_from + 1 if steady_from else 0,
        "windows_in_store": end["windows"], "estimated_windows": estimated, "windows_in_last_report": last_windows,
        "posts": end["posts"], "samples": len(rows),
        "rss_vs_windows": fit([e["windows"] for e in growing], [e["peak_rss_mib"] for e in growing]),
        "rss_vs_steady_round": fit([e["round"] for e in steady], [e["peak_rss_mib"] for e in steady]),
        # with --history, the growing rounds once the history is full (the windows analysed no longer grow)
        "history_windows": args.history, "window": args.window,
        "rss_vs_windows_history_full": fit([e["windows"] for e in full], [e["peak_rss_mib"] for e in full]),
        "store_vs_posts": fit([r["posts"] for r in rows], [r["store_bytes"] for r in rows]),
        "peak_rss_mib": max(r["hwm_mib"] for r in everything), "rss_after_first_round_mib": after_first["rss_mib"],
        "rss_end_mib": end["rss_mib"],
        "fds": (after_first["fds"], end["fds"], max(r["fds"] for r in rows)),
        "threads": (after_first["threads"], end["threads"], max(r["threads"] for r in rows)),
        "children_end": end["children"], "per_round": finished,
        # a round opens files (the store, the report, figures) and closes them: the fewest seen in a round is
        # what it holds between rounds, compared here between the first round after round 1 and the last
        "fds_baseline": (later[0]["fds_min"], finished[-1]["fds_min"]),
        "threads_baseline": (later[0]["threads_min"], finished[-1]["threads_min"]),
        "stopped_line": next((line for line in log.read_text(errors="replace").splitlines()
                              if line.startswith("stopped")), ""),
    }


# ---------------------------------------------------------------------------------------- collect
def frame_templates(n: int, seed: int, match_share: float) -> tuple[list[str], list[bool]]:
    """`n` SYNTHETIC Jetstream frames with placeholders for time_us, rkey and createdAt, and whether each is an
    English post carrying a lexicon term (the shapes of benchmarks/collect_speed.py)."""
    from benchmarks.collect_speed import EXTRAS, OTHER_LANGS, WORDS
    from mhaudit.weak_supervision.lexicons import Lexicon

    terms = sorted({t for name in ("si", "mh") for t in Lexicon.load(name).terms})
    rng = random.Random(seed)
    frames, planted = [], []
    for i in range(n):
        did, kind, match = f"did:plc:{rng.randrange(60_000):024x}", rng.random(), False
        if kind < 0.001:
            frames.append(rng.choice(('{"did": "did:plc:x", "time_us": ', "not json", '{"time_us": "x"}')))
            planted.append(False)
            continue
        if kind < 0.031:
            event = {"did": did, "time_us": "__T__", "kind": rng.choice(("identity", "account")),
                     "identity": {"did": did, "handle": "someone.bsky.social", "seq": i, "time": "__C__"}}
        elif kind < 0.131:
            event = {"did": did, "time_us": "__T__", "kind": "commit", "commit": {
                "rev": "3lq", "operation": "delete", "collection": "app.bsky.feed.post", "rkey": "__R__"}}
        else:
            english = rng.random() < 0.75
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 45))]
            for _ in range(rng.randint(0, 3)):
                words.insert(rng.randrange(len(words) + 1), rng.choice(EXTRAS))
            match = english and rng.random() < match_share
            if match:
                words.insert(rng.randrange(len(words) + 1), rng.choice(terms).replace("'", rng.choice("'’")))
            record = {"$type": "app.bsky.feed.post", "text": " ".join(words).capitalize(), "createdAt": "__C__",
                      "langs": rng.choice((["en"], ["en"], ["en-US"])) if english else rng.choice(OTHER_LANGS)}
            if rng.random() < 0.33:
                ref = {"uri": f"at://{did}/app.bsky.feed.post/3kparent", "cid": "bafyreiparent"}
                record["reply"] = {"root": ref, "parent": ref}
            event = {"did": did, "time_us": "__T__", "kind": "commit", "commit": {
                "rev": "3lq", "operation": "create", "collection": "app.bsky.feed.post", "rkey": "__R__",
                "record": record, "cid": "bafyrei__R__"}}
        frames.append(json.dumps(event, ensure_ascii=False))
        planted.append(match)
    return frames, planted


def frame_at(templates: list[str], i: int) -> str:
    time_us = T0 + i * STEP_US
    created = datetime.fromtimestamp(time_us / 1e6, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return (templates[i % len(templates)].replace('"__T__"', str(time_us)).replace("__R__", f"3l{i:x}")
            .replace("__C__", created))


def serve_relay(n_events: int, n_templates: int, seed: int, match_share: float, queue) -> None:
    """Child process: serve frames 0..n_events-1 on ws://127.0.0.1:PORT/subscribe (a ?cursor= time_us replays
    from there, inclusive), then idle as a live tail; until terminated."""
    from urllib.parse import parse_qs, urlsplit

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.server import serve

    templates, _ = frame_templates(n_templates, seed, match_share)

    def handle(ws):
        query = parse_qs(urlsplit(ws.request.path).query)
        first = max(0, (int(query["cursor"][0]) - T0) // STEP_US) if "cursor" in query else 0
        try:
            for i in range(first, n_events):
                ws.send(frame_at(templates, i))
            while True:
                time.sleep(0.2)
                ws.ping()
        except ConnectionClosed:
            return

    server = serve(handle, "127.0.0.1", 0, compression=None, max_size=None)
    queue.put(server.socket.getsockname()[1])
    server.serve_forever()


def run_collect(args, work: Path) -> dict:
    _, planted = frame_templates(args.templates, args.seed, args.match_share)
    full, rest = divmod(args.events, args.templates)
    expected = full * sum(planted) + sum(planted[:rest])
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    relay = ctx.Process(target=serve_relay, args=(args.events, args.templates, args.seed, args.match_share, queue),
                        daemon=True)
    relay.start()
    store, log = fresh(work / "collect.sqlite"), work / "collect.log"
    stop_at = None
    last = T0 + (args.events - 1) * STEP_US
    try:
        port = queue.get(timeout=300)
        cmd = command("collect", "bluesky", "--db", str(store), "--lexicon", "si", "--lexicon", "mh", "--relay",
                      f"ws://127.0.0.1:{port}/subscribe", "--wire", "subscribe")
        started = time.perf_counter()
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
        with Sampler(proc.pid, store, args.sample_s) as sampler:
            while proc.poll() is None:
                time.sleep(0.05)
                cursor = sampler.rows[-1]["cursor"] if sampler.rows else None
                if cursor is not None and cursor >= last:
                    sampler.sample()
                    stop_at = len(sampler.rows)  # the samples after it are the command's shutdown
                    proc.send_signal(signal.SIGTERM)  # commits the pending batch, ends the run cleanly
                    break
            code = proc.wait(timeout=120)
        wall = time.perf_counter() - started
    finally:
        relay.terminate()
        relay.join()
    final = store_stats(store)
    return summarise_collect(args, sampler.rows, stop_at, code, wall, expected, final, store, log)


def summarise_collect(args, rows, stop_at, code, wall, expected, final, store: Path, log: Path) -> dict:
    """Fits and counts over the samples up to the stop signal; the peak RSS over all of them."""
    for row in rows:
        row["events"] = 0 if row["cursor"] is None else (row["cursor"] - T0) // STEP_US + 1
    everything, rows = rows, rows[:stop_at]
    running = [r for r in rows if r["events"] > 0]
    late = [r for r in running if r["events"] >= 0.1 * args.events]
    first, end = running[0], rows[-1]
    t_first = first["t"]
    deciles = []
    for k in range(1, 11):
        upto = [r for r in running if r["events"] <= k * args.events / 10]
        deciles.append(max(r["rss_mib"] for r in upto) if upto else float("nan"))
    files = {p.name: p.stat().st_size for p in store.parent.glob(store.name + "*")}
    return {
        "part": "collect", "exit_code": code, "wall_s": wall, "events": end["events"], "stored": final["posts"],
        "expected_matches": expected, "samples": len(rows),
        "events_per_s": (end["events"] - first["events"]) / max(end["t"] - t_first, 1e-9),
        "rss_vs_events": fit([r["events"] for r in late], [r["rss_mib"] for r in late]),
        "store_vs_posts": fit([r["posts"] for r in running], [r["store_bytes"] for r in running]),
        "store_bytes_end": final["store_bytes"], "files_after_exit": files,
        "peak_rss_mib": max(r["hwm_mib"] for r in everything), "rss_first_mib": first["rss_mib"],
        "rss_end_mib": end["rss_mib"], "peak_rss_by_decile_mib": deciles,
        "fds": (first["fds"], end["fds"], max(r["fds"] for r in running)),
        "threads": (first["threads"], end["threads"], max(r["threads"] for r in running)),
        "stopped_line": next((line for line in log.read_text(errors="replace").splitlines()
                              if line.startswith("stopped")), ""),
    }


# ---------------------------------------------------------------------------------------- report
def print_monitor(m: dict) -> None:
    g, s, st = m["rss_vs_windows"], m["rss_vs_steady_round"], m["store_vs_posts"]
    print(f"\nmonitor --follow (SYNTHETIC, windows of {m['window']}): exit {m['exit_code']}, {m['wall_s']:.0f} s, "
          f"{m['rounds']} rounds ({m['steady_rounds']} on the unchanged store), {m['windows_in_store']:,} windows "
          f"= {m['posts']:,} posts in the store, {m['windows_in_last_report']:,} windows in the last report "
          f"({m['estimated_windows']:,} of them with the label-free estimate and EM interval: 20 posts or more)")
    print(f"  peak RSS per round vs windows in the store (growing rounds, n={g['n']}): "
          f"{1000 * g['slope']:+.2f} MiB per 1,000 windows (R^2 {g['r2']:.2f})")
    if m["history_windows"]:
        h = m["rss_vs_windows_history_full"]
        print(f"  --history of {m['history_windows']} windows, once the store holds it and the SQL read's 2-day "
              f"slack (n={h['n']} growing rounds): "
              f"{1000 * h['slope']:+.2f} MiB per 1,000 windows in the store (R^2 {h['r2']:.2f})")
    print(f"  peak RSS per round, steady rounds (n={s['n']}): {100 * s['slope']:+.2f} MiB per 100 rounds")
    print(f"  RSS after round 1 {m['rss_after_first_round_mib']:.0f} MiB, at the end {m['rss_end_mib']:.0f} MiB, "
          f"peak (VmHWM) {m['peak_rss_mib']:.0f} MiB")
    print(f"  store: {st['slope']:.0f} bytes per post (R^2 {st['r2']:.4f}, n={st['n']}; the scores table included)")
    print(f"  fds after round 1 / end / max: {m['fds']}; threads: {m['threads']}; child processes at the end: "
          f"{m['children_end']}; fewest fds in round 2 / the last round: {m['fds_baseline']}, threads: "
          f"{m['threads_baseline']}")
    print(f"  {m['stopped_line']}")
    print("  round  windows  peak RSS MiB  fds  threads")
    rounds, mid = m["per_round"], len(m["per_round"]) // 2
    shown = rounds if len(rounds) <= 12 else rounds[:4] + rounds[mid - 2:mid + 2] + rounds[-4:]
    for e in shown:
        print(f"  {e['round']:5d}  {e['windows']:7,d}  {e['peak_rss_mib']:12.1f}  {e['fds']:3d}  {e['threads']:7d}")


def print_collect(c: dict) -> None:
    r, st = c["rss_vs_events"], c["store_vs_posts"]
    print(f"\ncollect bluesky (SYNTHETIC relay on 127.0.0.1): exit {c['exit_code']}, {c['wall_s']:.0f} s, "
          f"{c['events']:,} events at {c['events_per_s']:,.0f}/s; {c['stored']:,} posts stored "
          f"({c['expected_matches']:,} planted)")
    print(f"  RSS vs events after the first 10% (n={r['n']}): {1e5 * r['slope']:+.3f} MiB per 100,000 events; RSS "
          f"at the first events {c['rss_first_mib']:.0f} MiB, at the end {c['rss_end_mib']:.0f} MiB, peak (VmHWM) "
          f"{c['peak_rss_mib']:.0f} MiB")
    print("  peak RSS by tenth of the events (MiB): " + " ".join(f"{v:.0f}" for v in c["peak_rss_by_decile_mib"]))
    print(f"  store: {st['slope']:.0f} bytes per post, R^2 {st['r2']:.5f} (n={st['n']}); "
          f"{c['store_bytes_end'] / 2**20:.1f} MiB at the end; files after exit {c['files_after_exit']}")
    print(f"  fds at the first events / end / max: {c['fds']}; threads: {c['threads']}")
    print(f"  {c['stopped_line']}")


QUICK = {"windows": 60, "full_every": 20, "initial_windows": 20, "write_rate": 20.0, "n_boot": 40,
         "steady_rounds": 2, "events": 100_000, "templates": 5_000, "sample_s": 0.2}


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("monitor", "collect", "both"), default="both")
    ap.add_argument("--quick", action="store_true", help="a smoke run of under a minute")
    ap.add_argument("--work", type=Path, help="keep the stores, logs and reports here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, help="also write the results and samples here")
    ap.add_argument("--sample-s", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--windows", type=int, default=2000)
    ap.add_argument("--per-window", type=int, default=10, help="posts per window (under 20: no estimate)")
    ap.add_argument("--full-every", type=int, default=50, help="every this many windows, one of --full-posts "
                    "posts, which gets the label-free estimate (about 0.5 s each); 0: none")
    ap.add_argument("--full-posts", type=int, default=25)
    ap.add_argument("--initial-windows", type=int, default=200)
    ap.add_argument("--write-rate", type=float, default=5.0, help="windows appended per second")
    ap.add_argument("--n-boot", type=int, default=40)  # MonitorOptions needs at least 40
    ap.add_argument("--steady-rounds", type=int, default=10)
    ap.add_argument("--window", choices=("1min", "1h"), default="1min", help="window length (synthetic time)")
    ap.add_argument("--history", type=int, default=0, help="monitor --history of this many windows "
                    "(0: none, every post)")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--match-share", type=float, default=0.05)
    ap.add_argument("--templates", type=int, default=20_000)
    args = ap.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) == ap.get_default(key):
                setattr(args, key, value)
    return args


def run(args) -> dict:
    results = {}
    with tempfile.TemporaryDirectory(prefix="mhaudit-long-run-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.part in ("monitor", "both"):
            results["monitor"] = run_monitor(args, work)
        if args.part in ("collect", "both"):
            results["collect"] = run_collect(args, work)
    return results


def main(argv=None) -> int:
    args = parse(argv)
    print(f"SYNTHETIC streams; {os.cpu_count()} CPUs, load average {os.getloadavg()} at the start")
    started = time.perf_counter()
    results = run(args)
    if "monitor" in results:
        print_monitor(results["monitor"])
    if "collect" in results:
        print_collect(results["collect"])
    print(f"\nload average {os.getloadavg()} at the end; {time.perf_counter() - started:.0f} s in all")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
