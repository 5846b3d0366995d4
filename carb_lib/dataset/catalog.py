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

__all__ = ["CATALOG_ENV", "DESIGN", "ROLES", "SHIPPED_CATALOG", "Campaign", "Catalog",
           "CatalogError", "Entry", "campaign_files", "card_table", "catalog_problems",
           "data_folder_of", "dataset_name", "files", "load_catalog", "platform_file", "read_catalog", "register",
           "resolve", "shown_path", "study_files", "use_catalog", "user_catalog_path"]

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
    #: The base catalog's file (None: it is absent, as in a package installed without ``data/``).
    shipped: Path | None = None

    def user_campaigns(self) -> list[Campaign]:
        """The campaigns of the user catalogs (those not read from :attr:`shipped`)."""
        return [c for c in self.campaigns if self.shipped is None
                or Path(c.source).resolve() != Path(self.shipped).resolve()]

    def entries(self, platform: str | None = None, campaign: str | None = None,
                role: str | None = None, family: str | None = None) -> list[Entry]:
        """The catalogued files that match every given criterion, in catalog order
        (``family``: files whose families hold it; ``"!name"``: files whose families do not)."""
        want, negate = (None, False) if family is None else (family.lstrip("!"),
                                                              family.startswith("!"))
        out = []
        for c in self.campaigns:
            if (platform is not None and c.platform != platform) or \
                    (campaign is not None and c.campaign != campaign):
                continue
            out += [e for e in c.files if (role is None or e.role == role)
                    and (want is None or (want in e.families) != negate)]
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

    def platform_of_cpu(self, cpu_id: str, campaign: str = DESIGN) -> str | None:
        """The first CPU platform whose campaign ``campaign`` was measured on the CPU model
        ``cpu_id`` (None: none was; a GPU's campaign names its host's CPU and is passed over)."""
        return next((c.platform for c in self.campaigns if c.device == "cpu"
                     and c.campaign == campaign and c.cpu_id == cpu_id), None)

    def campaign(self, platform: str, name: str) -> Campaign | None:
        """The campaign ``name`` of ``platform`` (None: not catalogued)."""
        return next((c for c in self.campaigns
                     if c.platform == platform and c.campaign == name), None)

    def benchmarks(self, platform: str, campaign: str | None = None) -> list[Entry]:
        """The operator benchmarks (``kernels`` files that exist) that go with rows of
        ``platform``'s campaign ``campaign``, best first: that campaign's own; then, where its
        protocol's heap differs from the design campaign's, those of the platform's other
        campaigns timed with its heap (the last catalogued first); then the design campaign's.
        The one rule of ``carb fit``'s look-up and of a zoo file's benchmark."""
        def heap(name: str | None) -> Any:
            found = self.campaign(platform, name) if name else None
            return None if found is None else found.protocol.get("heap")

        order = [campaign] if campaign else []
        want = heap(campaign)
        if want is not None and want != heap(DESIGN):
            order += [c.campaign for c in reversed(self.campaigns) if c.platform == platform
                      and c.campaign not in (DESIGN, campaign) and c.protocol.get("heap") == want]
        order.append(DESIGN)
        return [e for name in dict.fromkeys(order)
                for e in self.entries(platform, name, "kernels") if e.path.is_file()]

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
                   base.sources + more.sources, base.shipped)


_CACHE: dict[tuple, Catalog] = {}
#: User catalogs named for the running command (``carb --catalog PATH``): :func:`use_catalog`.
_USER: list[Path] = []


def use_catalog(path: str | Path):
    """Add the user catalog ``path`` to every :func:`load_catalog` until the returned function
    is called (``carb --catalog PATH`` calls it when the command ends).

    An absent file is an empty catalog that the first registration writes
    (:func:`register`).

    Raises
    ------
    CatalogError
        The catalog is unreadable or invalid (checked now, one line).
    """
    if Path(path).exists():  # an absent one is empty until a command registers a file in it
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
    of ``carb --catalog`` (:func:`use_catalog`), then ``user``. A package installed without
    the repository's ``data/`` has no shipped catalog: the user catalogs alone.

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
    base = Path(SHIPPED_CATALOG if shipped is None else shipped)
    if shipped is None and not base.exists():
        cat = Catalog()  # a package installed without the repository's data/: user catalogs only
    else:
        cat = _read_cached(base)
        cat = Catalog(cat.campaigns, cat.other, cat.sources, base)
    extra = _env_catalogs() + _USER
    extra += [] if user is None else [user] if isinstance(user, str | Path) else list(user)
    seen = {Path(s).resolve() for s in cat.sources}
    for p in extra:  # a catalog named twice (or the base named again) is read once; an absent
        # user catalog is empty (the first registration writes it)
        if Path(p).resolve() not in seen and Path(p).exists():
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
        names = {n for s in catalog.sources if Path(s).parent == root
                 for n in (Path(s).name, Path(s).name + ".lock")}
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


def user_catalog_path() -> Path | None:
    """The user catalog a command registers campaigns in: the one ``carb --catalog PATH``
    names, else the first of ``$CARB_CATALOG``; None when neither is set."""
    if _USER:
        return _USER[-1]
    env = _env_catalogs()
    return env[0] if env else None


def _env_catalogs() -> list[Path]:
    """The user catalogs ``$CARB_CATALOG`` names, in order."""
    return [Path(p) for p in os.environ.get(CATALOG_ENV, "").split(os.pathsep) if p.strip()]


def register(path: str | Path, *, role: str, platform: str, campaign: str = DESIGN,
             catalog: str | Path | None = None, device: str = "cpu", cpu_id: Any = "unknown",
             families: tuple[str, ...] | list[str] = (), protocol: dict[str, Any] | None = None,
             date: str = "", note: str = "") -> Path:
    """Add the file ``path`` to the campaign ``platform``/``campaign`` of a user catalog
    (creating the catalog file, or the campaign, when absent). The file must lie under the
    catalog's folder; the catalog is written whole, under a lock, or not at all.

    Parameters
    ----------
    path : path
        The file to register (role ``role``).
    role : str
        One of :data:`ROLES`.
    platform, campaign : str
        The campaign it belongs to; a campaign of the shipped catalog cannot be extended.
    catalog : path, optional
        The user catalog (default :func:`user_catalog_path`).
    device, cpu_id, families, protocol, date
        The campaign's fields when it is new; an existing campaign must agree on ``device``
        and ``cpu_id`` (its families grow by ``families``).
    note : str
        What the file is, in a few words.

    Returns
    -------
    pathlib.Path
        The catalog written.

    Raises
    ------
    CatalogError
        One line: no user catalog, the shipped catalog named, a file outside the catalog's
        folder, an unknown role, a campaign of another catalog, or a campaign of another CPU.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "rows.parquet").write_bytes(b"")
    0
    >>> register(d / "rows.parquet", role="rows", platform="cpu_lab", catalog=d / "catalog.yaml").name
    'catalog.yaml'
    >>> [c.campaign for c in read_catalog(d / "catalog.yaml").campaigns]
    ['design']
    """
    import tempfile

    import yaml
    from filelock import FileLock

    target = Path(catalog) if catalog is not None else user_catalog_path()
    if target is None:
        raise CatalogError(f"no user catalog to register {path} in: name one with "
                           f"carb --catalog PATH or {CATALOG_ENV}")
    if target.resolve() == SHIPPED_CATALOG.resolve():
        raise CatalogError(f"catalog {target}: the shipped catalog is read-only; register in a "
                           "user catalog (carb --catalog PATH)")
    if role not in ROLES:
        raise CatalogError(f"role {role!r} is not one of {', '.join(ROLES)}")
    try:
        rel = Path(path).resolve().relative_to(target.resolve().parent).as_posix()
    except ValueError:
        raise CatalogError(f"catalog {target}: {path} is not under the catalog's folder "
                           f"{target.resolve().parent}; write the file there first") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock", timeout=60):
        raw = (yaml.safe_load(target.read_text()) if target.is_file() else None) or {}
        if target.is_file():
            read_catalog(target)  # a broken catalog is named, not overwritten
        raw.setdefault("format", 1)
        camps = raw.setdefault("campaigns", []) or []
        raw["campaigns"] = camps
        theirs = next((c for c in load_catalog().campaigns
                       if c.platform == platform and c.campaign == campaign
                       and Path(c.source).resolve() != target.resolve()), None)
        if theirs is not None:
            raise CatalogError(f"campaign {platform}/{campaign} is already in {theirs.source}: "
                               "name the campaign otherwise (--campaign)")
        camp = next((c for c in camps if str(c.get("platform")) == platform
                     and str(c.get("campaign")) == campaign), None)
        if camp is None:
            camp = {"platform": platform, "campaign": campaign, "device": device,
                    "cpu_id": cpu_id, "families": sorted(families),
                    "protocol": dict(protocol or {}), "date": date, "files": []}
            camps.append(camp)
        else:
            for key, new in (("device", device), ("cpu_id", cpu_id)):
                old = camp.get(key)
                if new not in (None, "unknown") and old not in (None, "unknown") and old != new:
                    raise CatalogError(f"catalog {target}: campaign {platform}/{campaign} holds "
                                       f"{key} {old!r}, {path} {new!r}: register it as "
                                       "another campaign")
            camp["families"] = sorted(set(camp.get("families") or []) | set(families))
        listed = [f for f in camp["files"] if f.get("path") == rel]
        if listed and listed[0].get("role") != role:
            raise CatalogError(f"catalog {target}: {rel} is already listed as "
                               f"{listed[0].get('role')!r}")
        if not listed:
            entry = {"path": rel, "role": role}
            if families:
                entry["families"] = sorted(families)
            if note:
                entry["note"] = note
            camp["files"].append(entry)
        text = ("# CARB user catalog (carb_lib.dataset.catalog): campaigns registered by carb "
                "merge, carb kernels\n# and carb catalog add; paths relative to this folder.\n"
                + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".catalog-", suffix=".yaml")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            read_catalog(tmp)  # what is written must read back
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def study_files(platforms: list[str] | tuple[str, ...] | None = None, *,
                family: str | None = "default", user: bool = True,
                catalog: Catalog | None = None) -> list[Path]:
    """The network rows a study reads: the ``rows`` files of each platform's design campaign
    that hold ``family`` (``"default"``: the default family,
    :data:`carb_lib.families._base.DEFAULT_FAMILY`; None: every family), for ``platforms``
    (None: every catalogued platform) and, with ``user``, every platform a user catalog adds,
    in that order.

    Raises
    ------
    CatalogError
        A named platform is not in the catalog (one line naming the known ones).

    Examples
    --------
    >>> [shown_path(p) for p in study_files(["cpu_epyc_2c", "gpu_nvidia_h200"], user=False)]
    ['data/cpu_epyc_2c/design/rows.parquet', 'data/gpu_nvidia_h200/design/rows.parquet']
    """
    cat = load_catalog() if catalog is None else catalog
    names = list(cat.platforms() if platforms is None else platforms)
    for p in names:
        cat.require_platform(p)
    if user:
        names += [c.platform for c in cat.user_campaigns() if c.platform not in names]
    names = list(dict.fromkeys(names))
    if family == "default":
        from carb_lib.families._base import DEFAULT_FAMILY  # pandas: only when asked

        family = DEFAULT_FAMILY
    return [e.path for p in names for e in cat.entries(p, DESIGN, "rows", family)]


def dataset_name(path: str | Path, *, catalog: Catalog | None = None) -> str:
    """The name a measured file goes by in tables and figures: a catalogued file as its platform
    (``platform/campaign`` outside the design campaign), any other file as its name without
    suffixes.

    Examples
    --------
    >>> dataset_name("data/cpu_epyc_zen3_2c/design/rows.parquet")
    'cpu_epyc_zen3_2c'
    >>> dataset_name("runs/my_cpu.parquet")
    'my_cpu'
    """
    entry = (load_catalog() if catalog is None else catalog).entry_of(path)
    if entry is None:
        return Path(path).name.split(".")[0]
    return entry.platform if entry.campaign == DESIGN else f"{entry.platform}/{entry.campaign}"


def resolve(value: Any, role: str, *, family: str | None = None, many: bool = False,
            catalog: Catalog | None = None) -> Any:
    """A notebook's data parameter as files: ``"platform"`` names that platform's design
    campaign, ``"platform/campaign"`` another campaign; its files of ``role`` holding
    ``family`` (``"!resnet"``: not holding it) are given as
    :func:`shown_path` names them (``data/...`` for the shipped data). Anything else (a path,
    ``None``) is returned as given; a list is resolved item by item.

    Parameters
    ----------
    value : str, path, list or None
        The parameter.
    role : str
        The role of the files wanted (:data:`ROLES`).
    family : str, optional
        Only files holding this family (``"!name"``: files not holding it).
    many : bool
        Every matching file (a list); otherwise the first, or None when there is none.

    Examples
    --------
    >>> resolve("cpu_epyc_zen3_2c", "rows", family="resnet")
    'data/cpu_epyc_zen3_2c/design/rows.parquet'
    >>> resolve("cpu_epyc_zen3_2c", "rows", family="!resnet")
    'data/cpu_epyc_zen3_2c/design/rows_new_families.parquet'
    >>> resolve("cpu_xeon_gnr_2c/steady_kept", "kernels")
    'data/cpu_xeon_gnr_2c/steady_kept/kernels.parquet'
    >>> resolve("gpu_nvidia_h200", "audit") is None, resolve("my/file.parquet", "rows")
    (True, 'my/file.parquet')
    """
    if isinstance(value, list | tuple):
        out = [resolve(v, role, family=family, many=many, catalog=catalog) for v in value]
        return [x for v in out for x in (v if isinstance(v, list) else [v])] if many else out
    if not isinstance(value, str):
        return value
    cat = load_catalog() if catalog is None else catalog
    plat, _, camp = value.partition("/")
    if plat not in cat.platforms() or "/" in camp:
        return value
    if camp and cat.campaign(plat, camp) is None:
        raise CatalogError(f"platform {plat!r} has no campaign {camp!r} in the catalog; its "
                           f"campaigns: {', '.join(c.campaign for c in cat.campaigns if c.platform == plat)}")
    entries = cat.entries(plat, camp or DESIGN, role, family)
    found = [shown_path(e.path) for e in entries if e.path.is_file()]
    return found if many else (found[0] if found else None)


def data_folder_of(path: str | Path) -> Path | None:
    """The data folder a file lies in: the nearest of its parent folders (up to
    ``<data>/<platform>/<campaign>/``) that holds a ``catalog.yaml``; None where none does."""
    parents = Path(path).parents
    return next((p for p in list(parents)[:3] if (p / "catalog.yaml").is_file()), None)


def campaign_files(value: str, role: str, *, catalog: Catalog | None = None) -> list[str]:
    """The existing files of ``role`` in the campaign ``value`` names (``"platform/campaign"``;
    ``"platform"``: its design campaign), as :func:`shown_path` names them; ``[]`` where the
    catalogs hold no such platform or campaign (a machine without that data).

    Examples
    --------
    >>> campaign_files("gpu_nvidia_h200/noise", "noise")  # doctest: +NORMALIZE_WHITESPACE
    ['data/gpu_nvidia_h200/noise/noise_spread_window0.5s.parquet',
     'data/gpu_nvidia_h200/noise/noise_spread_window3s.parquet']
    >>> campaign_files("cpu_epyc_zen3_2c/noise", "noise")
    []
    """
    cat = load_catalog() if catalog is None else catalog
    plat, _, camp = str(value).partition("/")
    return [shown_path(p) for p in cat.files(plat, camp or DESIGN, role) if p.is_file()]


def platform_file(platform: str, role: str, *, family: str | None = None,
                  campaign: str = DESIGN, catalog: Catalog | None = None) -> Path | None:
    """The first existing file of ``role`` (narrowed to ``family``) in ``platform``'s campaign
    ``campaign`` (default its design campaign); None when the catalog holds none.

    Examples
    --------
    >>> shown_path(platform_file("cpu_epyc_zen3_2c", "audit", family="resnet"))
    'data/cpu_epyc_zen3_2c/design/audit.parquet'
    >>> platform_file("gpu_nvidia_h200", "kernels") is None
    True
    """
    cat = load_catalog() if catalog is None else catalog
    return next((p for p in cat.files(platform, campaign, role, family) if p.is_file()), None)
