"""The ``carb:cli`` block of docs/cli.md (:mod:`carb_lib.app.readme`): the command reference,
written from the command line's own definitions.

The command line is given, not imported: :mod:`carb_lib.app.cli` (whose ``carb readme`` writes
the blocks) passes itself, so that the command line imports the README writer and never the
other way round.
"""

from __future__ import annotations

from typing import Any


def _cell(text: object) -> str:
    """One table cell: one line, with the pipe escaped."""
    return (" ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;"))


def cli_reference(command: Any) -> str:
    """``docs/cli.md``'s reference: every command of ``command`` (a :class:`typer.Typer`
    application such as :data:`carb_lib.app.cli.app`, or its click group) with its arguments
    and options, as ``carb COMMAND --help`` shows them (hidden aliases left out)."""
    import typer

    root = typer.main.get_command(command) if isinstance(command, typer.Typer) else command
    out = []
    for name, cmd in root.commands.items():
        if getattr(cmd, "hidden", False):
            continue
        out += [f"### `carb {name}`", "", _cell(cmd.help or ""), ""]
        rows = []
        for p in cmd.params:
            if getattr(p, "hidden", False) or p.name == "help":
                continue
            if p.param_type_name == "argument":
                rows.append(f"| `{p.name.upper()}` (argument) | – | "
                            f"{_cell(getattr(p, 'help', '') or '')} |")
                continue
            flag = " / ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
            if p.is_flag and not p.secondary_opts:
                default = "off" if not p.default else "on"
            elif callable(p.default) or p.default is None or p.default == ():
                default = "–"
            elif p.is_flag:
                default = f"`{(p.opts if p.default else p.secondary_opts)[0]}`"
            else:
                default = f"`{p.default}`"
            rows.append(f"| {flag} | {_cell(default)} | {_cell(p.help or '')} |")
        if rows:
            out += ["| argument or option | default | what |", "|---|---|---|", *rows, ""]
    return "\n".join(out).rstrip("\n") + "\n"
