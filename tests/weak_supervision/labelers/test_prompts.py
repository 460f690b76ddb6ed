"""Prompt data files: loading, validation, rendering (zero-/k-shot) and the prompt hash."""

import hashlib
import json

import pytest

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.labelers.prompts import SLOT, available, load_prompt

GOOD = """task = "si"
version = "7"
system = "Answer 1 or 0."
user = "Post: {text}\\nAnswer:"
"""


def test_builtin_prompts_load():
    assert available() == ["mh", "si", "stress"]
    shots = {name: load_prompt(name).default_shots for name in available()}
    assert shots == {"mh": 0, "si": 0, "stress": 3}  # Bluesky zero-shot; TSS baseline 3-shot
    for name in available():
        spec = load_prompt(name)
        assert spec.task == name and spec.version == "1" and spec.user.count(SLOT) == 1 and SLOT not in spec.system
        assert "1 or 0" in spec.user


def test_rendering_zero_and_k_shot(tmp_path):
    spec = load_prompt("si")
    zero = spec.messages("I am fine {really} {label} {0}")
    assert [m["role"] for m in zero] == ["system", "user"]
    assert "I am fine {really} {label} {0}" in zero[1]["content"]  # braces in a post are kept verbatim
    examples = [("ex one", 1), ("ex two", 0), ("ex three", 0)]
    turns = spec.messages("post", examples)
    assert [m["role"] for m in turns] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert [m["content"] for m in turns[2:8:2]] == ["1", "0", "0"]
    assert "ex two" in turns[3]["content"] and "post" in turns[-1]["content"]
    inline = tmp_path / "inline.toml"
    inline.write_text(GOOD + '[shots]\nstyle = "inline"\nheader = "Examples:"\nexample = "P: {text} -> {label}"\n')
    rendered = load_prompt(inline).messages("post", examples)
    assert len(rendered) == 2
    assert rendered[0]["content"] == (
        "Answer 1 or 0.\n\nExamples:\n\nP: ex one -> 1\n\nP: ex two -> 0\n\nP: ex three -> 0"
    )


def test_prompt_hash_by_hand(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(GOOD)
    spec = load_prompt(path)
    settings = {"backend": "openai", "model": "m", "temperature": 0, "seed": 0, "max_tokens": 2, "constrain": "grammar"}
    examples = [("a", 1)]
    payload = {
        "task": "si",
        "version": "7",
        "settings": settings,
        "messages": [
            {"role": "system", "content": "Answer 1 or 0."},
            {"role": "user", "content": "Post: a\nAnswer:"},
            {"role": "assistant", "content": "1"},
            {"role": "user", "content": "Post: {text}\nAnswer:"},
        ],
    }
    expected = hashlib.sha256(
        json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()
    assert spec.hash(examples, settings) == expected
    assert (
        len(
            {
                spec.hash(examples, settings),
                spec.hash([], settings),
                spec.hash(examples, {**settings, "seed": 1}),
                spec.hash([("b", 1)], settings),
            }
        )
        == 4
    )  # examples and settings change the hash
    path.write_text(GOOD.replace('"7"', '"8"'))
    assert load_prompt(path).hash(examples, settings) != expected


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace("{text}", "{post}"), "the user template has no {text} placeholder"),
        (GOOD.replace('"Answer 1 or 0."', '"{text}"'), "the system template contains {text}"),
        (GOOD + "temperature = 0\n", "unknown key 'temperature'"),
        (GOOD.replace('task = "si"\n', ""), "needs a non-empty text value 'task'"),
        (GOOD + '[shots]\nstyle = "columns"\n', "shots.style 'columns' must be one of turns, inline"),
        (GOOD + "[shots]\ndefault = -1\n", "shots.default must be a whole number >= 0"),
        (GOOD + '[shots]\nstyle = "inline"\nexample = "P: {text}"\n', "must contain {text} and {label}"),
        ('task = "si\n', "is not valid TOML"),
    ],
)
def test_bad_prompt_files(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_prompt(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_unknown_prompt_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="unknown prompt 'suicide'; built-in prompts: mh, si, stress"):
        load_prompt("suicide")
    with pytest.raises(InputError, match="no such prompt file"):
        load_prompt(tmp_path / "absent.toml")
