"""A griffe extension for the API reference (mkdocs.yml loads it):

- a field declared `option(default, help=..., rule=...)` (core/options.py) is documented by its help text, and its
  default shows as the default, not as the `option(...)` call;
- a docstring's doctest (`>>>` lines and their output) is shown as a Python console block, not as prose in which
  `[0.5, 1.0]` would read as a Markdown link."""

from __future__ import annotations

import ast

from griffe import Docstring, Extension


class OptionFields(Extension):
    def on_instance(self, *, obj, **_) -> None:
        if obj.docstring and ">>> " in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr, **_) -> None:
        call = getattr(node, "value", None)
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "option"):
            return
        help_text = next((k.value for k in call.keywords if k.arg == "help"), None)
        if help_text is not None and not attr.docstring:
            try:
                attr.docstring = Docstring(ast.literal_eval(help_text), parent=attr)
            except ValueError:  # a help text built at run time: shown as written
                attr.docstring = Docstring(ast.unparse(help_text), parent=attr)
        attr.value = ast.unparse(call.args[0]) if call.args else None


def fence_doctests(text: str) -> str:
    """Each run of doctest lines (from a `>>>` line to the next blank line) inside a ```pycon fence."""
    out, inside = [], False
    for line in text.splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
            out += ["", "```pycon"]
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)
