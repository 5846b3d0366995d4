"""``carb catalog``: the data catalog's commands (registered by :mod:`carb_lib.app.cli`, which
routes them through its one error path), and :func:`register_output`, the step by which
``carb merge`` and ``carb kernels`` register what they wrote in the user catalog.

A new platform reaches the analyses as data: its files are registered in a *user catalog*
(``carb --catalog PATH`` or ``CARB_CATALOG``; :mod:`carb_lib.dataset.catalog`), never by
editing code. Every command imports its stage lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from carb_lib.dataset.catalog import CatalogError, catalog_problems, load_catalog, user_catalog_path

catalog_app = typer.Typer(no_args_is_help=True, help="The data catalog: list the catalogued "
                          "campaigns, register a file in the user catalog, check a catalog "
                          "against its folder.")


def register_output(path: Path, role: str, campaign: str, echo: Callable[[str], None],
                    note: str = "", facts_from: Path | None = None) -> bool:
    """Register ``path`` (a Parquet file a command just wrote) as ``role`` of ``campaign`` in the
    active user catalog (:func:`carb_lib.dataset.catalog.user_catalog_path`), and say so in one
    line. Without a user catalog, or for a file the catalogs already list, one line says what
    to do instead. ``facts_from``: the Parquet file whose rows give the campaign's fields
    (default ``path`` itself; a benchmark's cache probe is a CSV). Returns whether it
    registered."""
    from carb_lib.measure.registry import register_rows

    if load_catalog().entry_of(path) is not None:
        echo(f"catalog: {path} is already catalogued")
        return False
    target = user_catalog_path()
    if target is None:
        echo(f"catalog: {path} is not registered (name a user catalog with carb --catalog PATH "
             "or CARB_CATALOG, or run carb catalog add later)")
        return False
    cat, name = register_rows(path, role=role, campaign=campaign, catalog=target, note=note,
                              facts_from=facts_from)
    echo(f"catalog: registered {path} as {role} of {name} in {cat}")
    return True


@catalog_app.command("list")
def catalog_list(
    platform: str | None = typer.Option(None, "--platform", help="Only this platform's campaigns."),
) -> None:
    """List the catalogued campaigns (shipped and user catalogs): platform, campaign, device,
    protocol, date and files by role."""
    from collections import Counter

    cat = load_catalog()
    if platform is not None:
        cat.require_platform(platform)
    user = {id(c) for c in cat.user_campaigns()}
    typer.echo(f"catalogs: {', '.join(map(str, cat.sources)) or 'none'}")
    for c in cat.campaigns:
        if platform is not None and c.platform != platform:
            continue
        roles = Counter(e.role for e in c.files)
        proto = ", ".join(f"{k} {v}" for k, v in c.protocol.items() if v is not None)
        where = "  [user]" if id(c) in user else ""
        typer.echo(f"{c.platform}/{c.campaign} ({c.device}, {c.date or 'no date'}; {proto}): "
                   f"{', '.join(f'{n} {r}' for r, n in roles.items())}{where}")


@catalog_app.command("add")
def catalog_add(
    path: Path = typer.Argument(..., help="A Parquet file under the user catalog's folder."),
    role: str = typer.Option(..., "--role", help="Its role: rows, audit, reference, kernels, "
                             "anchors, noise, rss, ... (carb_lib.dataset.catalog.ROLES)."),
    campaign: str = typer.Option("design", "--campaign", help="The campaign it belongs to "
                                 "(design: the one carb fit --platform and the studies read)."),
    note: str = typer.Option("", "--note", help="What the file is, in a few words."),
) -> None:
    """Register a file in the user catalog (carb --catalog PATH or CARB_CATALOG), its platform,
    CPU, families and protocol read from its rows."""
    if not path.is_file():
        raise CatalogError(f"{path}: no such file")
    if user_catalog_path() is None:
        raise CatalogError("no user catalog to register in: name one with carb --catalog PATH "
                           "or CARB_CATALOG")
    register_output(path, role, campaign, typer.echo, note=note)


@catalog_app.command("check")
def catalog_check() -> None:
    """Check every catalog against its folder: each listed file exists, each file of the folder
    is listed (exit 1 with one line per problem)."""
    cat = load_catalog()
    problems = catalog_problems(cat)
    for line in problems:
        typer.secho(f"problem: {line}", fg=typer.colors.RED, err=True)
    if problems:
        raise typer.Exit(1)
    typer.echo(f"catalog ok: {len(cat.campaigns)} campaigns on {len(cat.platforms())} platforms, "
               f"{len(cat.entries())} files ({', '.join(map(str, cat.sources))})")
