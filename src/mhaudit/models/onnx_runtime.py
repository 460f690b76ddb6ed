"""A Hugging Face sequence classifier run by ONNX Runtime on CPU: the same float32 network, about twice as fast as
eager torch on 2 cores (docs/benchmarks.md, "Hugging Face inference"), for `HuggingFaceFolder(runtime="onnx")`.

The network is exported once (torch's TorchScript-based ONNX exporter, batch and sequence axes dynamic, plain
attention so ONNX Runtime fuses it) into the user's cache, `$MHAUDIT_CACHE/onnx/` (default `~/.cache/mhaudit`),
never into the model's folder. The file's name is keyed by the folder's digest and everything that shapes the
graph (this format, the opset, torch and transformers versions), and it is written atomically (a temporary file
renamed into place). Each session is checked on a probe batch against the torch network: a file that does not
load or disagrees (damaged, stale) is exported again. Needs the `onnx` extra (onnxruntime, onnx).
"""

from __future__ import annotations

import copy
import hashlib
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from mhaudit.core.errors import InputError
from mhaudit.core.threads import default_threads
from mhaudit.models.torch_data import pad_batch

__all__ = ["OnnxNetwork", "graph_path"]

GRAPH_FORMAT = 1  # bump when the export below changes what the file holds
OPSET = 17
PROBE_TEXTS = ("a short post", "a somewhat longer post, so that the probe batch is padded and masked")
PROBE_TOLERANCE = 1e-4  # on logits; the benchmark's probabilities agree within 1e-7


def cache_root() -> Path:
    return Path(os.environ.get("MHAUDIT_CACHE") or Path.home() / ".cache" / "mhaudit") / "onnx"


def graph_path(digest: str) -> Path:
    """Where the graph of the model whose folder has SHA-256 `digest` is cached."""
    shape = f"{GRAPH_FORMAT}\0{OPSET}\0{torch.__version__}\0{transformers.__version__}\0{digest}"
    return cache_root() / f"{hashlib.sha256(shape.encode()).hexdigest()[:40]}.onnx"


class _Logits(torch.nn.Module):
    """The network called with input_ids and attention_mask by name, returning its logits (what is exported)."""

    def __init__(self, network: Any):
        super().__init__()
        self.network = network

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.network(input_ids=input_ids, attention_mask=attention_mask).logits


def export_graph(network: Any, path: Path) -> None:
    """Export `network` (a transformers sequence classifier, CPU, float32) to `path`, atomically."""
    network = copy.deepcopy(network).cpu().float().eval()
    if hasattr(network, "set_attn_implementation"):
        network.set_attn_implementation("eager")  # the matmul-softmax pattern ONNX Runtime fuses into Attention
    example = (torch.ones((2, 8), dtype=torch.long), torch.ones((2, 8), dtype=torch.long))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    os.close(handle)
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}, "logits": {0: "batch"}}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about Python bools in the attention code
            torch.onnx.export(
                _Logits(network),
                example,
                temporary,
                input_names=["input_ids", "attention_mask"],
                output_names=["logits"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


class OnnxNetwork:
    """`network` (on CPU; InputError naming `folder` otherwise) as an ONNX Runtime session with `threads`
    intra-op threads (None: `core.threads.default_threads()`); `logits(input_ids, mask)` as the network's.
    `path`: the cached graph; `rebuilt`: whether it was exported now (absent, or found damaged or stale)."""

    def __init__(
        self, network: Any, tokenizer: Any, digest: str, threads: int | None = None, folder: Path | None = None
    ):
        device = next(network.parameters()).device
        if device.type != "cpu":
            raise InputError(f"runtime 'onnx' runs on the CPU, not on device {device}", path=folder)
        try:
            import onnxruntime
        except ImportError:
            raise InputError(
                "runtime 'onnx' needs ONNX Runtime; install the onnx extra (pip install 'mhaudit[onnx]')", path=folder
            ) from None
        self._ort = onnxruntime
        self.threads = threads or default_threads()
        self.path, self.rebuilt = graph_path(digest), False
        probe = pad_batch(tokenizer(list(PROBE_TEXTS))["input_ids"], tokenizer.pad_token_id, tokenizer.padding_side)
        with torch.inference_mode():
            expected = network(input_ids=probe[0], attention_mask=probe[1]).logits
        for attempt in range(2):
            if attempt or not self.path.is_file():
                export_graph(network, self.path)
                self.rebuilt = True
            self.session = self._open()
            if self.session is not None:
                found = self.logits(probe[0].numpy(), probe[1].numpy())
                if np.abs(found - expected.float().numpy()).max() <= PROBE_TOLERANCE:  # else stale: export again
                    return
        raise RuntimeError(f"the ONNX graph of this model ({self.path}) does not reproduce its torch logits")

    def _open(self) -> Any:
        """The session on `path`, or None when the file does not load (damaged)."""
        options = self._ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = self.threads, 1
        options.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads free shared cores
        try:
            return self._ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001  # ONNX Runtime's load errors (Fail, InvalidProtobuf, ...) share no base class
            return None

    def logits(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": input_ids.astype(np.int64), "attention_mask": attention_mask.astype(np.int64)}
        return self.session.run(["logits"], feeds)[0]
