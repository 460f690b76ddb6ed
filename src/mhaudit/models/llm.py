"""An LLM as a zero-/few-shot binary classifier in the models layer (registered as "llm-zero-shot").

It asks the same prompt as `mhaudit label llm` (mhaudit.label.prompts) through the same backends, but
returns scores so its predictions enter the predictions table and the audits as a baseline (the CPFE
paper's "zero-shot LLM baseline", its limitation 8).

Scores: where the backend returns log-probabilities (OpenAI-compatible `top_logprobs`; Ollama's `logprobs`)
the score of the positive class is the 0/1 mass renormalised at the first answer token:

    p(1) = exp(lp_1) / (exp(lp_0) + exp(lp_1))

with lp_a the log-sum-exp over the listed alternatives that are `a` after stripping whitespace. When only
one of 0/1 is among the top alternatives, the other's log-probability is taken as the smallest listed one
(an upper bound on its mass, so the score is not over-confident) and a note says how often. Without any
log-probabilities the score is the hard answer (p = 1 or 0, clipped at 1e-12 like imported probabilities),
and an invalid answer scores 0.5; notes count both. Logits are the log-probabilities [log p(0), log p(1)]
in the classes' order (the negative class first, as the binary mappings order them).

`fit` draws k-shot examples from the training rows when `shots` > 0 (seeded, stratified), else does
nothing but record the classes; the examples are saved with the model so a reloaded model asks the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.errors import InputError
from mhaudit.models.base import register

EPS = 1e-12


def positive_probability(top: list[tuple[str, float]] | None) -> tuple[float | None, str]:
    """(p(1), how) from one answer token's top alternatives; how is 'logprobs', 'bound' or 'none'."""
    from mhaudit.label.llm import answer_logprobs

    lp = answer_logprobs(top)
    if "0" in lp and "1" in lp:
        how = "logprobs"
    elif lp and top:
        floor = min(float(l) for _, l in top)
        lp = {"0": lp.get("0", floor), "1": lp.get("1", floor)}
        how = "bound"
    else:
        return None, "none"
    return float(1.0 / (1.0 + np.exp(lp["0"] - lp["1"]))), how


@register("llm-zero-shot")
class LLMClassifier:
    """Binary classifier from an LLM server's answer (and its 0/1 log-probabilities)."""

    def __init__(self, *, backend: str = "openai", url: str | None = None, model: str | None = None,
                 task: str = "mh", prompt: str | None = None, shots: int = 0, seed: int = 0, top_logprobs: int = 20,
                 constrain: str = "auto", timeout: float = 60.0, retries: int = 3, backoff: float = 0.5,
                 concurrency: int = 1):
        self.params = dict(backend=backend, url=url, model=model, task=task, prompt=prompt or task, shots=shots,
                           seed=seed, top_logprobs=top_logprobs, constrain=constrain, timeout=timeout,
                           retries=retries, backoff=backoff, concurrency=concurrency)
        self.classes: list[str] = []
        self.examples: list[tuple[str, int]] = []
        self.notes: list[str] = []
        self.prompt_hash: str | None = None

    def fit(self, train: pd.DataFrame, classes: list[str]) -> LLMClassifier:
        if len(classes) != 2:
            raise InputError(f"llm-zero-shot is a binary classifier (answers 1 or 0); got {len(classes)} classes "
                             f"({', '.join(classes)}); map the corpus to two classes, the positive one last")
        self.classes = list(classes)
        self.examples = []
        if self.params["shots"]:
            from mhaudit.label.llm import draw_examples

            rows = train[train["split"] == "train"] if "split" in train else train
            pool = pd.DataFrame({"id": rows["id"].astype(str) if "id" in rows else [str(i) for i in range(len(rows))],
                                 "text": rows["text"].astype(str).to_numpy(),
                                 "y": (rows["label"].astype(str) == self.classes[1]).astype(int).to_numpy()})
            self.examples = draw_examples(pool, int(self.params["shots"]), seed=int(self.params["seed"]))
        return self

    def _backend(self):
        from mhaudit.label.llm import RetryPolicy, make_backend

        p = self.params
        return make_backend(p["backend"], p["url"], p["model"], timeout=p["timeout"], seed=p["seed"],
                            policy=RetryPolicy(p["retries"], p["backoff"]), constrain=p["constrain"],
                            top_logprobs=p["top_logprobs"], concurrency=p["concurrency"])

    def predict_proba_positive(self, texts: list[str]) -> tuple[np.ndarray, list[str]]:
        """p(positive) per text and how each was obtained ('logprobs', 'bound', 'hard', 'invalid')."""
        from concurrent.futures import ThreadPoolExecutor

        from mhaudit.label.prompts import load_prompt

        if not self.classes:
            raise InputError("llm-zero-shot: call fit(train, classes) first (it fixes the class order)")
        prompt = load_prompt(self.params["prompt"])
        backend = self._backend()
        try:
            backend.prepare()
            self.prompt_hash = prompt.hash(self.examples, backend.settings())
            with ThreadPoolExecutor(max_workers=max(1, int(self.params["concurrency"]))) as pool:
                answers = list(pool.map(lambda t: backend.ask(prompt.messages(t, self.examples)), list(texts)))
        finally:
            backend.close()
        probs, hows = np.empty(len(answers)), []
        for i, answer in enumerate(answers):
            p, how = positive_probability(answer.top_logprobs)
            if p is None:
                p, how = (0.5, "invalid") if answer.value is None else (float(answer.value), "hard")
            probs[i] = p
            hows.append(how)
        self.notes = _notes(hows, backend.notes)
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


def _notes(hows: list[str], backend_notes: list[str]) -> list[str]:
    n = len(hows)
    notes = list(backend_notes)
    counts = {h: hows.count(h) for h in ("bound", "hard", "invalid")}
    if counts["bound"]:
        notes.append(f"{counts['bound']} of {n} scores: only one of 0/1 was among the top log-probabilities; the "
                     "other's mass was taken as the smallest listed one (an upper bound)")
    if counts["hard"]:
        notes.append(f"{counts['hard']} of {n} scores are hard 0/1 answers (the backend returned no log-probabilities "
                     "for 0 or 1)")
    if counts["invalid"]:
        notes.append(f"{counts['invalid']} of {n} answers were not 0 or 1 and had no log-probabilities; scored 0.5")
    return notes
