"""Label mappings: data files (one TOML per mapping, with a header saying where it comes from), loaded by name.

A mapping sends each raw label of a data set to one class, or drops it with a stated reason. Labels the
mapping does not know are an input error, never silently dropped. Classes are ordered as the file lists
them; every later table uses that order.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from mhaudit.core.errors import InputError


@dataclass(frozen=True)
class Mapping:
    name: str
    summary: str
    source: str
    classes: list[str]
    targets: dict[str, str]  # raw label -> class
    dropped: dict[str, str] = field(default_factory=dict)  # raw label -> reason
    priority: list[str] = field(default_factory=list)  # for the multi-label 'priority' policy

    def target(self, raw: str) -> str | None:
        """The class for one raw label, None when the mapping drops it."""
        if raw in self.targets:
            return self.targets[raw]
        if raw in self.dropped:
            return None
        raise KeyError(raw)

    def knows(self, raw: str) -> bool:
        return raw in self.targets or raw in self.dropped

    def then(self, other: Mapping) -> Mapping:
        """Compose: apply self, then other (e.g. a data set's 4-class mapping, then coarsening B)."""
        targets, dropped = {}, dict(self.dropped)
        for raw, cls in self.targets.items():
            if other.knows(cls) and (mapped := other.target(cls)) is not None:
                targets[raw] = mapped
            elif other.knows(cls):
                dropped[raw] = other.dropped[cls]
            else:
                raise InputError(
                    f"mapping '{other.name}' does not know class '{cls}' produced by "
                    f"'{self.name}'; it expects {', '.join(sorted({*other.targets, *other.dropped}))}"
                )
        # Keep self's priority, carried through `other`, then other's own order for what is left.
        carried = [mapped for c in self.priority if other.knows(c) and (mapped := other.target(c))]
        priority = list(dict.fromkeys([*carried, *(other.priority or other.classes)]))
        return Mapping(
            f"{self.name}+{other.name}",
            f"{self.summary}; then {other.summary}",
            f"{self.source}; {other.source}",
            other.classes,
            targets,
            dropped,
            priority,
        )


def _parse(text: str, origin: str) -> Mapping:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc}); expected a mapping file", path=origin) from None
    for key in ("name", "classes", "map"):
        if key not in doc:
            raise InputError(f"missing key '{key}'; a mapping file needs name, classes and [map]", path=origin)

    def strings(value, where: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f'{where} must be a list of strings, e.g. ["a", "b"]', path=origin)
        return value

    classes = strings(doc["classes"], "classes")
    if not isinstance(doc["map"], dict):
        raise InputError("[map] must be a table of class = [raw labels]", path=origin)
    targets: dict[str, str] = {}
    for cls, raws in doc["map"].items():
        raws = strings(raws, f"[map] {cls}")
        if cls not in classes:
            raise InputError(f"[map] names class '{cls}', which is not in classes {classes}", path=origin)
        for raw in raws:
            if raw in targets:
                raise InputError(f"raw label '{raw}' is mapped twice", path=origin)
            targets[str(raw)] = cls
    drop = doc.get("drop", {})
    if not isinstance(drop, dict):
        raise InputError('[drop] must be a table with labels = [...] and reason = "..."', path=origin)
    dropped = {
        raw: str(drop.get("reason", "dropped by the mapping"))
        for raw in strings(drop.get("labels", []), "[drop] labels")
    }
    both = set(targets) & set(dropped)
    if both:
        raise InputError(f"labels both mapped and dropped: {', '.join(sorted(both))}", path=origin)
    return Mapping(
        doc["name"],
        doc.get("summary", ""),
        doc.get("source", ""),
        classes,
        targets,
        dropped,
        list(doc.get("priority", [])),
    )


def available() -> list[Mapping]:
    """Every mapping shipped with mhaudit, sorted by name."""
    files = resources.files(__name__)
    return sorted(
        (_parse(f.read_text("utf-8"), f.name) for f in files.iterdir() if f.name.endswith(".toml")),
        key=lambda m: m.name,
    )


def load(name: str) -> Mapping:
    """A shipped mapping by name, a path to a user's TOML file, or a chain 'a+b' applied left to right."""
    parts = [p for p in name.split("+") if p]
    if len(parts) > 1:
        return functools.reduce(Mapping.then, map(load, parts))
    if name.endswith(".toml") and Path(name).exists():
        try:
            return _parse(Path(name).read_text("utf-8"), name)
        except UnicodeDecodeError:
            raise InputError("is not valid UTF-8; mapping files are UTF-8 TOML", path=name) from None
    by_name = {m.name: m for m in available()}
    if name not in by_name:
        raise InputError(
            f"unknown mapping '{name}'; known: {', '.join(by_name)} "
            "(or a path to a .toml file; see mhaudit data mappings)"
        )
    return by_name[name]
