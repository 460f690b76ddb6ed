"""Per-person secret tokens for the annotation app, stored hashed beside the label store.

A token is 32 random bytes (URL-safe base64); the file keeps only its SHA-256, so a copy of the file
does not let anyone in. A token is printed once, when it is issued; running `mhaudit annotate` again
keeps the existing tokens (the links handed out stay valid) unless `--new-tokens` issues new ones.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.tables.io import atomic_path
from mhaudit.tables.label_store import now

FORMAT = "mhaudit-annotate-tokens"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
RESERVED = ("consensus",)


@dataclass(frozen=True)
class Person:
    name: str
    role: str  # annotator | adjudicator


def tokens_path(labels_path: str | Path) -> Path:
    """The token file of a label store: `labels.sqlite` -> `labels.sqlite.tokens.json`."""
    labels_path = Path(labels_path)
    return labels_path.with_name(labels_path.name + ".tokens.json")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    if not NAME.match(name or ""):
        raise InputError(
            f"person name {name!r} must be 1-64 letters, digits, '_', '.', '@' or '-' "
            "(it becomes the labeler name in the labels table)"
        )
    if name.lower() in RESERVED:
        raise InputError(f"'{name}' is reserved for adjudicated labels; choose another annotator name")
    return name


class TokenFile:
    """The hashed tokens of everyone who ever got a link for one label store."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, dict[str, str]] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(
                    f"cannot read the token file ({exc}); delete it and rerun with --new-tokens", path=self.path
                ) from None
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("people"), dict):
                raise InputError("is not an mhaudit annotation token file", path=self.path)
            self.entries = data["people"]

    @staticmethod
    def _key(person: Person) -> str:
        return f"{person.role}:{person.name}"

    def issue(self, people: list[Person], *, rotate: bool = False) -> dict[Person, str | None]:
        """A new token for each person without one (or for everyone when `rotate`); None means unchanged. Writes
        the file (mode 0600) when anything changed."""
        issued = {
            person: None if self._key(person) in self.entries and not rotate else secrets.token_urlsafe(32)
            for person in people
        }
        for person, token in issued.items():
            if token is not None:
                self.entries[self._key(person)] = {
                    "name": person.name,
                    "role": person.role,
                    "sha256": digest(token),
                    "issued_at": now(),
                }
        if any(token is not None for token in issued.values()):
            self.save()
        return issued

    def issued_at(self, person: Person) -> str | None:
        entry = self.entries.get(self._key(person))
        return entry.get("issued_at") if entry else None

    def save(self) -> None:
        payload = json.dumps({"format": FORMAT, "version": 1, "people": self.entries}, indent=2)
        with atomic_path(self.path, mode=0o600) as tmp:  # token hashes: the owner only
            tmp.write_text(payload + "\n", encoding="utf-8")

    def resolver(self, people: list[Person]) -> Callable[[str], Person | None]:
        """Look tokens up among these people only (someone not named in this run has no access)."""
        hashes = {}
        for person in people:
            entry = self.entries.get(self._key(person))
            if entry is None:
                raise InputError(f"{person.role} '{person.name}' has no token yet", path=self.path)
            hashes[entry["sha256"]] = person

        def resolve(token: str) -> Person | None:
            if not token or len(token) > 200:
                return None
            presented = digest(token)
            found = None
            for stored, person in hashes.items():  # constant time per entry; a handful of people
                if hmac.compare_digest(stored, presented):
                    found = person
            return found

        return resolve
