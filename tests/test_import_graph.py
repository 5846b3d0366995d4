"""carb_lib's import graph, counting the imports inside functions too: no circle, no two
packages that import each other, and no arrow from a lower stage of the data flow up to a
higher one.

The stages, lowest first (:data:`STAGES`; every module is in :data:`STAGE_OF`):

``shared``
    ``carb_lib.core``: names, units, metrics, table files, the safe-write rule and the claims
    table every stage uses (and ``screening.pareto``, numpy only).
``families``
    ``carb_lib.families``: the design spaces, frame operations on their configs, the allocator
    model and the torchvision zoo.
``dataset``
    ``carb_lib.dataset``: the schema, its validator and readers, synthetic data, static
    features. It sits below ``measure`` although data flows from measuring to datasets: a
    campaign writes its rows in the schema and attaches their static features, so the schema
    is what the measuring imports, never the other way round.
``measure``
    ``carb_lib.measure`` (devices, telemetry, protocol, campaigns and their passes, audit, the
    GPU campaign), ``carb_lib.kernels`` (the operator benchmark, cache probe and the kernel
    law's inputs) and the Dask campaign.
``model``
    Characterization, models and transfer: ``carb_lib.characterize``, ``carb_lib.ensemble``
    (base laws, the latency-law default, the estimator), ``carb_lib.transfer``,
    ``carb_lib.evaluation``.
``screening``
    ``carb_lib.screening``: screening candidates under budgets (and its Dask form).
``plots``
    ``carb_lib.plots``: figures.
``app``
    ``carb_lib.app`` (the command line, reproduce/publish, README blocks, explorer, notebook
    helpers), the public API of ``carb_lib`` itself (its names are imported lazily from every
    stage), and the deprecated aliases of moved modules.

An import inside ``if TYPE_CHECKING:`` is not an arrow (it never runs). Imports by computed name
(``importlib.import_module``) are not seen, except the public API table of ``carb_lib``; the
others in carb_lib load a family module (``carb_lib.families.<name>``), below their stage.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "carb_lib"

STAGES: tuple[str, ...] = ("shared", "families", "dataset", "measure", "model", "screening",
                           "plots", "app")  # fmt: skip

#: Module or package (relative to ``carb_lib``; "" is ``carb_lib`` itself) -> stage. A module
#: takes the stage of its longest listed prefix.
STAGE_OF: dict[str, str] = {
    **dict.fromkeys(("core", "screening.pareto"), "shared"),  # pareto: numpy only
    "families": "families",
    "dataset": "dataset",
    **dict.fromkeys(("measure", "kernels", "distributed.cluster", "distributed.pinning",
                     "distributed.profile"), "measure"),
    **dict.fromkeys(("characterize", "transfer", "ensemble", "evaluation"), "model"),
    **dict.fromkeys(("screening", "distributed", "distributed.screen"), "screening"),
    "plots": "plots",
    # the app, the public API of carb_lib itself, and the deprecated aliases of moved modules
    **dict.fromkeys(("", "app", "profiling", "campaign", "space"), "app"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _statements(tree: ast.AST):
    """Every import statement of ``tree``, at any depth, except under ``if TYPE_CHECKING``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        todo += ast.iter_child_nodes(node)


def imports_of(name: str, source: str, modules=MODULES) -> set[str]:
    """The carb_lib modules that module ``name`` (source text ``source``) imports anywhere:
    module level, functions, methods; absolute and relative. ``from P import n`` is an arrow to
    the module ``P.n`` when there is one, else to ``P``."""
    is_package = name == "carb_lib" or (name in modules and modules[name].name == "__init__.py")
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        subs = {f"{mod}.{a.name}" for a in node.names} & set(modules)
        found |= subs if len(subs) == len(node.names) else subs | {mod}
    resolved = set()
    for m in found:  # ``import carb_lib.a.b.c`` where c is a name: the longest module prefix
        while m and m not in modules:
            m = m.rpartition(".")[0]
        if m:
            resolved.add(m)
    return resolved - {name}


def _api_modules() -> set[str]:
    """The modules ``carb_lib.__getattr__`` imports its public names from (its ``_API`` table:
    computed ``importlib`` imports that no import statement shows)."""
    for node in ast.parse(MODULES["carb_lib"].read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_API":
            return {module for module, _ in ast.literal_eval(node.value).values()}
    return set()


def import_graph() -> dict[str, set[str]]:
    graph = {n: imports_of(n, p.read_text()) for n, p in MODULES.items()}
    graph["carb_lib"] |= _api_modules()
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def stage(module: str) -> str | None:
    """The stage of a carb_lib module by its longest prefix in :data:`STAGE_OF`."""
    rel = module.removeprefix("carb_lib").removeprefix(".")
    if not rel:
        return STAGE_OF[""]
    while rel:  # "" (carb_lib itself) is no prefix: an unlisted module has no stage
        if rel in STAGE_OF:
            return STAGE_OF[rel]
        rel = rel.rpartition(".")[0]
    return None


def unit(module: str) -> str:
    """The package of a carb_lib module: its longest prefix in :data:`STAGE_OF` (so
    ``screening.pareto``, listed alone in the shared stage, is a unit of its own)."""
    rel = module.removeprefix("carb_lib").removeprefix(".")
    while rel and rel not in STAGE_OF:
        rel = rel.rpartition(".")[0]
    return rel


def two_way_pairs(graph: dict[str, set[str]]) -> list[str]:
    """``a <-> b (a module -> b module; b module -> a module)`` for every two packages
    (:func:`unit`; carb_lib itself, the lazy public API, left out) that import each other."""
    arrows: dict[tuple[str, str], tuple[str, str]] = {}
    for a in sorted(graph):
        for b in sorted(graph[a]):
            ua, ub = unit(a), unit(b)
            if ua != ub and "" not in (ua, ub):
                arrows.setdefault((ua, ub), (a, b))
    return [f"{ua} <-> {ub} ({' -> '.join(arrows[ua, ub])}; {' -> '.join(arrows[ub, ua])})"
            for ua, ub in sorted(arrows) if ua < ub and (ub, ua) in arrows]


def upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    rank = {s: i for i, s in enumerate(STAGES)}
    return [f"{a} ({stage(a)}) imports {b} ({stage(b)})"
            for a in sorted(graph) for b in sorted(graph[a])
            if rank[stage(b)] > rank[stage(a)]]  # fmt: skip


# --------------------------------------------------------------------------- the checks
def test_every_module_has_a_stage():
    rel = {m.removeprefix("carb_lib").removeprefix(".") for m in MODULES}
    unlisted = sorted(m for m in MODULES if stage(m) is None)
    assert not unlisted, f"give these modules a stage in STAGE_OF: {unlisted}"
    stale = sorted(k for k in STAGE_OF if k not in rel)
    assert not stale, f"STAGE_OF lists modules that do not exist: {stale}"
    assert set(STAGE_OF.values()) <= set(STAGES)


def test_no_import_circle_counting_function_level_imports():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_no_two_packages_import_each_other():
    pairs = two_way_pairs(import_graph())
    assert not pairs, "packages that import each other:\n" + "\n".join(pairs)


def test_no_import_from_a_lower_stage_up_to_a_higher_one():
    up = upward_arrows(import_graph())
    assert not up, "imports up the stages:\n" + "\n".join(up)


# --------------------------------------------------------------------------- the checker itself
def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "carb_lib.app.reproduce" in graph["carb_lib.app.cli"]  # only imported inside a command
    assert {"carb_lib.ensemble", "carb_lib.screening"} <= graph["carb_lib"]  # the lazy API
    mods = {"pkg": Path("pkg/__init__.py"), "pkg.a": Path("pkg/a.py"),
            "pkg.b": Path("pkg/b.py"), "pkg.sub": Path("pkg/sub/__init__.py"),
            "pkg.sub.c": Path("pkg/sub/c.py")}  # fmt: skip
    src = ("from . import b\nfrom .sub.c import X\nimport pkg.sub\n"
           "def f():\n    from pkg import missing_name\n"
           "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    assert imports_of("pkg.a", src, mods) == {"pkg.b", "pkg.sub.c", "pkg.sub", "pkg"}
    assert imports_of("pkg.sub", "from ..b import Y\nfrom . import c\n", mods) == {
        "pkg.b", "pkg.sub.c"}


def test_the_checks_find_a_circle_a_two_way_pair_and_an_upward_arrow():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    pairs = two_way_pairs({"carb_lib.transfer.cpus": {"carb_lib.evaluation.scoring"},
                           "carb_lib.evaluation.platforms": {"carb_lib.transfer.cpus"},
                           "carb_lib.screening.hardware": {"carb_lib.screening.pareto"},
                           "carb_lib.screening.pareto": {"carb_lib.core.vocab"}})
    assert pairs == ["evaluation <-> transfer (carb_lib.evaluation.platforms -> "
                     "carb_lib.transfer.cpus; carb_lib.transfer.cpus -> "
                     "carb_lib.evaluation.scoring)"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    up = upward_arrows({"carb_lib.families.resnet": {"carb_lib.ensemble.estimator"},
                        "carb_lib.plots.carb": {"carb_lib.core.metrics"}})
    assert up == ["carb_lib.families.resnet (families) imports carb_lib.ensemble.estimator "
                  "(model)"]
