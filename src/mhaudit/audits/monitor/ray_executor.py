"""`--executor ray`: the new posts' batches scored on Ray workers, one model copy per worker.

The driver cuts the same batches as the local path and writes each batch's scores itself, in batch order,
one transaction each; a worker only turns a batch of texts into logits. Same batches, same model, so the
same numbers as scoring here (tests/audits/test_monitor.py compares them on a local Ray).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["RayScorer"]


class _Worker:
    def __init__(self, model_dir: str):
        import torch

        from mhaudit.models import load_model

        torch.set_num_threads(1)  # one core per worker: the workers, not torch's threads, share the machine
        self.model = load_model(model_dir)

    def score(self, texts: list[str]):
        return self.model.predict_logits(texts)


class RayScorer:
    """Callable (list of text batches) -> logits per batch, in order; `close()` shuts Ray down."""

    def __init__(self, model_dir: str | Path, workers: int = 2):
        import ray

        if not ray.is_initialized():
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        worker = ray.remote(num_cpus=1)(_Worker)
        self._ray = ray
        self._actors = [worker.remote(str(model_dir)) for _ in range(workers)]

    def __call__(self, batches: list[list[str]]):
        refs = [self._actors[i % len(self._actors)].score.remote(b) for i, b in enumerate(batches)]
        for ref in refs:
            yield self._ray.get(ref)

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._ray.shutdown()
