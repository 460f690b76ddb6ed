"""An LLM as a zero-/few-shot binary classifier in the models layer (registered as "llm-zero-shot").

It asks the same prompt as `mhaudit labels llm` through the same backends, but returns scores, so its predictions
enter the audits as a baseline (the CPFE paper's limitation 8). The score of the positive class is the 0/1 mass at
the first answer token where the server returns log-probabilities (a missing answer's mass bounded from above),
else the hard answer; an invalid answer or a failed request scores 0.5, and notes count each. Logits are
[log p(0), log p(1)]. The rules, with worked examples: docs/labels.md, "The LLM as a classifier".

`fit` draws k-shot examples from the training rows when `shots` > 0 (seeded, stratified), else only records the
classes; the examples are saved with the model, so a reloaded model asks the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.models.base import register

EPS = 1e-12


def positive_probability(top: list[tuple[str, float]] | None) -> tuple[float | None, str]:
    """(p(1), how) from one answer token's top alternatives; how is 'logprobs', 'bound' or 'none'.

    'bound': one answer is not listed; its mass is min(smallest listed probability, 1 - listed mass)."""
    from mhaudit.weak_supervision.labelers.llm_answers import answer_logprobs

    lp = answer_logprobs(top)
    if "0" in lp and "1" in lp:
        return float(1.0 / (1.0 + np.exp(lp["0"] - lp["1"]))), "logprobs"
    if not lp or top is None:
        return None, "none"
    listed = np.array([float(logprob) for _, logprob in top if logprob is not None and np.isfinite(logprob)])
    rest = -np.expm1(np.logaddexp.reduce(listed))  # 1 - sum of the listed probabilities
    missing = min(float(np.exp(listed.min())), max(0.0, float(rest)))
    present = float(np.exp(next(iter(lp.values()))))
    p_present = present / (present + missing)
    return (p_present if "1" in lp else 1.0 - p_present), "bound"


@register("llm-zero-shot")
class LLMClassifier:
    """Binary classifier from an LLM server's answer (and its 0/1 log-probabilities)."""

    def __init__(
        self,
        *,
        backend: str = "openai",
        url: str | None = None,
        model: str | None = None,
        task: str = "mh",
        prompt: str | None = None,
        shots: int = 0,
        seed: int = 0,
        top_logprobs: int = 20,
        constrain: str = "auto",
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        concurrency: int = 1,
    ):
        self.params: dict = dict(
            backend=backend,
            url=url,
            model=model,
            task=task,
            prompt=prompt or task,
            shots=shots,
            seed=seed,
            top_logprobs=top_logprobs,
            constrain=constrain,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            concurrency=concurrency,
        )
        self.classes: list[str] = []
        self.examples: list[tuple[str, int]] = []
        self.notes: list[str] = []
        self.prompt_hash: str | None = None

    def fit(self, train: pd.DataFrame, classes: list[str], *, progress: Progress | None = None) -> LLMClassifier:
        """Keep the classes and draw the k-shot examples (`progress` is not told anything: nothing is asked)."""
        if len(classes) != 2:
            raise InputError(
                f"llm-zero-shot is a binary classifier (answers 1 or 0); got {len(classes)} classes "
                f"({', '.join(classes)}); map the corpus to two classes, the positive one last"
            )
        self.classes = list(classes)
        self.examples = []
        if self.params["shots"]:
            from mhaudit.weak_supervision.labelers.llm_items import draw_examples

            rows = train[train["split"] == "train"] if "split" in train else train
            pool = pd.DataFrame(
                {
                    "id": rows["id"].astype(str) if "id" in rows else [str(i) for i in range(len(rows))],
                    "text": rows["text"].astype(str).to_numpy(),
                    "y": (rows["label"].astype(str) == self.classes[1]).astype(int).to_numpy(),
                }
            )
            self.examples = draw_examples(pool, int(self.params["shots"]), seed=int(self.params["seed"]))
        return self

    def _backend(self):
        from mhaudit.weak_supervision.labelers.llm_backends import make_backend
        from mhaudit.weak_supervision.labelers.llm_retry import RetryPolicy

        p = self.params
        return make_backend(
            p["backend"],
            p["url"],
            p["model"],
            timeout=p["timeout"],
            seed=p["seed"],
            policy=RetryPolicy(p["retries"], p["backoff"]),
            constrain=p["constrain"],
            top_logprobs=p["top_logprobs"],
            concurrency=p["concurrency"],
        )

    def predict_proba_positive(self, texts: list[str]) -> tuple[np.ndarray, list[str]]:
        """p(positive) per text and how each was obtained ('logprobs', 'bound', 'hard', 'invalid', 'failed')."""
        import threading
        import warnings
        from concurrent.futures import ThreadPoolExecutor

        from mhaudit.weak_supervision.labelers.llm_retry import RequestFailed, ServerUnreachable, brief
        from mhaudit.weak_supervision.labelers.prompts import load_prompt

        if not self.classes:
            raise InputError("llm-zero-shot: call fit(train, classes) first (it fixes the class order)")
        prompt = load_prompt(self.params["prompt"])
        backend = self._backend()
        gone = threading.Event()  # the server went away mid-run: ask no more
        failures: list[str] = []  # per failed item: what the report may keep (no server body)
        unsent = [0]
        lock = threading.Lock()

        def ask(text: str):
            if gone.is_set():
                with lock:
                    unsent[0] += 1
                return None
            try:
                return backend.ask(prompt.messages(text, self.examples))
            except ServerUnreachable as exc:
                gone.set()
                reason = brief(exc)
            except RequestFailed as exc:
                reason = exc.reason  # the status code or exception class, never the server's body
            with lock:
                failures.append(reason)
            return None

        try:
            backend.prepare()  # unreachable at the start: ServerUnreachable, one sentence
            self.prompt_hash = prompt.hash(self.examples, backend.settings())
            with ThreadPoolExecutor(max_workers=max(1, int(self.params["concurrency"]))) as pool:
                answers = list(pool.map(ask, list(texts)))
        finally:
            backend.close()
        n_failed = sum(a is None for a in answers)
        if answers and n_failed == len(answers):
            first = failures[0] if failures else "the server could not be reached"
            raise InputError(
                f"all {len(answers)} requests to the {backend.name} server at {backend.url} failed "
                f"(first: {first}); no scores were written, check the server and its log"
            )
        probs, hows = np.empty(len(answers)), []
        for i, answer in enumerate(answers):
            p, how = (0.5, "failed") if answer is None else positive_probability(answer.top_logprobs)
            if p is None and answer is not None:
                p, how = (0.5, "invalid") if answer.value is None else (float(answer.value), "hard")
            probs[i] = p
            hows.append(how)
        self.notes = _notes(hows, backend.notes)
        if failures or unsent[0]:
            note = _failure_note(len(hows), hows.count("failed"), failures[0] if failures else None, unsent[0])
            self.notes.insert(0, note)
            warnings.warn(f"llm-zero-shot: {note}", stacklevel=2)  # predict / run print no notes
        return probs, hows

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        p1, _ = self.predict_proba_positive(texts)
        p1 = np.clip(p1, EPS, 1 - EPS)
        return np.log(np.column_stack([1 - p1, p1]))

    def save_artifacts(self, directory: Path) -> None:
        (directory / "llm-examples.json").write_text(json.dumps({"examples": self.examples}, ensure_ascii=False))

    def load_artifacts(self, directory: Path) -> None:
        data = json.loads((directory / "llm-examples.json").read_text())
        self.examples = [(str(t), int(y)) for t, y in data["examples"]]


def _failure_note(n: int, failed: int, first: str | None, unsent: int) -> str:
    """How many items got no answer, with the first failure's status code / exception class only."""
    if unsent:
        detail = (
            f"({failed - unsent} after their retries, first: {first}; {unsent} not sent: the server could not "
            "be reached any more)"
        )
    else:
        detail = f"after their retries (first: {first})"
    return f"{failed} of {n} requests failed {detail}; scored 0.5 like an invalid answer"


_HOW_NOTES = {  # what "<count> of <n> " is followed by in the notes
    "bound": "scores: only one of 0/1 was among the top log-probabilities; the other's mass was bounded by "
    "min(smallest listed probability, 1 - listed mass), an upper bound",
    "hard": "scores are hard 0/1 answers (the backend returned no log-probabilities for 0 or 1)",
    "invalid": "answers were not 0 or 1 and had no log-probabilities; scored 0.5",
}


def _notes(hows: list[str], backend_notes: list[str]) -> list[str]:
    return [*backend_notes, *(f"{hows.count(h)} of {len(hows)} {says}" for h, says in _HOW_NOTES.items() if h in hows)]
