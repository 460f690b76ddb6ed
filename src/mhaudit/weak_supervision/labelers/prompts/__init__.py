"""LLM labelling prompts: one TOML data file per task (si, mh, stress), loaded by name or path.

A prompt file has `task`, `version`, `description`, a `system` and a `user` template, and a `[shots]` table
(`default` k, `style` "turns" or "inline", and for inline a `header` and an `example` template); docs/labels.md,
"Prompts and hashes". The post goes where the user template says `{text}` by plain substitution, so a post
containing braces cannot break the template. `Prompt.hash` covers the rendered messages (`{text}` left as the
slot, k-shot examples included) and the model settings: two labels with the same hash were asked exactly the
same question the same way.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mhaudit.core.errors import InputError

SLOT = "{text}"
LABEL_SLOT = "{label}"
STYLES = ("turns", "inline")
_TOP_KEYS = {"task", "version", "description", "system", "user", "shots"}
_SHOT_KEYS = {"default", "style", "header", "example"}

Example = tuple[str, int]  # (text, 0/1)


@dataclass(frozen=True)
class Prompt:
    task: str
    version: str
    description: str
    system: str
    user: str
    default_shots: int = 0
    style: str = "turns"
    header: str = "Examples:"
    example: str = "Post: {text}\nAnswer: {label}"
    source: str = ""

    def messages(self, text: str, examples: Sequence[Example] = ()) -> list[dict[str, str]]:
        """The chat messages for one post (k-shot examples first, as the style says)."""
        system = self.system
        turns: list[dict[str, str]] = []
        if examples and self.style == "inline":
            shown = "\n\n".join(
                self.example.replace(SLOT, ex_text).replace(LABEL_SLOT, str(int(label))) for ex_text, label in examples
            )
            system = f"{system}\n\n{self.header}\n\n{shown}"
        elif examples:
            for ex_text, label in examples:
                turns += [
                    {"role": "user", "content": self.user.replace(SLOT, ex_text)},
                    {"role": "assistant", "content": str(int(label))},
                ]
        return [
            {"role": "system", "content": system},
            *turns,
            {"role": "user", "content": self.user.replace(SLOT, text)},
        ]

    def hash(self, examples: Sequence[Example] = (), settings: dict | None = None) -> str:
        """SHA-256 (hex) of the rendered template with its examples and the model settings."""
        payload = {
            "task": self.task,
            "version": self.version,
            "messages": self.messages(SLOT, examples),
            "settings": settings or {},
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def available() -> list[str]:
    """The built-in prompt names (one per task)."""
    return sorted(p.name[:-5] for p in resources.files(__package__).iterdir() if p.name.endswith(".toml"))


def _file(name_or_path: str | Path) -> tuple[str, str]:
    """(text, where) of a built-in prompt name or a TOML path."""
    text = str(name_or_path)
    if text in available():
        return resources.files(__package__).joinpath(f"{text}.toml").read_text(encoding="utf-8"), f"{text}.toml"
    path = Path(name_or_path)
    if path.suffix.lower() != ".toml" and not path.exists():
        raise InputError(
            f"unknown prompt '{text}'; built-in prompts: {', '.join(available())} (or give a path to your own .toml)"
        )
    if not path.is_file():
        raise InputError("no such prompt file", path=path)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text; a prompt file is TOML", path=path) from None


def load_prompt(name_or_path: str | Path) -> Prompt:
    """Load and validate a prompt by task name (built-in) or path. Every problem is an InputError naming the file."""
    text, where = _file(name_or_path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"is not valid TOML ({exc})", path=where) from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise InputError(f"unknown key '{unknown[0]}'; a prompt file has {', '.join(sorted(_TOP_KEYS))}", path=where)
    for key in ("task", "version", "system", "user"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise InputError(f"needs a non-empty text value '{key}'", path=where)
    if SLOT not in data["user"]:
        raise InputError(f"the user template has no {SLOT} placeholder; the post is inserted there", path=where)
    if SLOT in data["system"]:
        raise InputError(f"the system template contains {SLOT}; put the post in the user template only", path=where)
    shots = data.get("shots", {})
    if not isinstance(shots, dict):
        raise InputError("'shots' must be a table ([shots])", path=where)
    unknown = sorted(set(shots) - _SHOT_KEYS)
    if unknown:
        raise InputError(f"unknown key 'shots.{unknown[0]}'; [shots] has {', '.join(sorted(_SHOT_KEYS))}", path=where)
    default = shots.get("default", 0)
    if not isinstance(default, int) or isinstance(default, bool) or default < 0:
        raise InputError(f"shots.default must be a whole number >= 0, not {default!r}", path=where)
    style = shots.get("style", "turns")
    if style not in STYLES:
        raise InputError(f"shots.style '{style}' must be one of {', '.join(STYLES)}", path=where)
    example = shots.get("example", Prompt.example)
    if style == "inline" and (SLOT not in example or LABEL_SLOT not in example):
        raise InputError(f"shots.example must contain {SLOT} and {LABEL_SLOT} for the inline style", path=where)
    return Prompt(
        task=data["task"],
        version=str(data["version"]),
        description=str(data.get("description", "")),
        system=data["system"],
        user=data["user"],
        default_shots=default,
        style=style,
        header=str(shots.get("header", Prompt.header)),
        example=example,
        source=where,
    )
