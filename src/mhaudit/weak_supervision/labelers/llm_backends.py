"""LLM servers: one client per backend that asks for 1 or 0 and applies the retry policy (`llm_retry`).

Two backends speak HTTP through httpx: `OllamaBackend` (Ollama's `/api/chat`; model `llama3:8b` as in the Bluesky
paper) and `OpenAIBackend` (any OpenAI-compatible `/v1/chat/completions`). Both decode at temperature 0 with a
seed and 2 tokens, and constrain the output to 0/1 where the server can (docs/labels.md, the backends' table):
Ollama by a JSON-schema `format`, llama.cpp by a GBNF `grammar`, vLLM by `guided_choice`; `constrain="auto"`
picks by the `owned_by` field of `/v1/models`.
"""

from __future__ import annotations

import time

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.labelers.llm_answers import CHOICES, Answer, first_answer_token, parse_answer
from mhaudit.weak_supervision.labelers.llm_retry import RequestFailed, RetryPolicy, ServerRejected, ServerUnreachable

BACKENDS = ("openai", "ollama")
CONSTRAINTS = ("auto", "grammar", "choice", "schema", "none")
DEFAULT_URLS = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8080"}
DEFAULT_MODELS = {"ollama": "llama3:8b", "openai": None}  # openai: the server's first model
GRAMMAR = 'root ::= "0" | "1"'
SCHEMA = {"type": "integer", "enum": [0, 1]}


class Backend:
    """One LLM server. Thread-safe: one httpx client with a connection pool shared by the workers."""

    name = "?"
    endpoint = "?"  # the chat path

    def __init__(
        self,
        url: str | None = None,
        model: str | None = None,
        *,
        timeout: float = 60.0,
        policy: RetryPolicy = RetryPolicy(),
        seed: int = 0,
        max_tokens: int = 2,
        constrain: str = "auto",
        top_logprobs: int = 0,
        api_key: str | None = None,
        concurrency: int = 4,
    ):
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
        self._client = httpx.Client(
            timeout=timeout, headers=headers, limits=httpx.Limits(max_connections=max(concurrency, 1) + 2)
        )
        self._sleep = time.sleep  # tests may replace it
        self._prepared = False

    # what the prompt hash covers
    def settings(self) -> dict:
        return {
            "backend": self.name,
            "model": self.model,
            "temperature": 0,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "constrain": self.constrain,
        }

    def close(self) -> None:
        self._client.close()

    # -- HTTP with the retry policy ----------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: dict | None = None) -> tuple[dict, int, float]:
        """(JSON body, attempts, latency ms of the successful try) or an exception after the policy."""
        httpx = self._httpx
        url = f"{self.url}{path}"
        last, last_status, unreachable = "", None, True
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
                raise ServerRejected(
                    f"{url} answered HTTP {status}: {_snippet(response)}{self._hint(status)}", status=status
                )
            if status >= 400:
                raise RequestFailed(f"{url} answered HTTP {status}", status=status, reason=f"HTTP {status}")
            try:
                return response.json(), attempt + 1, latency
            except ValueError:
                raise RequestFailed(
                    f"{url} answered HTTP {status} with a body that is not JSON ({len(response.content)} bytes)",
                    status=status,
                    reason=f"HTTP {status} with a body that is not JSON",
                ) from None
        if unreachable:
            raise ServerUnreachable(
                f"cannot reach the {self.name} server at {self.url}: {last}; tried "
                f"{self.policy.retries + 1} times ({self.policy.describe()}). Is it running, "
                "and is --url right?"
            )
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
        body, attempts, latency = self._request("POST", self.endpoint, self.payload(messages))
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


class OpenAIBackend(Backend):
    """`/v1/chat/completions` of llama.cpp, llama-cpp-python, vLLM or any OpenAI-compatible server."""

    name = "openai"
    endpoint = "/v1/chat/completions"

    def __init__(self, url: str | None = None, model: str | None = None, **kwargs):
        super().__init__((url or DEFAULT_URLS["openai"]).rstrip("/").removesuffix("/v1"), model, **kwargs)

    def _prepare(self) -> None:
        answer = ""
        try:
            body, _, _ = self._request("GET", "/v1/models")
            models = [m for m in body.get("data", []) if isinstance(m, dict)] if isinstance(body, dict) else []
        except (RequestFailed, ServerRejected) as exc:  # some servers have no /v1/models
            models, answer = [], str(exc)
        if self.model is None:
            if not models:  # say what the server sent: an error, a body that is not JSON, or an empty list
                said = f": {answer}" if answer else " (an empty list)"
                raise InputError(f"the server at {self.url} gave no model at /v1/models{said}; pass --model")
            self.model = str(models[0].get("id"))
        if self.constrain == "auto":
            owner = {str(m.get("owned_by", "")).lower() for m in models}
            if "vllm" in owner:
                self.constrain = "choice"
            elif owner & {"me", "llamacpp", "llama.cpp"}:  # llama-cpp-python says "me", llama.cpp "llamacpp"
                self.constrain = "grammar"
            else:
                self.constrain = "none"
                self.notes.append(
                    f"the server at {self.url} is neither llama.cpp nor vLLM by its /v1/models "
                    f"(owned_by {sorted(owner) or 'missing'}), so the output is not constrained "
                    f"beyond max_tokens {self.max_tokens}; pass --constrain grammar|choice if it "
                    "supports one"
                )
        if self.constrain == "schema":
            raise InputError("--constrain schema is for the Ollama backend; use grammar (llama.cpp) or choice (vLLM)")

    def payload(self, messages: list[dict]) -> dict:
        payload: dict = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "stream": False,
        }
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
            raise RequestFailed(
                f"{self.url}: the answer is not a chat completion (no choices[0].message)",
                reason="the answer is not a chat completion",
            ) from None
        logprobs = choice.get("logprobs") or {}
        return str(raw), first_answer_token(logprobs.get("content") if isinstance(logprobs, dict) else None)


class OllamaBackend(Backend):
    """Ollama's `/api/chat` (non-streaming)."""

    name = "ollama"
    endpoint = "/api/chat"

    def _hint(self, status: int) -> str:
        return f" (is the model pulled? `ollama pull {self.model}`)" if status == 404 else ""

    def _prepare(self) -> None:
        try:
            body, _, _ = self._request("GET", "/api/tags")
        except RequestFailed as exc:
            raise InputError(f"the Ollama server at {self.url} did not list its models ({exc})") from None
        names = {str(m.get(key)) for m in body.get("models", []) if isinstance(m, dict) for key in ("name", "model")}
        if self.model not in names and f"{self.model}:latest" not in names:
            raise ServerRejected(
                f"the Ollama server at {self.url} has no model '{self.model}' "
                f"(it has {', '.join(sorted(names)) or 'none'}); run `ollama pull {self.model}` "
                "or pass --model"
            )
        if self.constrain == "auto":
            self.constrain = "none"  # the paper's set-up: the prompt and num_predict only
        if self.constrain in ("grammar", "choice"):
            raise InputError(
                f"--constrain {self.constrain} is for OpenAI-compatible servers; Ollama takes "
                "--constrain schema (structured outputs) or none"
            )

    def payload(self, messages: list[dict]) -> dict:
        payload: dict = {
            "model": self.model,
            "messages": messages,
            "stream": False,
            "options": {"temperature": 0, "seed": self.seed, "num_predict": self.max_tokens},
        }
        if self.constrain == "schema":
            payload["format"] = SCHEMA
        if self.top_logprobs:
            payload["logprobs"], payload["top_logprobs"] = True, self.top_logprobs
        return payload

    def parse(self, body: dict) -> tuple[str, list[tuple[str, float]] | None]:
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, dict):
            raise RequestFailed(
                f"{self.url}: the answer is not an Ollama chat response (no 'message')",
                reason="the answer is not an Ollama chat response",
            )
        return str(message.get("content") or ""), first_answer_token(body.get("logprobs"))


def make_backend(backend: str, url: str | None = None, model: str | None = None, **kwargs) -> Backend:
    if backend not in BACKENDS:
        raise InputError(f"--backend '{backend}' must be one of {', '.join(BACKENDS)}")
    return (OpenAIBackend if backend == "openai" else OllamaBackend)(url, model, **kwargs)
