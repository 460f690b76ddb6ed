"""A Hugging Face Hub id (`org/name`) given where a model folder goes (`--model`), resolved to a local snapshot
folder of the user's Hugging Face cache, which `load_hf_folder` then loads like any folder.

`huggingface_hub.snapshot_download` does the work, as transformers does: the files the loader reads (config,
tokenizer files, safetensors weights; pickle weights only with `trust_pickle`) downloaded once into the cache
(`HF_HOME`, `HF_HUB_CACHE`), read from it afterwards, and from it alone when `HF_HUB_OFFLINE=1`. A local path always
wins: an id is only a text of the form `org/name` that names nothing on disk (`hub_model_id`)."""

from __future__ import annotations

import re
from pathlib import Path

from mhaudit.core.errors import InputError, first_line

# owner and repository as the Hub allows them (letters, digits, '-', '_', '.'; no '--' or '..', not starting with
# or ending with '-' or '.'); a revision is not taken: the cache's main ref is used
_HUB_ID = re.compile(r"^(?!.*(--|\.\.))(?![.-])[\w.-]{0,95}\w/(?![.-])[\w.-]{0,95}\w$")
WEIGHTS = ("*.safetensors", "model.safetensors.index.json")
PICKLE_WEIGHTS = ("pytorch_model*.bin", "pytorch_model.bin.index.json")
CONFIG_AND_TOKENIZER = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "*.model",  # sentencepiece
)


def hub_model_id(path: str | Path) -> str | None:
    """`path` as a Hub id when it is one: of the form `org/name` and no file or folder of that name exists."""
    text = str(path)
    if _HUB_ID.match(text) is None or Path(text).exists():
        return None
    return text


def allowed_files(trust_pickle: bool = False) -> list[str]:
    """The patterns of the files downloaded: what `load_hf_folder` reads, pickle weights only when trusted."""
    return [*CONFIG_AND_TOKENIZER, *WEIGHTS, *(PICKLE_WEIGHTS if trust_pickle else ())]


def hub_folder(model_id: str, *, trust_pickle: bool = False) -> Path:
    """The snapshot folder of Hub model `model_id` in the Hugging Face cache, downloaded first where needed and
    allowed (not with HF_HUB_OFFLINE=1). One sentence (InputError) when it is neither on the Hub nor in the cache."""
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, HFValidationError, RepositoryNotFoundError
    except ImportError:
        raise InputError(
            f"'{model_id}' is not a local path; a Hugging Face Hub id needs huggingface_hub "
            "(pip install 'mhaudit[transformers]')"
        ) from None
    try:
        return Path(snapshot_download(model_id, allow_patterns=allowed_files(trust_pickle)))
    except FileNotFoundError:  # LocalEntryNotFoundError: offline, or the Hub not reached, and not in the cache
        offline = " while offline (HF_HUB_OFFLINE=1)" if constants.HF_HUB_OFFLINE else ", and the Hub was not reached"
        raise InputError(
            f"'{model_id}' is neither a local path nor in the Hugging Face cache ({constants.HF_HUB_CACHE}){offline}; "
            "give the model's folder, or download it once online"
        ) from None
    except GatedRepoError:
        raise InputError(f"'{model_id}' is a gated model on the Hugging Face Hub; log in (hf auth login)") from None
    except (RepositoryNotFoundError, HFValidationError):
        raise InputError(f"'{model_id}' is neither a local path nor a model on the Hugging Face Hub") from None
    except HfHubHTTPError as exc:
        raise InputError(
            f"'{model_id}' could not be downloaded from the Hugging Face Hub ({first_line(exc)})"
        ) from None


def model_files(path: str | Path, *, trust_pickle: bool = False) -> Path:
    """Where a model's files are, to hash them (`model_digest`): a Hub id's snapshot folder, else `path` itself."""
    model_id = hub_model_id(path)
    return Path(path) if model_id is None else hub_folder(model_id, trust_pickle=trust_pickle)
