"""LLM weak labels: ask a local LLM server for 1 or 0 per item and write each answer to the labels table.

Two backends speak HTTP through httpx:

- `OllamaBackend`: Ollama's `/api/chat` (default http://127.0.0.1:11434, model `llama3:8b` as in the Bluesky
  paper), options temperature 0, seed, num_predict 2; `constrain="schema"` sends a JSON-schema `format`
  allowing only the integers 0 and 1 (Ollama's structured outputs).
- `OpenAIBackend`: any OpenAI-compatible `/v1/chat/completions` server, temperature 0, seed, max_tokens 2;
  the output is constrained where the server supports it: llama.cpp servers take a GBNF `grammar`
  (`root ::= "0" | "1"`), vLLM takes `guided_choice`. `constrain="auto"` picks by the `owned_by` field
  of `/v1/models` (vllm -> choice; llama.cpp / llama-cpp-python -> grammar; anything else -> none).

Answers: the answer text is stripped of surrounding whitespace; exactly "1" or "0" is a label, anything
else is stored as invalid (value NULL) with the raw text. Nothing is coerced ("1." or "Yes" are invalid).

Retry policy (`RetryPolicy`): a request that fails with a connection error, a timeout, HTTP 429 or any 5xx
is retried up to `retries` times (default 3), waiting `backoff` seconds (default 0.5) doubled after each
try, at most 30 s (0.5, 1, 2 s). Other 4xx answers are not retried. When the server cannot be reached at
all (connection refused / timed out after every retry), the run stops with one sentence naming the URL and
this policy; an item whose request still fails after its retries (5xx, timeout) is counted as failed, not
stored, and is asked again by the next run.

Privacy: a server's response body is never copied into a failure, a note or the run report (an error body
can echo the prompt, i.e. the post): they keep the URL, the HTTP status code or the exception class. Only the
one-sentence stop for 401/403/404 (`ServerRejected`, shown on the console, never stored) quotes the server's
reason, cut to 300 characters.

Resume: `label_items` writes each answered item at once (one transaction per item) with kind 'llm',
labeler (default: the model name), prompt hash, raw answer and latency; a re-run skips every item that
already has a label for that task and labeler, so an interrupted run (Ctrl-C, kill -9) loses only the
requests in flight.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.labelers.prompts import Example, Prompt

BACKENDS = ("openai", "ollama")
CONSTRAINTS = ("auto", "grammar", "choice", "schema", "none")
DEFAULT_URLS = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8080"}
DEFAULT_MODELS = {"ollama": "llama3:8b", "openai": None}  # openai: the server's first model
GRAMMAR = 'root ::= "0" | "1"'
CHOICES = ["0", "1"]
SCHEMA = {"type": "integer", "enum": [0, 1]}


def parse_answer(raw: str | None) -> int | None:
    """1 or 0 when the answer is exactly that after stripping whitespace, else None (invalid, never coerced)."""
    text = (raw or "").strip()
    return int(text) if text in ("0", "1") else None


# -- errors and the retry policy ------------------------------------------------------------------------------

class ServerUnreachable(InputError):
    """The server could not be reached after every retry: stop the run (exit 2)."""


class ServerRejected(InputError):
    """The server refused the request in a way every item would share (unknown model, auth): stop the run."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class RequestFailed(Exception):
    """One item's request failed after its retries (5xx, timeout, other 4xx); the item is not stored.

    The message names the URL and the status code or exception class, never the server's body; `reason` is
    the same without the URL and the retry policy (for notes)."""

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason or message


def brief(exc: BaseException) -> str:
    """The exception class and HTTP status, e.g. 'ServerRejected (HTTP 404)': what a report may keep."""
    status = getattr(exc, "status", None)
    return type(exc).__name__ + (f" (HTTP {status})" if status else "")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0

    def __post_init__(self):
        if self.retries < 0 or self.backoff < 0:
            raise InputError("--retries and --backoff must be >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number `attempt` (0-based)."""
        return min(self.backoff * 2 ** attempt, self.max_backoff)

    def describe(self) -> str:
        waits = ", ".join(f"{self.delay(i):g} s" for i in range(min(self.retries, 4)))
        more = ", ..." if self.retries > 4 else ""
        return (f"{self.retries} retr{'y' if self.retries == 1 else 'ies'} on connection errors, timeouts, "
                f"HTTP 429 and 5xx, waiting {waits or 'nothing'}{more} (doubling, at most {self.max_backoff:g} s)")


# -- backends --------------------------------------------------------------------------------------------------

@dataclass
class Answer:
    raw: str
    value: int | None
    latency_ms: float
    attempts: int
    top_logprobs: list[tuple[str, float]] | None = None  # at the first non-blank answer token


def answer_logprobs(top: Sequence[tuple[str, float]] | None) -> dict[str, float]:
    """Log-probability of the answers '0' and '1' among a token's top alternatives.

    Tokens that are '0' or '1' after stripping whitespace (" 1", "1") are pooled by log-sum-exp. An answer
    missing from the list is missing from the result (`mhaudit.models.llm.positive_probability` bounds its mass).
    """
    out: dict[str, float] = {}
    for token, logprob in top or ():
        key = str(token).strip()
        if key in CHOICES and logprob is not None and math.isfinite(logprob):
            out[key] = float(np.logaddexp(out[key], logprob)) if key in out else float(logprob)
    return out


class Backend:
    """One LLM server. Thread-safe: one httpx client with a connection pool shared by the workers."""

    name = "?"

    def __init__(self, url: str | None = None, model: str | None = None, *, timeout: float = 60.0,
                 policy: RetryPolicy = RetryPolicy(), seed: int = 0, max_tokens: int = 2, constrain: str = "auto",
                 top_logprobs: int = 0, api_key: str | None = None, concurrency: int = 4):
        import httpx

        if constrain not in CONSTRAINTS:
            raise InputError(f"--constrain '{constrain}' must be one of {', '.join(CONSTRAINTS)}")
        if timeout <= 0:
            raise InputError("--timeout must be > 0 seconds")
        self.url = (url or DEFAULT_URLS[self.name]).rstrip("/")
        self.model = model if model is not None else DEFAULT_MODELS[self.name]
        self.timeout, self.policy, self.seed, self.max_tokens = timeout, policy, seed, max_tokens
        self.constrain, self.top_logprobs = constrain, top_logprobs
        self.notes: list[str] = []
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._httpx = httpx
        self._client = httpx.Client(timeout=timeout, headers=headers,
                                    limits=httpx.Limits(max_connections=max(concurrency, 1) + 2))
        self._sleep = time.sleep  # tests may replace it
        self._prepared = False

    # what the prompt hash covers
    def settings(self) -> dict:
        return {"backend": self.name, "model": self.model, "temperature": 0, "seed": self.seed,
                "max_tokens": self.max_tokens, "constrain": self.constrain}

    def close(self) -> None:
        self._client.close()

    def _endpoint(self) -> str:
        raise NotImplementedError

    # -- HTTP with the retry policy ----------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: dict | None = None) -> tuple[dict, int, float]:
        """(JSON body, attempts, latency ms of the successful try) or an exception after the policy."""
        httpx = self._httpx
        url = f"{self.url}{path}"
        last, last_status = "", None
        unreachable = True
        for attempt in range(self.policy.retries + 1):
            if attempt:
                self._sleep(self.policy.delay(attempt - 1))
            start = time.perf_counter()
            try:
                response = self._client.request(method, url, json=payload)
            except httpx.ConnectError as exc:
                last = f"cannot connect ({_reason(exc)})"
                continue
            except httpx.TimeoutException as exc:
                last = f"timed out after {self.timeout:g} s ({type(exc).__name__})"
                if not isinstance(exc, httpx.ConnectTimeout):
                    unreachable = False
                continue
            except httpx.TransportError as exc:  # connection dropped mid-request etc.; the class only: a
                last, unreachable = f"connection error ({type(exc).__name__})", False  # protocol error may quote
                continue  # what the server sent
            latency = (time.perf_counter() - start) * 1000
            unreachable = False
            status = response.status_code
            if status == 429 or status >= 500:
                last, last_status = f"HTTP {status}", status
                continue
            if status in (401, 403, 404):  # the console sentence only (never stored): the server's reason
                raise ServerRejected(f"{url} answered HTTP {status}: {_snippet(response)}{self._hint(status)}",
                                     status=status)
            if status >= 400:
                raise RequestFailed(f"{url} answered HTTP {status}", status=status, reason=f"HTTP {status}")
            try:
                return response.json(), attempt + 1, latency
            except ValueError:
                raise RequestFailed(f"{url} answered HTTP {status} with a body that is not JSON "
                                    f"({len(response.content)} bytes)", status=status,
                                    reason=f"HTTP {status} with a body that is not JSON") from None
        if unreachable:
            raise ServerUnreachable(f"cannot reach the {self.name} server at {self.url}: {last}; tried "
                                    f"{self.policy.retries + 1} times ({self.policy.describe()}). Is it running, "
                                    "and is --url right?")
        tries = f"{last} on every one of {self.policy.retries + 1} tries"
        raise RequestFailed(f"{url}: {tries} ({self.policy.describe()})", status=last_status, reason=tries)

    def _hint(self, status: int) -> str:
        return ""

    def prepare(self) -> None:
        """Check that the server is there (and resolve 'auto' settings) before any item is asked; once."""
        if not self._prepared:
            self._prepare()
            self._prepared = True

    def _prepare(self) -> None:
        pass

    def ask(self, messages: list[dict]) -> Answer:
        body, attempts, latency = self._request("POST", self._endpoint(), self.payload(messages))
        raw, top = self.parse(body)
        return Answer(raw=raw, value=parse_answer(raw), latency_ms=latency, attempts=attempts, top_logprobs=top)

    def payload(self, messages: list[dict]) -> dict:
        raise NotImplementedError

    def parse(self, body: dict) -> tuple[str, list[tuple[str, float]] | None]:
        raise NotImplementedError


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _snippet(response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:300] if text else "(empty body)"


def _first_answer_token(entries: Sequence[dict] | None, token_key: str = "token") -> list[tuple[str, float]] | None:
    """Top alternatives at the first generated token that is not blank, as (token, logprob) pairs."""
    if not entries:
        return None
    for entry in entries:
        if str(entry.get(token_key, "")).strip():
            top = entry.get("top_logprobs") or []
            pairs = [(str(t.get("token", "")), float(t["logprob"])) for t in top if t.get("logprob") is not None]
            if entry.get("logprob") is not None and all(p[0] != entry.get(token_key) for p in pairs):
                pairs.append((str(entry.get(token_key)), float(entry["logprob"])))
            return pairs
    return None


class OpenAIBackend(Backend):
    """`/v1/chat/completions` of llama.cpp, llama-cpp-python, vLLM or any OpenAI-compatible server."""

    name = "openai"

    def __init__(self, url: str | None = None, model: str | None = None, **kwargs):
        url = (url or DEFAULT_URLS["openai"]).rstrip("/")
        if url.endswith("/v1"):
            url = url[:-3]
        super().__init__(url, model, **kwargs)

    def _endpoint(self) -> str:
        return "/v1/chat/completions"

    def _prepare(self) -> None:
        try:
            body, _, _ = self._request("GET", "/v1/models")
            models = [m for m in body.get("data", []) if isinstance(m, dict)]
        except (RequestFailed, ServerRejected):  # some servers have no /v1/models
            models = []
        if self.model is None:
            if not models:
                raise InputError(f"the server at {self.url} lists no models at /v1/models; pass --model")
            self.model = str(models[0].get("id"))
        if self.constrain == "auto":
            owner = {str(m.get("owned_by", "")).lower() for m in models}
            if "vllm" in owner:
                self.constrain = "choice"
            elif owner & {"me", "llamacpp", "llama.cpp"}:  # llama-cpp-python says "me", llama.cpp "llamacpp"
                self.constrain = "grammar"
            else:
                self.constrain = "none"
                self.notes.append(f"the server at {self.url} is neither llama.cpp nor vLLM by its /v1/models "
                                  f"(owned_by {sorted(owner) or 'missing'}), so the output is not constrained "
                                  f"beyond max_tokens {self.max_tokens}; pass --constrain grammar|choice if it "
                                  "supports one")
        if self.constrain == "schema":
            raise InputError("--constrain schema is for the Ollama backend; use grammar (llama.cpp) or choice (vLLM)")

    def payload(self, messages: list[dict]) -> dict:
        payload = {"model": self.model, "messages": messages, "temperature": 0, "seed": self.seed,
                   "max_tokens": self.max_tokens, "stream": False}
        if self.constrain == "grammar":
            payload["grammar"] = GRAMMAR
        elif self.constrain == "choice":
            payload["guided_choice"] = CHOICES
        if self.top_logprobs:
            payload["logprobs"], payload["top_logprobs"] = True, self.top_logprobs
        return payload

    def parse(self, body: dict) -> tuple[str, list[tuple[str, float]] | None]:
        try:
            choice = body["choices"][0]
            raw = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise RequestFailed(f"{self.url}: the answer is not a chat completion (no choices[0].message)",
                                reason="the answer is not a chat completion") from None
        logprobs = choice.get("logprobs") or {}
        return str(raw), _first_answer_token(logprobs.get("content") if isinstance(logprobs, dict) else None)


class OllamaBackend(Backend):
    """Ollama's `/api/chat` (non-streaming)."""

    name = "ollama"

    def _endpoint(self) -> str:
        return "/api/chat"

    def _hint(self, status: int) -> str:
        return f" (is the model pulled? `ollama pull {self.model}`)" if status == 404 else ""

    def _prepare(self) -> None:
        try:
            body, _, _ = self._request("GET", "/api/tags")
        except RequestFailed as exc:
            raise InputError(f"the Ollama server at {self.url} did not list its models ({exc})") from None
        names = {str(m.get("name")) for m in body.get("models", []) if isinstance(m, dict)}
        names |= {str(m.get("model")) for m in body.get("models", []) if isinstance(m, dict)}
        if self.model not in names and f"{self.model}:latest" not in names:
            raise ServerRejected(f"the Ollama server at {self.url} has no model '{self.model}' "
                                 f"(it has {', '.join(sorted(names)) or 'none'}); run `ollama pull {self.model}` "
                                 "or pass --model")
        if self.constrain == "auto":
            self.constrain = "none"  # the paper's set-up: the prompt and num_predict only
        if self.constrain in ("grammar", "choice"):
            raise InputError(f"--constrain {self.constrain} is for OpenAI-compatible servers; Ollama takes "
                             "--constrain schema (structured outputs) or none")

    def payload(self, messages: list[dict]) -> dict:
        payload = {"model": self.model, "messages": messages, "stream": False,
                   "options": {"temperature": 0, "seed": self.seed, "num_predict": self.max_tokens}}
        if self.constrain == "schema":
            payload["format"] = SCHEMA
        if self.top_logprobs:
            payload["logprobs"], payload["top_logprobs"] = True, self.top_logprobs
        return payload

    def parse(self, body: dict) -> tuple[str, list[tuple[str, float]] | None]:
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, dict):
            raise RequestFailed(f"{self.url}: the answer is not an Ollama chat response (no 'message')",
                                reason="the answer is not an Ollama chat response")
        return str(message.get("content") or ""), _first_answer_token(body.get("logprobs"))


def make_backend(backend: str, url: str | None = None, model: str | None = None, **kwargs) -> Backend:
    if backend not in BACKENDS:
        raise InputError(f"--backend '{backend}' must be one of {', '.join(BACKENDS)}")
    return (OpenAIBackend if backend == "openai" else OllamaBackend)(url, model, **kwargs)


# -- items and the k-shot pool ------------------------------------------------------------------------------

def read_items(path: str | Path, *, id_col: str = "id", text_col: str = "text") -> pd.DataFrame:
    """Items to label as a frame with `id` and `text`: a collector post store (.sqlite/.db: id = post URI)
    or a table (corpus Parquet, CSV, TSV, JSONL) with an id and a text column. Blank texts are dropped."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file; expected a post store (.sqlite) or a corpus / table with id and text",
                         path=path)
    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        from mhaudit.weak_supervision.collect.store import PostStore

        with PostStore(path) as store:
            posts = store.posts()
        frame = pd.DataFrame({"id": posts["uri"].astype(str), "text": posts["text"]}) if len(posts) else \
            pd.DataFrame({"id": [], "text": []})
    else:
        from mhaudit.tables.corpus.sources._read import read_table

        table = read_table(path, required=[id_col, text_col])
        frame = pd.DataFrame({"id": table[id_col].astype(str), "text": table[text_col]})
        dup = frame["id"].duplicated()
        if dup.any():
            raise InputError(f"id '{frame['id'][dup].iat[0]}' appears twice in column '{id_col}'; item ids must be "
                             "unique", path=path)
    text = frame["text"].where(frame["text"].notna(), "").astype(str)
    return frame.assign(text=text)[text.str.strip() != ""].reset_index(drop=True)


def read_pool(path: str | Path, *, positive: str | None = None, id_col: str = "id", text_col: str = "text",
              label_col: str = "label") -> pd.DataFrame:
    """A labelled pool for k-shot examples: id, text, y (0/1).

    Labels are 0/1 as they stand, or class names: `positive` names the positive class; without it a corpus
    Parquet with two classes uses its last class (the mappings put the positive class last)."""
    import json

    from mhaudit.tables.corpus.schema import METADATA_KEY
    from mhaudit.tables.corpus.sources._read import read_table

    path = Path(path)
    table = read_table(path, required=[text_col, label_col])
    labels = table[label_col].astype(str).str.strip()
    if positive is None and set(labels) <= {"0", "1", "0.0", "1.0"}:
        y = labels.isin(["1", "1.0"]).astype(int)
    else:
        if positive is None and path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            meta = json.loads((pq.read_schema(path).metadata or {}).get(METADATA_KEY, b"{}"))
            classes = meta.get("classes") or []
            positive = classes[-1] if len(classes) == 2 else None
        if positive is None:
            found = ", ".join(sorted(set(labels))[:5])
            raise InputError(f"pool labels are {found}, not 0/1; pass --positive with the positive class", path=path)
        if positive not in set(labels):
            raise InputError(f"no pool row has the positive class '{positive}' in column '{label_col}'", path=path)
        y = (labels == positive).astype(int)
    ids = table[id_col].astype(str) if id_col in table.columns else pd.Series(
        [f"pool-{i}" for i in range(len(table))], index=table.index)
    text = table[text_col].where(table[text_col].notna(), "").astype(str)
    pool = pd.DataFrame({"id": ids, "text": text, "y": y})
    return pool[pool["text"].str.strip() != ""].reset_index(drop=True)


def draw_examples(pool: pd.DataFrame, k: int, *, seed: int = 0, exclude_ids: set[str] = frozenset(),
                  exclude_texts: set[str] = frozenset()) -> list[Example]:
    """k examples from the pool, seeded and stratified: k // 2 per class, an odd k's last one from a class
    drawn at random; pool rows that are items being labelled (same id or same stripped, lower-cased text)
    are never shown. The order is shuffled so the labels do not come in blocks."""
    if k <= 0:
        return []
    rng = np.random.default_rng(seed)
    norm = {t.strip().lower() for t in exclude_texts}
    usable = pool[~pool["id"].isin(exclude_ids) & ~pool["text"].str.strip().str.lower().isin(norm)]
    quota = {0: k // 2, 1: k // 2}
    if k % 2:
        quota[int(rng.integers(2))] += 1
    chosen = []
    for cls in (0, 1):
        rows = usable.index[usable["y"] == cls].to_numpy()
        if len(rows) < quota[cls]:
            raise InputError(f"the pool has {len(rows)} usable example(s) with label {cls}; {k}-shot needs "
                             f"{quota[cls]} (items being labelled are never used as examples)")
        chosen += list(rng.choice(rows, size=quota[cls], replace=False))
    order = rng.permutation(len(chosen))
    return [(str(usable.at[chosen[i], "text"]), int(usable.at[chosen[i], "y"])) for i in order]


# -- the run --------------------------------------------------------------------------------------------------

@dataclass
class RunReport:
    task: str
    labeler: str
    prompt_hash: str
    backend: str
    url: str
    constrain: str
    shots: int
    n_items: int = 0
    n_skipped: int = 0  # labelled before this run
    n_todo: int = 0
    n_answered: int = 0
    n_invalid: int = 0
    n_positive: int = 0
    n_failed: int = 0
    n_retried: int = 0
    wall_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False
    stop_reason: str | None = None  # a fatal error ended the run: its class and HTTP status (`brief`)
    stored_total: int = 0
    stored_valid: int = 0
    stored_positive: int = 0

    @property
    def items_per_s(self) -> float:
        return self.n_answered / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def invalid_rate(self) -> float:
        return self.n_invalid / self.n_answered if self.n_answered else float("nan")

    @property
    def positive_rate(self) -> float:
        valid = self.n_answered - self.n_invalid
        return self.n_positive / valid if valid else float("nan")

    def latency(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    def rows(self) -> list[dict]:
        """The report as (metric, value) rows: this run, then the task's labels in the store."""
        stored_rate = self.stored_positive / self.stored_valid if self.stored_valid else float("nan")
        return [
            {"metric": "items in input", "value": self.n_items},
            {"metric": "already labelled (skipped)", "value": self.n_skipped},
            {"metric": "answered this run", "value": self.n_answered},
            {"metric": "failed (not stored; retried next run)", "value": self.n_failed},
            {"metric": "items/s", "value": round(self.items_per_s, 2)},
            {"metric": "invalid rate", "value": round(self.invalid_rate, 4)},
            {"metric": "positive rate (valid answers, this run)", "value": round(self.positive_rate, 4)},
            {"metric": "latency p50 ms", "value": round(self.latency(50), 1)},
            {"metric": "latency p90 ms", "value": round(self.latency(90), 1)},
            {"metric": "latency p99 ms", "value": round(self.latency(99), 1)},
            {"metric": "requests retried", "value": self.n_retried},
            {"metric": f"labels stored for task '{self.task}' by '{self.labeler}'", "value": self.stored_total},
            {"metric": f"positive rate of stored valid labels ({self.task})", "value": round(stored_rate, 4)},
        ]

    def table(self) -> pd.DataFrame:
        """The rows for printing: whole numbers as they are, rates and times to 3 decimals, undefined as 'n/a'."""
        shown = [{"metric": r["metric"], "value": r["value"] if isinstance(r["value"], int) else
                  ("n/a" if not math.isfinite(r["value"]) else f"{r['value']:.3f}".rstrip("0").rstrip("."))}
                 for r in self.rows()]
        return pd.DataFrame(shown, dtype=object).astype(str)

    def as_dict(self) -> dict:
        """The report for JSON: undefined numbers (no answers yet) are None, so the file is strict JSON."""
        def finite(value):
            return None if isinstance(value, float) and not math.isfinite(value) else value

        return {"task": self.task, "labeler": self.labeler, "prompt_hash": self.prompt_hash, "backend": self.backend,
                "url": self.url, "constrain": self.constrain, "shots": self.shots, "interrupted": self.interrupted,
                "stopped": self.stop_reason is not None, "stop_reason": self.stop_reason,
                "notes": self.notes, "failures": self.failures[:20],
                **{r["metric"]: finite(r["value"]) for r in self.rows()}}


def check_run_options(concurrency: int, limit: int | None) -> None:
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    if limit is not None and limit < 0:
        raise InputError("--limit must be >= 0")


def label_items(items: pd.DataFrame, *, task: str, store, backend: Backend, prompt: Prompt,
                examples: Sequence[Example] = (), labeler: str | None = None, concurrency: int = 4,
                limit: int | None = None, on_result: Callable[[str, Answer | None, RunReport], None] | None = None,
                on_start: Callable[[RunReport], None] | None = None) -> RunReport:
    """Label every item not yet labelled for (task, labeler); each answer is stored as soon as it comes.

    `items` has columns id and text. `store` is a `mhaudit.tables.label_store.LabelStore`. Raises ServerUnreachable /
    ServerRejected (after storing everything answered so far) when the run cannot go on; a KeyboardInterrupt
    stops submitting, lets the requests in flight finish and store, and is re-raised with `report.interrupted`.
    """
    check_run_options(concurrency, limit)
    backend.prepare()
    labeler = labeler or _labeler_name(backend.model)
    settings = backend.settings()
    digest = prompt.hash(examples, settings)
    report = RunReport(task=task, labeler=labeler, prompt_hash=digest, backend=backend.name, url=backend.url,
                       constrain=backend.constrain, shots=len(examples), n_items=len(items), notes=list(backend.notes))
    done = store.labelled(task, labeler)
    todo = items[~items["id"].astype(str).isin(done)]
    report.n_skipped = len(items) - len(todo)
    if limit is not None:
        todo = todo.iloc[:limit]
    report.n_todo = len(todo)
    if done:
        old = store.frame(task=task, labeler=labeler)
        other = old[(old["prompt_hash"] != digest) & old["item_id"].isin(set(items["id"].astype(str)))]
        if len(other):
            report.notes.append(f"{len(other)} of the skipped items were labelled with a different prompt hash "
                                f"({', '.join(sorted(set(other['prompt_hash'].fillna('none').str[:12])))}); they are "
                                "kept (one label per item, task and labeler); pass another --labeler to label "
                                "them again with this prompt")
    if on_start:
        on_start(report)
    lock = threading.Lock()

    def one(item_id: str, text: str) -> Answer:
        answer = backend.ask(prompt.messages(text, examples))
        store.add([{"item_id": item_id, "task": task, "labeler": labeler, "kind": "llm", "value": answer.value,
                    "raw_answer": answer.raw, "prompt_hash": digest, "latency_ms": round(answer.latency_ms, 3)}])
        return answer

    def settle(future: Future, item_id: str) -> None:
        try:
            answer = future.result()
        except RequestFailed as exc:
            with lock:
                report.n_failed += 1
                report.failures.append(f"{item_id}: {exc}")
            if on_result:
                on_result(item_id, None, report)
            return
        with lock:
            report.n_answered += 1
            report.n_invalid += answer.value is None
            report.n_positive += answer.value == 1
            report.n_retried += answer.attempts > 1
            report.latencies_ms.append(answer.latency_ms)
        if on_result:
            on_result(item_id, answer, report)

    start = time.perf_counter()
    pending: dict[Future, str] = {}
    fatal: BaseException | None = None
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="mhaudit-llm")
    try:
        rows = iter(zip(todo["id"].astype(str), todo["text"].astype(str)))
        while True:
            while fatal is None and len(pending) < 2 * concurrency:
                row = next(rows, None)
                if row is None:
                    break
                pending[pool.submit(one, *row)] = row[0]
            if not pending:
                break
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                item_id = pending.pop(future)
                try:
                    settle(future, item_id)
                except (ServerUnreachable, ServerRejected) as exc:  # stop submitting; drain what is in flight
                    fatal = fatal or exc
    except KeyboardInterrupt:
        report.interrupted = True
        for future, item_id in list(pending.items()):
            if future.cancel():
                pending.pop(future)
        for future, item_id in pending.items():  # in flight: let them finish and store
            try:
                settle(future, item_id)
            except Exception:  # noqa: BLE001 - the run is ending anyway
                pass
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        report.wall_s = time.perf_counter() - start
        _stored(report, store)
    if fatal is not None:
        report.stop_reason = brief(fatal)
        fatal.report = report  # type: ignore[attr-defined]
        raise fatal
    return report


def _stored(report: RunReport, store) -> None:
    frame = store.frame(task=report.task, labeler=report.labeler)
    report.stored_total = len(frame)
    report.stored_valid = int(frame["value"].notna().sum())
    report.stored_positive = int((frame["value"] == 1).sum())


def _labeler_name(model: str | None) -> str:
    """The model name as the labeler; a llama.cpp model id that is a file path is reduced to the file name."""
    name = str(model or "llm")
    return Path(name).name if ("/" in name and name.lower().endswith(".gguf")) else name
