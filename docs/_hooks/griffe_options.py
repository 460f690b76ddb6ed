"""A griffe extension for the API reference (mkdocs.yml loads it):

- the fields declared `option(default, help=..., rule=...)` (core/options.py) are one table in their class's
  docstring (name, type, help and default) instead of a heading each, and a default shows as the default, not as the
  `option(...)` call;
- a docstring's doctest (`>>>` lines and their output) is shown as a Python console block, not as prose in which
  `[0.5, 1.0]` would read as a Markdown link."""

from __future__ import annotations

import ast

from griffe import Extension


class OptionFields(Extension):
    def on_instance(self, *, obj, **_) -> None:
        if obj.docstring and ">>> " in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr, **_) -> None:
        call = getattr(node, "value", None)
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "option"):
            return
        help_node = next((k.value for k in call.keywords if k.arg == "help"), None)
        try:
            help_text = ast.literal_eval(help_node) if help_node is not None else ""
        except ValueError:  # a help text built at run time: shown as written
            help_text = ast.unparse(help_node)
        attr.value = ast.unparse(call.args[0]) if call.args else None
        attr.extra["mhaudit"]["option_help"] = help_text

    def on_class_members(self, *, cls, **_) -> None:
        fields = [m for m in cls.members.values() if m.is_attribute and "option_help" in m.extra["mhaudit"]]
        if not fields or cls.docstring is None:
            return
        lines = ["", "", "Attributes:"]
        for field in fields:
            default = "required" if field.value is None else f"`{field.value}`"
            text = " ".join(field.extra["mhaudit"]["option_help"].split())
            lines.append(f"    {field.name} ({field.annotation}): {text} Default: {default}.")
            field.docstring = None  # listed in the table, not under a heading of its own
        cls.docstring.value = cls.docstring.value.rstrip() + "\n".join(lines)


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
