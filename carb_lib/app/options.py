"""A command's options as one object, declared once: in the command's typer signature.

:func:`options_command` turns a typer command whose body is ``...`` into one that builds a
frozen, keyword-only dataclass of its parsed options (:func:`options_class`: one field per
parameter, with its type and its typer default) and hands it to the function that does the
work (``run(opts, echo=...)``). The dataclass is the command's ``Options`` attribute, so Python
code builds the same object the command line does:

Examples
--------
>>> from carb_lib.app.cli import FitOptions
>>> opts = FitOptions(out="m.skops", platform="cpu_epyc_zen4_2c")
>>> opts.latency_law, opts.preset, opts.data
('auto', 'default', [])
>>> FitOptions(out="m.skops", preset="tiny", colour="red")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: ...unexpected keyword argument 'colour'
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["options_class", "options_command"]


def _default(value: Any) -> Any:
    """A parameter's default: a typer Option/Argument's own default (``...``: required)."""
    import typer.models

    if isinstance(value, typer.models.ParameterInfo):
        value = value.default
    return value


def options_class(command: Callable[..., Any], name: str) -> type:
    """A frozen, keyword-only dataclass ``name`` of ``command``'s parameters: their names, types
    and defaults (a required option has no default; a list default is copied per object).

    Parameters
    ----------
    command : callable
        A typer command function (its defaults ``typer.Option(...)``/``typer.Argument(...)``).
    name : str
        The class name, e.g. ``"FitOptions"``.
    """
    hints = typing.get_type_hints(command)
    specs = []
    for p in inspect.signature(command).parameters.values():
        default = _default(p.default)
        if default is ... or default is inspect.Parameter.empty:
            spec = dataclasses.field()
        elif isinstance(default, list | dict | set):
            spec = dataclasses.field(default_factory=functools.partial(type(default), default))
        else:
            spec = dataclasses.field(default=default)
        specs.append((p.name, hints.get(p.name, Any), spec))
    cls = dataclasses.make_dataclass(name, specs, frozen=True, kw_only=True)
    cls.__module__ = command.__module__
    cls.__doc__ = (f"The options of ``carb {command.__name__.removesuffix('_cmd')}``, as its "
                   f"command line parses them (:func:`carb_lib.app.options.options_class`).")
    return cls


def options_command(run: str, name: str):
    """Decorate a typer command whose body is ``...``: it builds its ``Options``
    (:func:`options_class`, also the decorated command's ``Options`` attribute) from the parsed
    options and calls ``run`` (``"package.module:function"``, imported when the command runs)
    with them and ``echo=typer.echo``."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        options = options_class(command, name)

        @functools.wraps(command)
        def parsed(**kwargs: Any) -> None:
            import typer

            module, function = run.split(":")
            work = getattr(importlib.import_module(module), function)
            work(options(**kwargs), echo=typer.echo)

        parsed.Options = options  # type: ignore[attr-defined]
        return parsed

    return decorate
