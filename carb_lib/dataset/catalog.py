"""The data catalog: which file belongs to which platform, campaign and role.

``data/catalog.yaml`` (the *shipped* catalog, read-only) lists every campaign the project
measured: its platform, ``cpu_id``, device, families, protocol (version, threads, heap,
windows), date, and its files by role (:data:`ROLES`: ``rows``, ``audit``, ``reference``,
``kernels``, ``anchors``, ``noise``, ``rss``, ...); files that belong to no campaign (the
cards, another project's data) are listed under ``other``. Paths are relative to the folder
of the catalog that lists them.

A *user catalog* of the same format extends the shipped one with campaigns of its own: name it
with ``carb --catalog PATH`` or the environment variable ``CARB_CATALOG`` (several paths
separated by ``os.pathsep``). The library asks the catalog, never a folder layout:

Examples
--------
>>> from carb_lib.dataset.catalog import files, load_catalog
>>> [p.name for p in files(platform="cpu_xeon_emr_2c", campaign="design", role="rows")]
['cpu_xeon_emr_2c.parquet', 'cpu_xeon_emr_2c.parquet']
>>> "cpu_xeon_gnr_2c" in load_catalog().platforms()
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = ["CATALOG_ENV", "DESIGN", "ROLES", "SHIPPED_CATALOG", "Campaign", "Catalog", "shown_path",
           "CatalogError", "Entry", "card_table", "catalog_problems", "files", "load_catalog",
           "read_catalog", "use_catalog"]

#: The shipped catalog: the one place the package locates its data (the repository's ``data/``).
SHIPPED_CATALOG: Path = Path(__file__).resolve().parents[2] / "data" / "catalog.yaml"
#: Environment variable naming user catalogs (``os.pathsep``-separated) that extend the shipped one.
CATALOG_ENV = "CARB_CATALOG"
#: The campaign of a platform whose rows the library uses by default (``carb fit --platform``,
#: the leave-one-CPU-out table, the zoo's design-space rows).
DESIGN = "design"
#: The roles a catalogued file may have.
ROLES: dict[str, str] = {
    "rows": "network rows of the campaign (one row per platform and config_id)",
    "audit": "carb audit rows: a sample of a rows file re-measured later",
    "reference": "the reference config timed every 50 configs (the host's drift)",
    "rss": "carb zoo rss rows: resident-set growth per config",
    "kernels": "operators timed alone (carb kernels): the operator benchmark",
    "anchors": "the anchor operators re-timed before, during and after an operator draw",
    "cache_probe": "one core's read bandwidth by working set (scripts/read_bandwidth_probe.py)",
    "noise": "carb noise rows: configs repeated back to back or spread in time",
    "passes": "every pass of a passes campaign, and its re-measurements",
    "gpu_check": "a GPU campaign's self-check, anchor, summary or test log",
    "card": "a data card", "licence": "a licence kept beside data",
    "external": "data measured by another project",
    "other": "a file no other role describes (its note says what it is)",
}
#: Roles whose files hold network rows the data card lists (``card`` facts).
CARD_ROLES: tuple[str, ...] = ("rows", "noise", "passes")
_CARD_KEYS = ("cpu", "ok_rows", "protocol", "heap", "reference_cv", "code", "measured")


class CatalogError(ValueError):
    """A catalog that cannot be read: one line naming the catalog, the entry and the fault."""


@dataclass(frozen=True)
class Entry:
    """One catalogued file: ``path`` (the catalog's folder joined with ``rel``), its role and
    campaign (``None`` under ``other``), families, note and the data card's facts (``card``)."""

    rel: str
    root: Path
    role: str
    platform: str | None = None
    campaign: str | None = None
    families: tuple[str, ...] = ()
    note: str = ""
    card: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        """The file: ``root / rel``."""
        return self.root / self.rel


@dataclass(frozen=True)
class Campaign:
    """One campaign: a platform's measurements under one protocol, and its files."""

    platform: str
    campaign: str
    device: str
    cpu_id: Any
    families: tuple[str, ...]
    protocol: dict[str, Any]
    date: str
    files: tuple[Entry, ...]
    source: Path


@dataclass
class Catalog:
    """Campaigns and other files of one or several catalogs (the shipped one first)."""

    campaigns: list[Campaign] = field(default_factory=list)
    other: list[Entry] = field(default_factory=list)
    sources: list[Path] = field(default_factory=list)

    def entries(self, platform: str | None = None, campaign: str | None = None,
                role: str | None = None, family: str | None = None) -> list[Entry]:
        """The catalogued files that match every given criterion, in catalog order
        (``family``: files whose families hold it)."""
        out = []
        for c in self.campaigns:
            if (platform is not None and c.platform != platform) or \
                    (campaign is not None and c.campaign != campaign):
                continue
            out += [e for e in c.files if (role is None or e.role == role)
                    and (family is None or family in e.families)]
        if platform is None and campaign is None and family is None:
            out += [e for e in self.other if role is None or e.role == role]
        return out

    def files(self, platform: str | None = None, campaign: str | None = None,
              role: str | None = None, family: str | None = None) -> list[Path]:
        """The paths of :meth:`entries`."""
        return [e.path for e in self.entries(platform, campaign, role, family)]

    def platforms(self) -> list[str]:
        """The catalogued platforms, in catalog order."""
        return list(dict.fromkeys(c.platform for c in self.campaigns))

    def campaign(self, platform: str, name: str) -> Campaign | None:
        """The campaign ``name`` of ``platform`` (None: not catalogued)."""
        return next((c for c in self.campaigns
                     if c.platform == platform and c.campaign == name), None)

    def entry_of(self, path: str | Path) -> Entry | None:
        """The entry of the file ``path`` (compared resolved; None: not catalogued)."""
        want = Path(path).resolve()
        return next((e for e in self.entries() if e.path.resolve() == want), None)

    def require_platform(self, platform: str) -> None:
        """Raise :class:`CatalogError` (one line naming the known platforms) for an unknown one."""
        if platform not in self.platforms():
            raise CatalogError(f"platform {platform!r} is not in the catalog "
                               f"({', '.join(map(str, self.sources))}); known platforms: "
                               f"{', '.join(self.platforms())}")


def _fail(source: Path, where: str, what: str) -> CatalogError:
    return CatalogError(f"catalog {source}: {where}: {what}")


def _rel(source: Path, where: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(source, where, "path must be a non-empty string")
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts:
        raise _fail(source, where, f"path {value!r} must stay inside the catalog's folder")
    return p.as_posix()


def _entry(source: Path, where: str, raw: Any, platform: str | None,
           campaign: str | None) -> Entry:
    if not isinstance(raw, dict):
        raise _fail(source, where, "a file entry is a mapping with path and role")
    unknown = set(raw) - {"path", "role", "families", "note", "card"}
    if unknown:
        raise _fail(source, where, f"unknown key(s) {sorted(unknown)}")
    role = raw.get("role")
    if role not in ROLES:
        raise _fail(source, where, f"role {role!r} is not one of {', '.join(ROLES)}")
    fams = raw.get("families") or []
    if not isinstance(fams, list) or not all(isinstance(f, str) for f in fams):
        raise _fail(source, where, "families must be a list of names")
    card = raw.get("card")
    if card is not None and (not isinstance(card, dict) or set(card) != set(_CARD_KEYS)):
        raise _fail(source, where, f"card must hold exactly {', '.join(_CARD_KEYS)}")
    return Entry(_rel(source, where, raw.get("path")), source.parent, role, platform, campaign,
                 tuple(fams), str(raw.get("note") or ""), card)


def read_catalog(path: str | Path) -> Catalog:
    """Read and validate one catalog file (paths relative to its folder).

    Raises
    ------
    CatalogError
        One line naming the catalog, the entry and the fault: unreadable YAML, an unknown
        format, a missing key, an unknown role, a path outside the folder, a file listed twice
        or a campaign listed twice.
    """
    import yaml

    source = Path(path)
    try:
        raw = yaml.safe_load(source.read_text())
    except FileNotFoundError:
        raise CatalogError(f"catalog {source}: no such file") from None
    except (OSError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CatalogError(f"catalog {source}: not readable YAML ({first})") from None
    if not isinstance(raw, dict) or raw.get("format") != 1:
        raise _fail(source, "top level", "expected a mapping with format: 1")
    unknown = set(raw) - {"format", "campaigns", "other"}
    if unknown:
        raise _fail(source, "top level", f"unknown key(s) {sorted(unknown)}")
    cat, seen, names = Catalog(sources=[source]), set(), set()
    for i, c in enumerate(raw.get("campaigns") or []):
        where = f"campaigns[{i}]"
        if not isinstance(c, dict):
            raise _fail(source, where, "a campaign is a mapping")
        for key in ("platform", "campaign", "files"):
            if key not in c:
                raise _fail(source, where, f"missing key {key!r}")
        plat, name = str(c["platform"]), str(c["campaign"])
        if (plat, name) in names:
            raise _fail(source, where, f"campaign {plat}/{name} is listed twice")
        names.add((plat, name))
        if not isinstance(c["files"], list):
            raise _fail(source, where, "files must be a list")
        entries = tuple(_entry(source, f"{where} ({plat}/{name}).files[{j}]", f, plat, name)
                        for j, f in enumerate(c["files"]))
        cat.campaigns.append(Campaign(
            plat, name, str(c.get("device", "cpu")), c.get("cpu_id"),
            tuple(c.get("families") or ()), dict(c.get("protocol") or {}),
            str(c.get("date", "")), entries, source))
    cat.other = [_entry(source, f"other[{j}]", f, None, None)
                 for j, f in enumerate(raw.get("other") or [])]
    for e in cat.entries():
        if e.rel in seen:
            raise _fail(source, e.rel, "the file is listed twice")
        seen.add(e.rel)
    return cat


def _merge(base: Catalog, more: Catalog) -> Catalog:
    have = {(c.platform, c.campaign): c.source for c in base.campaigns}
    for c in more.campaigns:
        if (c.platform, c.campaign) in have:
            raise CatalogError(f"catalog {c.source}: campaign {c.platform}/{c.campaign} is "
                               f"already in {have[(c.platform, c.campaign)]}: name it otherwise")
    return Catalog(base.campaigns + more.campaigns, base.other + more.other,
                   base.sources + more.sources)


_CACHE: dict[tuple, Catalog] = {}
#: User catalogs named for the running command (``carb --catalog PATH``): :func:`use_catalog`.
_USER: list[Path] = []


def use_catalog(path: str | Path):
    """Add the user catalog ``path`` to every :func:`load_catalog` until the returned function
    is called (``carb --catalog PATH`` calls it when the command ends).

    Raises
    ------
    CatalogError
        The catalog is unreadable or invalid (checked now, one line).
    """
    read_catalog(path)
    _USER.append(Path(path))

    def restore() -> None:
        if Path(path) in _USER:
            _USER.remove(Path(path))

    return restore


def _read_cached(path: Path) -> Catalog:
    try:
        key = (str(path), path.stat().st_mtime_ns)
    except OSError:
        return read_catalog(path)  # names the missing file
    if key not in _CACHE:
        _CACHE[key] = read_catalog(path)
    return _CACHE[key]


def load_catalog(user: str | Path | list[str | Path] | None = None, *,
                 shipped: str | Path | None = None) -> Catalog:
    """The shipped catalog extended by the user catalogs: those of ``$CARB_CATALOG``, those
    of ``carb --catalog`` (:func:`use_catalog`), then ``user``.

    Parameters
    ----------
    user : path or list of paths, optional
        User catalogs (same format; their paths relative to their own folders).
    shipped : path, optional
        The base catalog (default :data:`SHIPPED_CATALOG`).

    Raises
    ------
    CatalogError
        A catalog is unreadable or invalid, or two catalogs list the same campaign.
    """
    cat = _read_cached(Path(SHIPPED_CATALOG if shipped is None else shipped))
    extra = [p for p in os.environ.get(CATALOG_ENV, "").split(os.pathsep) if p.strip()]
    extra += _USER
    extra += [] if user is None else [user] if isinstance(user, str | Path) else list(user)
    seen = {Path(s).resolve() for s in cat.sources}
    for p in extra:  # a catalog named twice (or the base named again) is read once
        if Path(p).resolve() not in seen:
            seen.add(Path(p).resolve())
            cat = _merge(cat, _read_cached(Path(p)))
    return cat


def files(platform: str | None = None, campaign: str | None = None, role: str | None = None,
          family: str | None = None, *, catalog: Catalog | None = None) -> list[Path]:
    """The catalogued files matching every given criterion (:meth:`Catalog.files`) of
    ``catalog`` (default :func:`load_catalog`: the shipped one and the user catalogs)."""
    return (load_catalog() if catalog is None else catalog).files(platform, campaign, role,
                                                                  family)


def catalog_problems(catalog: Catalog) -> list[str]:
    """What is wrong between a catalog and its folder: a listed file that does not exist, a file
    under the folder that is not listed (the catalog itself aside). Empty: none."""
    problems = []
    for root in {Path(s).parent for s in catalog.sources}:
        listed = {e.rel for e in catalog.entries() if e.root == root}
        names = {Path(s).name for s in catalog.sources if Path(s).parent == root}
        on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.relative_to(root).as_posix() not in names}
        problems += [f"{root}: {r} is listed but absent" for r in sorted(listed - on_disk)]
        problems += [f"{root}: {r} is not in the catalog" for r in sorted(on_disk - listed)]
    return problems


def card_table(catalog: Catalog | None = None) -> str:
    """The data card's table (``data/README.md``) from the catalog's ``card`` facts: one row per
    catalogued file of network rows (:data:`CARD_ROLES`), by path."""
    cat = read_catalog(SHIPPED_CATALOG) if catalog is None else catalog
    head = ("| file | platform | CPU model string (`cpu_id`) | families | ok rows | protocol | "
            "heap | reference CV | code version | measured (UTC) |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for e in sorted((e for e in cat.entries() if e.role in CARD_ROLES and e.card),
                    key=lambda e: e.rel):
        f = e.card
        rows.append(f"| `{e.rel}` | {e.platform} | {str(f['cpu']).replace('|', chr(92) + '|')} | "
                    f"{', '.join(e.families)} | {int(f['ok_rows']):,} | {f['protocol']} | "
                    f"{f['heap']} | {f['reference_cv']} | {f['code']} | {f['measured']} |")
    return "\n".join([head, *rows])


def shown_path(path: str | Path) -> str:
    """How a table names a catalogued file: relative to the folder that holds the shipped
    ``data/`` (``data/audit/x.parquet``) when it lies under it, so that a result table reads the
    same on every machine; any other path as given.

    >>> shown_path(SHIPPED_CATALOG.parent / "audit" / "x.parquet")
    'data/audit/x.parquet'
    >>> shown_path("/elsewhere/x.parquet")
    '/elsewhere/x.parquet'
    """
    base = SHIPPED_CATALOG.parent.parent
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)
