"""An MkDocs hook: the page docs/reference/cli.md gets every command of the Typer app (`mhaudit.cli:app`), its help,
usage, arguments and options, rendered from the app itself at build time, so the reference cannot drift from the
command line. The page holds the marker line below; everything else on it is written by hand."""

from __future__ import annotations

import html

MARKER = "<!-- the commands, rendered from mhaudit.cli:app by docs/_hooks/cli_reference.py -->"


def on_page_markdown(markdown: str, page, **_) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())


def render() -> str:
    import typer

    from mhaudit.cli import app

    root = typer.main.get_command(app)  # typer's own click (vendored in typer 0.28): its classes, duck-typed here
    context = root.context_class(root, info_name="mhaudit")
    parts = [_command_block(root, context, "mhaudit", level=2, leaf=False)]
    for name, command in root.commands.items():
        if command.hidden:
            continue
        sub = command.context_class(command, info_name=name, parent=context)
        if hasattr(command, "commands"):
            parts.append(_command_block(command, sub, f"mhaudit {name}", level=2, leaf=False))
            for child_name, child in command.commands.items():
                if not child.hidden:
                    child_context = child.context_class(child, info_name=child_name, parent=sub)
                    parts.append(_command_block(child, child_context, f"mhaudit {name} {child_name}", level=3))
        else:
            parts.append(_command_block(command, sub, f"mhaudit {name}", level=2))
    return "\n\n".join(parts)


def _command_block(command, context, path: str, *, level: int, leaf: bool = True) -> str:
    lines = [f"{'#' * level} `{path}` {{ #{path.replace(' ', '-')} }}", "", _text(command.help or "")]
    if leaf or command.params:
        pieces = " ".join(command.collect_usage_pieces(context))
        lines += ["", "```text", f"{path} {pieces}".rstrip(), "```"]
    if not leaf:
        children = [f"[`{path} {n}`](#{path.replace(' ', '-')}-{n})" for n, c in
                    getattr(command, "commands", {}).items() if not c.hidden]
        if children and path != "mhaudit":
            lines += ["", "Commands: " + ", ".join(children) + "."]
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    if arguments:
        lines += ["", "| Argument | Description |", "|---|---|"]
        lines += [f"| `{p.make_metavar(context)}` | {_cell(getattr(p, 'help', None) or '')}"
                  f"{' (required)' if p.required else ''} |" for p in arguments]
    if options:
        lines += ["", "| Option | Description |", "|---|---|"]
        for option in options:
            flags, help_text = option.get_help_record(context) or (", ".join(option.opts), "")
            lines.append(f"| `{flags}` | {_cell(help_text)} |")
    return "\n".join(lines)


def _text(text: str) -> str:
    """A command's help as Markdown paragraphs: click's \\b (no rewrap) marks dropped, markup characters escaped."""
    return _escape(text.replace("\b\n", "").replace("\b", "")).strip()


def _cell(text: str) -> str:
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _escape(text: str) -> str:
    """HTML and emphasis characters escaped outside `code spans` (inside them Markdown shows them as they are)."""
    pieces = text.split("`")
    for i in range(0, len(pieces), 2):
        pieces[i] = html.escape(pieces[i], quote=False).replace("*", "\\*")
    return "`".join(pieces) if len(pieces) % 2 else html.escape(text, quote=False).replace("*", "\\*")
