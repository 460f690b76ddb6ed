"""Speed and memory of the Bluesky collector: parse + filter + store (not a test).

A replayed stream of 200,000 synthetic events in Jetstream's recorded JSON format, generated here (seeded):
about 86% post creates (realistic short posts of 4-45 words with mentions, links, hashtags, emoji and line
breaks; a quarter not in English; a third replies; about 3% of the English ones carry an SI or MH lexicon
term, the rest do not, some with near-misses such as "diet" or "skill"), 10% post deletes, 3% identity and
account events, 0.1% malformed frames. The last event is a matching post so a run can stop exactly there.

Two pipelines, each writing to a fresh post store (SQLite, WAL) with the SI and MH lexicons, batches of 500:

* in-process: the frames are fed to `Collector.consume` directly (parse + filter + store);
* websocket: the same frames served by the tests' Jetstream-compatible server (tests/weak_supervision/collect/stream_server.py)
  from a separate process on 127.0.0.1, read by `Collector.run` (connect, receive, parse, filter, store).

The collector itself runs on one core (one process; websockets' reader thread shares it). Reported: events/s
and the ratio to the 5,000 events/s floor (the public stream averages a few hundred posts/s), the peak RSS
during the run, and the RSS growth between 20% and 100% of the events (flat memory: no growth with the
number of events).

With `--wire xrpc` the same events are sent on Jetstream's xrpc wire instead (`{"$type": "message",
"payload": {...}}` frames with consecutive seqs, as the tests' relay writes them; malformed frames as they are).

    python benchmarks/collect_speed.py [--n 200000] [--seed 0] [--batch-size 500] [--skip-websocket]
                                       [--wire subscribe|xrpc]
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' stream server
os.environ.setdefault("MHAUDIT_SECRET", "collect-speed-benchmark-secret")  # never touch ~/.config

from mhaudit.weak_supervision.collect.collector import CollectOptions, Collector, PostFilter  # noqa: E402
from mhaudit.weak_supervision.collect.store import PostStore  # noqa: E402
from mhaudit.weak_supervision.lexicons import Lexicon  # noqa: E402

FLOOR = 5_000  # events/s
T0 = 1_747_000_000_000_000
WORDS = ("the a and i you we it was is to of in on for with my your this that just so really today tonight "
         "tomorrow morning night coffee work school dog cat game music song movie friend weekend rain sun "
         "train bus late early new old great good bad funny weird love hate think know feel going got make "
         "made see saw watch read book city park beach dinner lunch pizza study studied diet skill sleepover "
         "dying dye panicked bluesky post thread art photo vote news people world week year time lol omg "
         "honestly literally finally again still never always maybe").split()
EXTRAS = ("@someone.bsky.social", "https://example.com/a/b?c=1", "#art", "#bookstodon", "😭", "🙏", "✨", "lol",
          "\n\n", "“quoted”", "it’s", "don’t")
OTHER_LANGS = (["ja"], ["pt"], ["de"], ["es"], ["fr"], ["ko"])


def synthetic_frames(n: int, seed: int, lexicons: list[Lexicon]) -> list[str]:
    rng = random.Random(seed)
    terms = sorted({t for lex in lexicons for t in lex.terms})
    frames = []
    for i in range(n):
        t, did = T0 + i * 1000 + rng.randrange(1000), f"did:plc:{rng.randrange(60_000):024x}"
        kind = rng.random()
        if i == n - 1:
            kind = 0.5
        if kind < 0.001:
            frames.append(rng.choice(('{"did": "did:plc:x", "time_us": ', "not json", '{"time_us": "x"}')))
            continue
        if kind < 0.031:
            event = {"did": did, "time_us": t, "kind": rng.choice(("identity", "account")),
                     "identity": {"did": did, "handle": "someone.bsky.social", "seq": i, "time": "2025-05-12T00:00:00Z"}}
        elif kind < 0.131:
            event = {"did": did, "time_us": t, "kind": "commit", "commit": {
                "rev": "3lq", "operation": "delete", "collection": "app.bsky.feed.post", "rkey": f"3l{i:x}"}}
        else:
            english = rng.random() < 0.75 or i == n - 1
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 45))]
            for _ in range(rng.randint(0, 3)):
                words.insert(rng.randrange(len(words) + 1), rng.choice(EXTRAS))
            if english and (rng.random() < 0.03 or i == n - 1):
                words.insert(rng.randrange(len(words) + 1), rng.choice(terms).replace("'", rng.choice("'’")))
            record = {"$type": "app.bsky.feed.post", "text": " ".join(words).capitalize(),
                      "createdAt": f"2025-05-{12 + i * 14 // n:02d}T{rng.randrange(24):02d}:00:00.000Z",
                      "langs": rng.choice((["en"], ["en"], ["en-US"])) if english else rng.choice(OTHER_LANGS)}
            if rng.random() < 0.33 and i != n - 1:
                ref = {"uri": f"at://{did}/app.bsky.feed.post/3kparent", "cid": "bafyreiparent"}
                record["reply"] = {"root": ref, "parent": ref}
            event = {"did": did, "time_us": t, "kind": "commit", "commit": {
                "rev": "3lq", "operation": "create", "collection": "app.bsky.feed.post", "rkey": f"3l{i:x}",
                "record": record, "cid": f"bafyrei{i:x}"}}
        frames.append(json.dumps(event, ensure_ascii=False))
    return frames


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class RssSampler:
    """RSS every 10 ms, keyed by the fraction of events processed so far."""

    def __init__(self, collector: Collector, total: int):
        self.collector, self.total, self.samples = collector, total, []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.start_mb = rss_mb()

    def _run(self):
        while not self._done.wait(0.01):
            self.samples.append((self.collector.stats.events / self.total, rss_mb()))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self.samples.append((self.collector.stats.events / self.total, rss_mb()))

    def peak(self) -> float:
        return max(mb for _, mb in self.samples)

    def growth(self) -> float:
        at_20 = next(mb for frac, mb in self.samples if frac >= 0.2)
        return self.samples[-1][1] - at_20


def as_xrpc(frames: list[str]) -> list[str]:
    """The same events on the xrpc wire (seq = position + 1); malformed frames stay as they are."""
    from tests.weak_supervision.collect.stream_server import xrpc_message, xrpc_payload

    out = []
    for seq, frame in enumerate(frames, 1):
        try:
            event = json.loads(frame)
            event.setdefault(event["kind"], event.get("identity"))  # the generator's account events reuse it
            out.append(xrpc_message(xrpc_payload(event, seq)))
        except (ValueError, KeyError, TypeError):
            out.append(frame)
    return out


def make_collector(db: Path, lexicons, batch_size: int, wire: str, relay: str | None = None,
                   max_posts: int | None = None):
    store = PostStore(db)
    options = CollectOptions(batch_size=batch_size, max_posts=max_posts, duration_s=600)
    return store, Collector(store, PostFilter(lexicons), wire=wire, relay=relay, options=options)


def serve(n: int, seed: int, wire: str, queue) -> None:
    """Child process: generate the same frames and serve them until terminated."""
    from tests.weak_supervision.collect.stream_server import StreamServer

    lexicons = [Lexicon.load("si"), Lexicon.load("mh")]
    frames = synthetic_frames(n, seed, lexicons)
    frames = as_xrpc(frames) if wire == "xrpc" else frames
    server = StreamServer(list(enumerate(frames, 1)), wire=wire).start()  # cursor = position
    queue.put(server.url)
    threading.Event().wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--skip-websocket", action="store_true")
    ap.add_argument("--wire", choices=("subscribe", "xrpc"), default="subscribe")
    args = ap.parse_args()

    lexicons = [Lexicon.load("si"), Lexicon.load("mh")]
    t0 = time.perf_counter()
    frames = synthetic_frames(args.n, args.seed, lexicons)
    frames = as_xrpc(frames) if args.wire == "xrpc" else frames
    print(f"{args.n:,} synthetic events ({args.wire} wire) generated in {time.perf_counter() - t0:.1f} s "
          f"({sum(map(len, frames)) / 2**20:.0f} MiB of JSON); lexicons si + mh ({sum(map(len, lexicons))} terms)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store, collector = make_collector(Path(tmp) / "inproc.sqlite", lexicons, args.batch_size, args.wire)
        with RssSampler(collector, args.n) as rss:
            start = time.perf_counter()
            collector.consume(iter(frames))
            collector.flush()
            seconds = time.perf_counter() - start
        stats = collector.stats
        expected = stats.stored
        print(f"in-process: {stats.posts:,} posts, {stats.matched:,} matched, {stats.stored:,} stored, "
              f"{stats.malformed:,} malformed frames skipped; cursor saved {bool(store.cursors())}")
        rows.append(("in-process (parse+filter+store)", stats.events, seconds, rss.start_mb, rss.peak(),
                     rss.growth()))
        store.close()
        del frames
        gc.collect()

        if not args.skip_websocket:
            ctx = mp.get_context("spawn")
            queue = ctx.Queue()
            child = ctx.Process(target=serve, args=(args.n, args.seed, args.wire, queue), daemon=True)
            child.start()
            try:
                url = queue.get(timeout=300)
                store, collector = make_collector(Path(tmp) / "ws.sqlite", lexicons, args.batch_size, args.wire,
                                                  relay=url, max_posts=expected)
                with RssSampler(collector, args.n) as rss:
                    start = time.perf_counter()
                    stats = collector.run()
                    seconds = time.perf_counter() - start
                print(f"websocket: {stats.events:,} events, {stats.stored:,} stored (in-process: {expected:,}), "
                      f"stop: {stats.stop_reason}, connections: {stats.connections}")
                rows.append(("websocket end to end", stats.events, seconds, rss.start_mb, rss.peak(), rss.growth()))
                store.close()
            finally:
                child.terminate()
                child.join()

    print(f"\n{'pipeline':34} {'events':>9} {'seconds':>8} {'events/s':>10} {'vs 5,000/s':>10} "
          f"{'RSS at start':>12} {'peak RSS':>9} {'RSS 20%→100%':>13}")
    for name, events, secs, start_mb, peak, growth in rows:
        rate = events / secs
        print(f"{name:34} {events:9,} {secs:8.2f} {rate:10,.0f} {rate / FLOOR:9.1f}x {start_mb:9.0f} MB "
              f"{peak:6.0f} MB {growth:+10.1f} MB")
    print("(RSS at start includes the generated frames held in memory for the in-process feed; "
          "the websocket run follows it in the same process)")


if __name__ == "__main__":
    main()
