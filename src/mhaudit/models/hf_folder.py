"""Any Hugging Face sequence classifier saved with plain `save_pretrained`, used as an mhaudit model.

Such a folder (config.json with `id2label`, tokenizer files, safetensors weights; no mhaudit manifest) is
how researchers hold fine-tuned BERT, MentalBERT or RoBERTa classifiers. `load_hf_folder` reads one offline
(`local_files_only`) and names its outputs by the audit's classes: the model's `id2label` names when they
already are the classes, else a label mapping from the registry the data sets use (`tables.corpus.mappings`:
a shipped name, a TOML path or a chain). Whatever is wrong with the folder is one InputError sentence naming
it; a pickle (`pytorch_model.bin`) is loaded only with `trust_pickle=True`, because loading a pickle runs code.
Attributions (saliency, integrated gradients) run on `hf_model`: the network, or `ClassLogits`, the network whose
logits are the classes' in torch where the label plan reorders or merges its outputs.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
from transformers.modeling_outputs import SequenceClassifierOutput

from mhaudit.core.errors import InputError, first_line
from mhaudit.core.threads import thread_budget
from mhaudit.models.builtin import MODEL_FILE
from mhaudit.models.checkpoints import ensure_pad_token, position_limit, quiet_transformers
from mhaudit.models.onnx_runtime import OnnxNetwork
from mhaudit.models.torch_data import longest_first, pad_batch
from mhaudit.models.skops_pipeline import SMALLEST_LOG
from mhaudit.models.torch_runtime import TorchClassifier, in_batches
from mhaudit.tables.corpus import mappings
from mhaudit.weak_supervision.collect.scoring import model_digest

__all__ = ["ClassLogits", "HuggingFaceFolder", "LabelPlan", "is_hf_folder", "load_hf_folder", "plan_labels"]

SOURCE = "huggingface"
CONFIG = "config.json"
SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
RUNTIMES = ("torch", "onnx")  # onnx: ONNX Runtime on CPU, the same float32 logits, faster (models.onnx_runtime)
DEFAULT_MAX_LENGTH = 512  # when neither the positions nor the tokenizer say less
_GENERIC = re.compile(r"LABEL_\d+")


def _read_config(folder: Path) -> dict:
    try:
        config = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no {CONFIG} here; expected a folder written by save_pretrained", path=folder) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{CONFIG} is not valid JSON ({first_line(exc)})", path=folder) from None
    if not isinstance(config, dict):
        raise InputError(f"{CONFIG} is not a JSON object; expected a Hugging Face model config", path=folder)
    return config


def _is_sequence_classifier(config: dict) -> bool:
    architectures = config.get("architectures") or []
    return any(str(a).endswith("ForSequenceClassification") for a in architectures)


def is_hf_folder(folder: str | Path) -> bool:
    """Whether `folder` holds a Hugging Face sequence classifier written by `save_pretrained` and no mhaudit
    manifest: a config.json naming a `...ForSequenceClassification` architecture or having `id2label`."""
    folder = Path(folder)
    if not (folder / CONFIG).is_file() or (folder / MODEL_FILE).exists():
        return False
    try:
        config = _read_config(folder)
    except InputError:
        return False
    return _is_sequence_classifier(config) or "id2label" in config


@dataclass(frozen=True)
class LabelPlan:
    """How the model's outputs become the audit's classes. `labels`: the model's output names in output order;
    `classes`: the audit's classes; `columns`: per output, its class's column."""

    labels: list[str]
    classes: list[str]
    columns: list[int]
    mapping: str | None = None  # the mapping's name, None when the labels are the classes

    @property
    def permutation(self) -> list[int] | None:
        """Per class, its one output, when each class is exactly one output; else None."""
        if sorted(self.columns) != list(range(len(self.classes))):
            return None
        return [self.columns.index(k) for k in range(len(self.classes))]

    def logits(self, outputs: np.ndarray) -> np.ndarray:
        """The classes' logits from the model's raw outputs (n, outputs). One output per class: the outputs
        themselves, reordered. Otherwise the log of each class's summed softmax probability, a zero one as the
        log of the smallest positive float (about -708), so no logit is infinite (as `models.skops_pipeline`)."""
        if (order := self.permutation) is not None:
            return outputs[:, order]
        shifted = outputs - outputs.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        grouped = np.zeros((len(outputs), len(self.classes)), dtype=np.float64)
        for output, column in enumerate(self.columns):
            grouped[:, column] += probs[:, output]
        with np.errstate(divide="ignore"):  # log(0) = -inf, floored
            return np.maximum(np.log(grouped), SMALLEST_LOG)

    def torch_logits(self, outputs: torch.Tensor) -> torch.Tensor:
        """`logits` in torch, differentiable (for attributions): the outputs reordered, or per class the
        log-sum-exp of its outputs' log-softmax, a class no output reaches at the log of the smallest float."""
        if (order := self.permutation) is not None:
            return outputs[:, order]
        log_probs = torch.log_softmax(outputs.float(), dim=-1)
        empty = torch.full((len(outputs),), SMALLEST_LOG, device=outputs.device)
        members = [[o for o, c in enumerate(self.columns) if c == k] for k in range(len(self.classes))]
        return torch.stack([torch.logsumexp(log_probs[:, m], dim=-1) if m else empty for m in members], dim=1)


class ClassLogits(torch.nn.Module):
    """The network as a classifier of the audit's classes, for attributions (`attribution.gradients`): called
    with the network's inputs it returns an output whose `.logits` are `plan.torch_logits` of the network's, so a
    gradient to class k is that of its own output (a permutation) or of its outputs' summed probability; the word
    embeddings are the network's and `config.num_labels` counts the classes."""

    def __init__(self, network: Any, plan: LabelPlan):
        super().__init__()
        self.network, self.plan = network, plan
        self.config = copy.deepcopy(network.config)
        self.config.id2label = dict(enumerate(plan.classes))
        self.config.label2id = {name: k for k, name in enumerate(plan.classes)}
        self.train(network.training)  # a new module is in training mode; handing that back would turn dropout on

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.network.get_input_embeddings()

    def forward(self, **inputs: Any) -> SequenceClassifierOutput:
        return SequenceClassifierOutput(logits=self.plan.torch_logits(self.network(**inputs).logits))


def _output_labels(config: dict, folder: Path, mapped: bool) -> list[str]:
    """The model's output names in output order, from config.json's `id2label` (transformers' LABEL_i when it
    has none and a mapping names those)."""
    raw = config.get("id2label")
    if raw is None:
        if not mapped:
            raise InputError(
                f"{CONFIG} has no id2label, so the model's outputs have no names; name them in {CONFIG} or "
                "give a mapping file that maps LABEL_0, LABEL_1, ... to the audit's classes",
                path=folder,
            )
        count = config.get("num_labels") or 2  # what transformers assumes when config.json names no labels
        return [f"LABEL_{i}" for i in range(int(count))]
    try:
        by_id = {int(k): str(v) for k, v in dict(raw).items()}
    except (TypeError, ValueError):
        raise InputError(f"{CONFIG}'s id2label must map output numbers to names", path=folder) from None
    if sorted(by_id) != list(range(len(by_id))):
        raise InputError(f"{CONFIG}'s id2label must number the outputs 0 to {len(by_id) - 1}", path=folder)
    return [by_id[i] for i in range(len(by_id))]


def plan_labels(labels: list[str], mapping: mappings.Mapping | None, folder: Path) -> LabelPlan:
    """The plan naming `labels` (the model's outputs) by classes: the labels themselves without a mapping
    (InputError for generic LABEL_i names), else the mapping's classes, in its order. Several labels may map to
    one class (their probabilities are summed); a class no label maps to has probability 0. InputError for a
    label the mapping does not map to a class (unknown to it, or dropped: the probabilities would no longer
    be the model's), or fewer than two classes. The same rules as `models.skops_pipeline`."""
    if mapping is None:
        if all(_GENERIC.fullmatch(label) for label in labels):
            raise InputError(
                f"the model's outputs have generic names ({', '.join(labels)}), not the audit's classes; give a "
                "mapping file that maps them to the classes",
                path=folder,
            )
        if len(set(labels)) != len(labels):
            raise InputError(f"{CONFIG}'s id2label names an output twice: {', '.join(labels)}", path=folder)
        plan = LabelPlan(list(labels), list(labels), list(range(len(labels))))
    else:
        uncovered = [label for label in labels if not mapping.knows(label) or mapping.target(label) is None]
        if uncovered:
            raise InputError(
                f"the model's label '{uncovered[0]}' is not mapped to a class by mapping '{mapping.name}' (it maps "
                f"{', '.join(sorted(mapping.targets))}); map it in the mapping's [map]",
                path=folder,
            )
        columns: list[int] = [mapping.classes.index(mapping.targets[label]) for label in labels]
        plan = LabelPlan(list(labels), list(mapping.classes), columns, mapping.name)
    if len(plan.classes) < 2:
        raise InputError(f"the model's outputs name {len(plan.classes)} class(es); a classifier needs two", path=folder)
    return plan


def _weights_format(folder: Path, trust_pickle: bool) -> bool:
    """True for safetensors, False for pickle weights (only with `trust_pickle`); InputError otherwise."""
    if any((folder / name).is_file() for name in SAFE_WEIGHTS):
        return True
    pickles = [name for name in PICKLE_WEIGHTS if (folder / name).is_file()]
    if pickles and not trust_pickle:
        raise InputError(
            f"only pickle weights ({pickles[0]}), refused because loading a pickle runs code; convert them to "
            "safetensors (save_pretrained does by default) or pass --trust-pickle if you trust where they came from",
            path=folder,
        )
    if not pickles:
        raise InputError(
            f"no model weights ({SAFE_WEIGHTS[0]} or {PICKLE_WEIGHTS[0]}); expected a folder written by "
            "save_pretrained",
            path=folder,
        )
    return False


def _check_tokenizer_files(folder: Path) -> None:
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            f"no tokenizer files ({', '.join(TOKENIZER_FILES[:2])}, ...); save the tokenizer beside the model "
            "with tokenizer.save_pretrained(folder)",
            path=folder,
        )


def _mapping(mapping: str | Path | mappings.Mapping | None) -> mappings.Mapping | None:
    if mapping is None or isinstance(mapping, mappings.Mapping):
        return mapping
    return mappings.load(str(mapping))


def _load_network(folder: Path, safetensors: bool, labels: list[str]) -> tuple[Any, Any]:
    """The classifier (eval mode, float32) and its tokenizer, offline; InputError for what cannot load or
    weights that lack a trained head (transformers would fill it with random numbers)."""
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(folder, local_files_only=True)
            config.id2label = dict(enumerate(labels))  # the output count the weights must have
            config.label2id = {label: i for i, label in enumerate(labels)}
            network, info = AutoModelForSequenceClassification.from_pretrained(
                folder, config=config, local_files_only=True, use_safetensors=safetensors, output_loading_info=True
            )
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise InputError(f"cannot load the model ({first_line(exc)})", path=folder) from None
    fresh = sorted(set(info.get("missing_keys", ())) | {k[0] for k in info.get("mismatched_keys", ())})
    if fresh:
        raise InputError(
            f"the weights lack {', '.join(fresh[:3])}{' ...' if len(fresh) > 3 else ''}; expected a trained "
            "sequence classifier, not a base model",
            path=folder,
        )
    return network.float().eval(), tokenizer


class HuggingFaceFolder(TorchClassifier):
    """A Hugging Face sequence classifier from a `save_pretrained` folder, read only: `predict_logits` gives
    (n, classes) logits in `classes` order. Where each class is one of the model's outputs they are its raw
    logits, reordered; otherwise the log of each class's summed softmax probability (`LabelPlan.logits`).
    Inference runs in float32 without gradients, in batches of texts sorted by token count (little padding),
    results in input order, with `threads` torch threads (None: `core.threads.default_threads()`). `runtime`
    "onnx": the same network in ONNX Runtime on CPU (`models.onnx_runtime`), equal logits, about twice as fast.

    `source` ("huggingface"), `folder`, `digest` (SHA-256 over the folder's files, for provenance),
    `labels` (the model's outputs), `plan` (how they become the classes) and `network`, `tokenizer`. `hf_model`
    is what attributions run on (saliency, integrated gradients): the network where its outputs are the classes in
    order, else the network wrapped in `ClassLogits`, whose logits are the classes', so class k's attributions are
    its output's (reordered labels) or its outputs' summed probability's (several labels mapped to one class).
    """

    def __init__(
        self,
        *,
        folder: str | Path,
        mapping: str | Path | mappings.Mapping | None = None,
        trust_pickle: bool = False,
        max_length: int | None = None,
        batch_size: int = 64,
        device: str = "auto",
        threads: int | None = None,
        runtime: str = "torch",
    ):
        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise InputError("is not a folder; expected a Hugging Face model folder", path=folder)
        config, chosen = _read_config(folder), _mapping(mapping)
        if config.get("architectures") and not _is_sequence_classifier(config):
            raise InputError(
                f"{CONFIG} names {', '.join(map(str, config['architectures']))}, not a sequence classifier "
                "(...ForSequenceClassification)",
                path=folder,
            )
        self.plan = plan_labels(_output_labels(config, folder, chosen is not None), chosen, folder)
        _check_tokenizer_files(folder)
        safetensors = _weights_format(folder, trust_pickle)
        network, tokenizer = _load_network(folder, safetensors, self.plan.labels)
        limit = position_limit(network.config, tokenizer) or DEFAULT_MAX_LENGTH
        max_length = min(limit, DEFAULT_MAX_LENGTH) if max_length is None else max_length
        if runtime not in RUNTIMES:
            raise InputError(f"runtime '{runtime}' is not one of {', '.join(RUNTIMES)}", path=folder)
        device = "cpu" if runtime == "onnx" and device == "auto" else device  # ONNX Runtime runs here on CPU
        self._setup("hf-folder", device, max_length=max_length, batch_size=batch_size)
        if max_length > limit:
            raise InputError(f"max_length {max_length} exceeds the {limit} tokens this model takes", path=folder)
        ensure_pad_token(tokenizer, str(folder), self.notes)
        if network.config.pad_token_id is None:  # models that pool the last token find it by the pad id
            network.config.pad_token_id = tokenizer.pad_token_id
        self.network, self.tokenizer = network.to(self.device), tokenizer
        in_order = self.plan.permutation == list(range(len(self.plan.classes)))
        self.hf_model: Any = network if in_order else ClassLogits(network, self.plan)
        self.folder, self.source, self.labels, self.classes = folder, SOURCE, self.plan.labels, self.plan.classes
        self.max_length, self.batch_size, self.threads = max_length, batch_size, threads
        self.name = f"hf:{folder.name}"
        self.onnx = None if runtime == "torch" else OnnxNetwork(network, tokenizer, self.digest, threads, folder)
        self.options = {
            "folder": str(folder),
            "mapping": self.plan.mapping,
            "trust_pickle": bool(trust_pickle and not safetensors),
            "max_length": max_length,
            "batch_size": batch_size,
            "runtime": runtime,
        }
        if not safetensors:
            self.notes.append("loaded pickle weights (pytorch_model.bin) with trust_pickle")

    @functools.cached_property
    def digest(self) -> str:
        """SHA-256 over the folder's files, names and bytes (as the monitor's scores are keyed)."""
        return model_digest(self.folder)

    def predict_logits(self, texts: list[str]) -> np.ndarray:
        """(n, classes) logits in `classes` order, rows in the order of `texts` (see the class)."""
        texts = [str(t) for t in texts]
        outputs = np.empty((len(texts), len(self.labels)), dtype=np.float64)
        if not texts:
            return self.plan.logits(outputs)
        pad_id, side = self.tokenizer.pad_token_id, self.tokenizer.padding_side

        def run(index: np.ndarray) -> None:
            input_ids, mask = pad_batch([ids[i] for i in index], pad_id, side)
            if self.onnx is not None:
                outputs[index] = self.onnx.logits(input_ids.numpy(), mask.numpy())
                return
            logits = self.network(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device)).logits
            outputs[index] = logits.float().cpu().numpy()

        with thread_budget(self.threads), torch.inference_mode():
            ids = self._tokenize(texts)
            in_batches(longest_first(ids), self.batch_size, run, device=self.device, notes=self.notes)
        return self.plan.logits(outputs)

    def encode(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """`input_ids` and `attention_mask` for `texts`, padded to the longest, on `device` (for attribution)."""
        input_ids, mask = pad_batch(
            self._tokenize([str(t) for t in texts]), self.tokenizer.pad_token_id, self.tokenizer.padding_side
        )
        return {"input_ids": input_ids.to(self.device), "attention_mask": mask.to(self.device)}

    def fit(self, train, classes, *, progress=None):
        raise InputError(
            f"{self.name} is a trained Hugging Face model, used as it is; to fine-tune it, train the transformer "
            f"model with checkpoint {self.folder}"
        )

    def save_artifacts(self, directory: Path) -> None:
        raise InputError(f"{self.name} is read from its own folder, {self.folder}; there is nothing to save")

    def load_artifacts(self, directory: Path) -> None:
        raise InputError(f"{self.name} is loaded with load_hf_folder, not from an mhaudit model folder")


def load_hf_folder(
    folder: str | Path,
    *,
    mapping: str | Path | mappings.Mapping | None = None,
    trust_pickle: bool = False,
    **options: Any,
) -> HuggingFaceFolder:
    """The Hugging Face sequence classifier in `folder` (written by `save_pretrained`) as an mhaudit model.

    `mapping`: a label mapping (a shipped name, a TOML path, a chain 'a+b', or a `Mapping`) from the model's
    `id2label` names to the audit's classes, in the mapping's class order; without one the names must be the
    classes (in the model's output order). Several labels mapped to one class have their probabilities summed.
    `trust_pickle`: load pickle weights (pytorch_model.bin), which runs code. `options`: max_length, batch_size,
    device, threads, runtime (`HuggingFaceFolder`). InputError, one sentence naming the folder, when the folder has no
    config.json, no id2label or generic LABEL_i names without a mapping, a label the mapping does not cover,
    no tokenizer files, only pickle weights without `trust_pickle`, or weights without a trained head."""
    return HuggingFaceFolder(folder=folder, mapping=mapping, trust_pickle=trust_pickle, **options)
