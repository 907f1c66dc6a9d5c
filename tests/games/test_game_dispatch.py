"""No module picks a game's behaviour by its class name or its registered name (`game.name
== "xiangqi"`, `game.name.startswith("go_")`; `games.family_of(game)` is the way): per-game
text, pictures and web boards are the modules named after the game's family
(`azjax.games.companion`), so adding a game adds files instead of editing if-chains.

Read from the source with `ast`: a comparison, a `match` or a lookup (a subscript, `.get`)
of a class's name (`type(x).__name__`, `x.__class__.__name__`, or their `__qualname__`),
and a comparison with, or a dict keyed by, a string that names a class the game registry
makes ("Go", "Xiangqi") fail. Naming a class in a message or a repr is fine.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "azjax"


def _game_classes() -> set[str]:
    """The class names in the game registry (`_REGISTRY` of azjax/games/__init__.py)."""
    tree = ast.parse((PACKAGE / "games" / "__init__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "_REGISTRY" for t in targets):
                registry = ast.literal_eval(node.value)
                return {class_name for _, class_name, _ in registry.values()}
    raise AssertionError("azjax/games/__init__.py has no _REGISTRY")


def _is_class_name(node: ast.AST) -> bool:
    """`type(x).__name__` or `x.__class__.__name__` (or `__qualname__`)."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__")):
        return False
    owner = node.value
    return (
        isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "type"
    ) or (isinstance(owner, ast.Attribute) and owner.attr == "__class__")


def _names_a_game(node: ast.AST | None, classes: set[str]) -> bool:
    """A string naming a game class, or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in classes
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_game(e, classes) for e in node.elts)
    return False


def _is_game_name(node: ast.AST) -> bool:
    """`game.name` or `x.game.name`: a game's registered name ("go_9x9")."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "name"
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "game")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "game")
        )
    )


def _dispatches(source: str, classes: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each place in `source` that picks behaviour by a class name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_class_name(o) for o in operands):
                found.append((node.lineno, "compares a class name"))
            elif any(_names_a_game(o, classes) for o in operands):
                found.append((node.lineno, "compares with a game's class name"))
            elif any(_is_game_name(o) for o in operands) and any(
                isinstance(o, ast.Constant) and isinstance(o.value, str) for o in operands
            ):
                found.append((node.lineno, "compares the game's name"))
        elif isinstance(node, ast.Match) and _is_class_name(node.subject):
            found.append((node.lineno, "matches a class name"))
        elif isinstance(node, ast.Subscript) and _is_class_name(node.slice):
            found.append((node.lineno, "looks a class name up"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and _is_class_name(node.args[0])
        ):
            found.append((node.lineno, "looks a class name up"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
            and _is_game_name(node.func.value)
        ):
            found.append((node.lineno, "picks by a prefix of the game's name"))
        elif isinstance(node, ast.Dict) and any(_names_a_game(k, classes) for k in node.keys):
            found.append((node.lineno, "keys a table by game class names"))
    return sorted(found)


def test_no_module_dispatches_on_a_class_name():
    classes = _game_classes()
    assert {"Go", "Xiangqi", "TicTacToe"} <= classes
    lines = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, what in _dispatches(path.read_text(encoding="utf-8"), classes)
    ]
    assert not lines, (
        "modules that pick a game's behaviour by its class name (put it in the game's "
        "notation, render or serve/boards module instead):\n" + "\n".join(lines)
    )


def test_the_check_sees_each_kind_of_dispatch():
    source = """
if type(game).__name__ == "Go": pass
numbered = game.__class__.__qualname__ in NUMBERED
names = NAMES.get(type(game).__name__, ())
style = STYLES[type(game).__name__]
kind = type(game).__name__
if kind in ("Go", "Othello"): pass
COLOURS = {"Xiangqi": ("Red", "Black")}
match type(game).__name__:
    case _: pass
message = f"no picture for {type(game).__name__}"
if kind == "checkpoint": pass
TABLE = {"go_9x9": 1}
if game.name.startswith("go_"): pass
plays = agent.game.name == "xiangqi"
"""
    assert _dispatches(source, {"Go", "Othello", "Xiangqi"}) == [
        (2, "compares a class name"),
        (3, "compares a class name"),
        (4, "looks a class name up"),
        (5, "looks a class name up"),
        (7, "compares with a game's class name"),
        (8, "keys a table by game class names"),
        (9, "matches a class name"),
        (14, "picks by a prefix of the game's name"),
        (15, "compares the game's name"),
    ]
