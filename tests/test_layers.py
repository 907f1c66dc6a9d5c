"""The package's layers, read from the source with `ast`: no import cycle, no import from a
lower layer to a higher one, and no import hidden in a function except of an optional
dependency (or in an entry point).

The layer order is `azjax._WINGS`, written there once: the wings lowest first, each a few
words that name modules or folders of azjax; a module belongs to the longest word that is it
or holds it, and imports only from its own wing and those before it. The package's
`__init__` comes first: Python runs it before any of its modules, and it imports them only
on first use, by name.

Imports are every `import` and `from ... import` wherever it stands (functions, classes,
`if` blocks), relative ones resolved, `from PACKAGE import NAME` read as the submodule
PACKAGE.NAME where there is one; importing a submodule also imports its packages.
"""

import ast
import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

import azjax

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "azjax"

# What a function may import: the optional or slow third-party packages, loaded when a
# function needs them, and the azjax modules that exist for one of them (the only list).
OPTIONAL_DEPENDENCIES = (
    "PIL",  # render.png / gif: Pillow
    "cairosvg",  # render.png / gif
    "etils",  # paths: cloud workdirs (gs://)
    "matplotlib",  # plots, render.tree, sweep reports
    "optuna",  # sweeps: journal storage, report plots
    "pandas",  # tables: runs, ratings, tournaments, sweep reports
    "pgx",  # bench: pgx's environments for comparison
    "sqlalchemy",  # sweeps: a database storage
    "tensorboardX",  # metrics: TensorBoard event files
    "tqdm",  # metrics: the progress bar
    "uvicorn",  # serve: the web server
    "h11",  # serve: uvicorn's HTTP protocol (a request head's deadline)
    "wandb",  # trackers: Weights & Biases
    "mlflow",  # trackers: MLflow
    "bitbully",  # engines.solver: the Connect Four solver (the `solver` extra)
    "pyspiel",  # games.conformance: games replayed in OpenSpiel (`pip install open-spiel`)
    "azjax.apps.serve.app",  # serve: the HTTP API, on Starlette (the `serve` extra)
    "gcp_storage_emulator",  # gcs_emulator: its server, imported after the handler's patch
)

# Entry points whose imports stay inside functions so that they load only what is used:
# `import azjax` (lazy exports) and the `azjax` command (a command imports what it runs, so
# `azjax --help` loads no jax), with its argument parser.
ENTRY_POINTS = ("azjax", "azjax.apps.cli", "azjax.apps.cli_args", "azjax.apps.cli_train")


@dataclasses.dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported azjax module, or a third-party top-level name
    path: Path
    line: int
    in_function: bool
    implied: bool = False  # a package that importing one of its modules runs

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def _modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    modules = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The imports of one module: azjax modules (with the packages they open) and
    third-party top-level names."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def add(name: str, node: ast.stmt, in_function: bool) -> None:
        if name.split(".")[0] != PACKAGE:
            found.append(Import(module, name.split(".")[0], path, node.lineno, in_function))
            return
        while name not in modules:  # `from azjax.games import Game`: the package
            name = name.rpartition(".")[0]
        found.append(Import(module, name, path, node.lineno, in_function))
        parent = name.rpartition(".")[0]
        while parent.startswith(PACKAGE + ".") and not (module + ".").startswith(parent + "."):
            found.append(Import(module, parent, path, node.lineno, in_function, implied=True))
            parent = parent.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child, inner)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    base = child.module
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in modules else base, child, inner)
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False)
    return found


def _layer_order() -> list[list[str]]:
    """The wings of `azjax._WINGS`, lowest first, each as its dotted module names."""
    return [[f"{PACKAGE}.{word}" for word in wing.split()] for wing in azjax._WINGS]


def _layers(modules: dict[str, Path], order: list[list[str]]) -> tuple[dict[str, int], list[str]]:
    """Each module's wing (the index of the wing of its longest word) and the modules
    without one."""
    layer, missing = {}, []
    words = [(word, i) for i, wing in enumerate(order) for word in wing]
    for module in modules:
        holders = [(w, i) for w, i in words if module == w or module.startswith(w + ".")]
        if module == PACKAGE:
            # Runs before any module: it imports the plain helpers' `xla_flags` (flags set
            # before jax starts) and the rest on first use, by name.
            layer[module] = 0
        elif holders:
            layer[module] = max(holders, key=lambda h: len(h[0]))[1]
        else:
            missing.append(module)
    return layer, missing


MODULES = _modules()
IMPORTS = [found for m, path in MODULES.items() for found in _imports(m, path, MODULES)]
INTERNAL = [i for i in IMPORTS if i.target in MODULES]


def _cycles(imports: list[Import]) -> list[list[Import]]:
    """One cycle of imports through each strongly connected group of modules (Tarjan)."""
    edges: dict[str, dict[str, Import]] = {}
    for found in imports:
        if found.target != found.source:
            edges.setdefault(found.source, {}).setdefault(found.target, found)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, {}):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    cycles = []
    for group in groups:
        start = min(group)
        paths = {start: []}  # breadth first back to `start` within the group
        queue = [start]
        while queue:
            node = queue.pop(0)
            for target, found in sorted(edges.get(node, {}).items()):
                if target == start:
                    cycles.append([*paths[node], found])
                    queue = []
                    break
                if target in group and target not in paths:
                    paths[target] = [*paths[node], found]
                    queue.append(target)
    return cycles


def test_layer_order_holds_every_module():
    order = _layer_order()
    words = [w for wing in order for w in wing]
    assert len(words) == len(set(words)), f"a word twice in azjax._WINGS: {words}"
    _, missing = _layers(MODULES, order)
    assert not missing, f"modules in no wing of azjax._WINGS: {missing}"
    stale = [w for w in words if not any(m == w or m.startswith(w + ".") for m in MODULES)]
    assert not stale, f"words of azjax._WINGS that name no module: {stale}"


def test_the_applications_are_no_larger_than_the_library():
    """`apps/` (commands, protocols, web board, sweeps, benchmarks) holds at most as many
    lines of Python as `core/` and `games/` together."""

    def lines(wing: str) -> int:
        return sum(len(p.read_text().splitlines()) for p in (ROOT / PACKAGE / wing).rglob("*.py"))

    apps, library = lines("apps"), lines("core") + lines("games")
    assert apps <= library, f"apps/ has {apps} lines, core/ and games/ {library}"


def test_no_package_file_is_ignored_by_git():
    # An ignore pattern that matched a package folder once kept a new module out of a
    # commit: it was here, imported and tested, and missing from every clone.
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--", PACKAGE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ignored = [p for p in listed if "__pycache__" not in p and not p.endswith(".pyc")]
    assert not ignored, f"package files that git ignores (never committed): {ignored}"


def test_no_import_cycle():
    cycles = _cycles(INTERNAL)
    lines = [
        " -> ".join([cycle[0].source, *(i.target for i in cycle)])
        + "".join(f"\n    {i.where}: {i.source} imports {i.target}" for i in cycle)
        for cycle in cycles
    ]
    assert not cycles, f"{len(cycles)} import cycles:\n" + "\n".join(lines)


def _upward(imports: list[Import], order: list[str], layer: dict[str, int]) -> list[str]:
    """The imports from a lower layer to a higher one, one line per statement and module."""

    def entry(module: str) -> str:
        return " ".join(order[layer[module]]) if layer[module] >= 0 else module

    lines = [
        f"{i.where}: {i.source} ({entry(i.source)}) imports {i.target} ({entry(i.target)}), "
        "a higher layer"
        for i in imports
        if i.source in layer and i.target in layer and layer[i.target] > layer[i.source]
    ]
    return list(dict.fromkeys(lines))


def _hidden(imports: list[Import]) -> list[str]:
    """The imports inside functions that neither an optional dependency nor an entry point
    explains, one line per statement and module."""
    lines = [
        f"{i.where}: {i.source} imports {i.target} inside a function"
        for i in imports
        if i.in_function
        and not i.implied
        and i.source not in ENTRY_POINTS
        and i.target not in OPTIONAL_DEPENDENCIES
    ]
    return list(dict.fromkeys(lines))


def test_imports_go_down_the_layers():
    order = _layer_order()
    layer, _ = _layers(MODULES, order)
    upward = _upward(INTERNAL, order, layer)
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_imports_inside_functions_only_of_optional_dependencies():
    hidden = _hidden(IMPORTS)
    assert not hidden, (
        "imports inside functions (move them to the top of the file, or list an optional "
        "dependency in tests/test_layers.py):\n" + "\n".join(hidden)
    )
    lazy = {i.target for i in IMPORTS if i.in_function and i.source not in ENTRY_POINTS}
    stale = [name for name in OPTIONAL_DEPENDENCIES if name not in lazy]
    assert not stale, f"OPTIONAL_DEPENDENCIES that no function imports: {stale}"


def test_the_checks_see_a_cycle_an_upward_import_and_a_hidden_one(tmp_path):
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    files = {
        "azjax": ("__init__.py", ""),
        "azjax.a": ("a.py", "from azjax import b\n"),
        "azjax.b": ("b.py", "def f():\n    from . import a\n    import json\n"),
        "azjax.sub": ("sub/__init__.py", "from .c import C\n"),
        "azjax.sub.c": ("sub/c.py", "import azjax.a\nC = 1\n"),
    }
    modules = {}
    for name, (file, text) in files.items():
        modules[name] = package / file
        modules[name].write_text(text)
    imports = [found for m, path in modules.items() for found in _imports(m, path, modules)]
    internal = [i for i in imports if i.target in modules]
    assert [(i.source, i.target, i.line, i.in_function) for i in internal] == [
        ("azjax.a", "azjax.b", 1, False),
        ("azjax.b", "azjax.a", 2, True),
        ("azjax.sub", "azjax.sub.c", 1, False),
        ("azjax.sub.c", "azjax.a", 1, False),
    ]
    assert [[i.target for i in cycle] for cycle in _cycles(internal)] == [["azjax.b", "azjax.a"]]
    order = [["azjax.a"], ["azjax.sub"], ["azjax.b"]]  # a below b: its import of b goes up
    layer, missing = _layers(modules, order)
    assert not missing and layer["azjax.sub.c"] == 1 and layer["azjax"] == 0
    assert _upward(internal, order, layer) == [
        f"{package / 'a.py'}:1: azjax.a (azjax.a) imports azjax.b (azjax.b), a higher layer"
    ]
    assert _hidden(imports) == [
        f"{package / 'b.py'}:2: azjax.b imports azjax.a inside a function",
        f"{package / 'b.py'}:3: azjax.b imports json inside a function",
    ]


# A config's sections: its keys are `config.SECTION.KEY` (and `config.seed`, `config.game`,
# ...); below the applications only `config/` reads them, and hands records up.
CONFIG_NAMES = {"train", "eval", "search", "selfplay", "learner", "replay", "network"}
CONFIG_NAMES |= {"seed", "game", "game_kwargs", "name"}
KEY_FREE_WINGS = ("runs", "matches", "training")


def _key_reads(path: Path) -> list[str]:
    """`config.<section or top-level key>` read in a module (docstrings are not code): where
    `config` is a name, an attribute or an item of a list named so."""

    def is_config(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
        return name in ("config", "configs")

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: config.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in CONFIG_NAMES and is_config(node.value)
    ]


def test_runs_matches_and_training_read_no_config_key():
    """`config/build.py` turns a config into records (`Settings`: the `Pipeline`,
    `RunSettings`, `EvalSettings`, `AgentSettings`, ...); the wings above it up to the
    applications use those, so a key's name appears only where it is defined and where it is
    mapped."""
    reads = [
        read
        for module, path in MODULES.items()
        if module.split(".")[1:2] and module.split(".")[1] in KEY_FREE_WINGS
        for read in _key_reads(path)
    ]
    assert not reads, "config keys read outside config/:\n" + "\n".join(reads)
    probe = ROOT / "azjax" / "config" / "build.py"
    assert _key_reads(probe), "the check sees no read in build.py itself"


def _config_handlers() -> set[str]:
    """The modules of `config/` that handle a ConfigDict: those that import ml_collections
    (loading, overrides, validation, `build`)."""
    return {
        i.source
        for i in IMPORTS
        if i.target == "ml_collections" and i.source.startswith(f"{PACKAGE}.config")
    }


def test_runs_matches_and_training_receive_records_not_configs():
    """Each command builds its records once (`build.make_settings`) and hands them down, so
    `runs/`, `matches/` and `training/` never hold a config: none of their modules imports
    `config/build.py`, ml_collections or another module of `config/` that handles a
    ConfigDict. What they may import of `config/` takes and gives plain data: the records
    (`config.settings`), the key table, the opponent specs, and a saved run's records
    (`config.saved`: a path in, `Settings` out)."""
    handlers = _config_handlers()
    assert {f"{PACKAGE}.config", f"{PACKAGE}.config.build"} <= handlers, handlers
    forbidden = handlers | {"ml_collections"}
    found = [
        f"{i.where}: {i.source} imports {i.target}"
        for i in IMPORTS
        if not i.implied
        and i.target in forbidden
        and i.source.split(".")[1:2]
        and i.source.split(".")[1] in KEY_FREE_WINGS
    ]
    assert not found, "a config handled below the applications:\n" + "\n".join(found)
