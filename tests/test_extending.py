"""The recipes of docs/extending.md stay true.

A recipe is a section (`## ...`) of the page holding a ```diff block: the change, a
unified diff against the repository; a ```bash block with its `azjax train` command; and a
```py block, its check. For each recipe, on a copy of `azjax/` and `experiments/`:

- the diff applies (`git apply`) and touches at most two files of the package (`azjax/`;
  an experiment in `experiments/` is outside it);
- (slow) the page's `azjax train` command trains 2 iterations with the patched package,
  sized down (`SMALL`), and writes a metrics line for each;
- (slow) the check runs with the patched package and exits 0, and shows the change: run
  with the package unpatched it fails or prints something else.

Each step runs in a child process whose PYTHONPATH is the copy, from the copy's root
(`--config NAME` finds `experiments/NAME.py` there).
"""

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, subprocess_env

ROOT = Path(REPO).resolve()
PAGE = ROOT / "docs" / "extending.md"
MAX_PACKAGE_FILES = 2
# The training of docs/redesign/run.sh's fixed-seed runs, smaller still, without evaluation.
SMALL = [
    "--config.network.channels=8",
    "--config.network.num_blocks=1",
    "--config.network.value_hidden=8",
    "--config.search.num_simulations=8",
    "--config.selfplay.batch_size=8",
    "--config.selfplay.num_steps=8",
    "--config.replay.capacity=1024",
    "--config.replay.min_size=16",
    "--config.learner.batch_size=16",
    "--config.learner.updates_per_iteration=2",
    "--config.train.checkpoint_every=2",
    "--config.train.max_minutes=0",
    "--config.eval.every=0",
    "--config.seed=7",
    "--config.train.num_iterations=2",
]
FENCE = re.compile(r"^```(?P<info>\S*)\s*$")


@dataclasses.dataclass(frozen=True)
class Recipe:
    heading: str
    diff: str
    train: list[str]  # the arguments of its `azjax train` command
    check: str


def recipes() -> list[Recipe]:
    """The recipes of the page, in order: each section holding a ```diff block."""
    sections: dict[str, dict[str, list[str]]] = {}
    heading, info, block = "top", None, []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        fence = FENCE.match(line)
        if info is not None:
            if line.rstrip() == "```":
                blocks = sections.setdefault(heading, {})
                blocks.setdefault(info, []).append("\n".join(block) + "\n")
                info = None
            else:
                block.append(line)
        elif fence:
            info, block = fence["info"], []
        elif line.startswith("## "):
            heading = line[3:].strip()
    found = []
    for heading, blocks in sections.items():
        if "diff" not in blocks:
            continue
        commands = [
            shlex.split(line, comments=True)
            for bash in blocks.get("bash", [])
            for line in bash.splitlines()
            if line.startswith("azjax train ")
        ]
        assert len(blocks["diff"]) == 1, f"{heading}: one ```diff block, not {len(blocks['diff'])}"
        assert len(commands) == 1, f"{heading}: one `azjax train` command in a ```bash block"
        assert len(blocks.get("py", [])) == 1, f"{heading}: one ```py block, its check"
        found.append(Recipe(heading, blocks["diff"][0], commands[0][2:], blocks["py"][0]))
    return found


RECIPES = recipes()


def copy_package(folder: Path) -> Path:
    """A copy of the repository's `azjax/` and `experiments/` in `folder/repo`."""
    copy = folder / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("azjax", "experiments"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    return copy


def apply(recipe: Recipe, copy: Path) -> list[str]:
    """Applies the recipe's diff to `copy`; returns the paths it touches."""
    patch = copy.parent / "recipe.diff"
    patch.write_text(recipe.diff, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)  # paths from the copy's root
    touched = subprocess.run(
        ["git", "apply", "--numstat", str(patch)],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = subprocess.run(["git", "apply", str(patch)], cwd=copy, capture_output=True, text=True)
    assert result.returncode == 0, f"{recipe.heading}: the diff does not apply:\n{result.stderr}"
    return [line.split("\t")[2] for line in touched.splitlines()]


def run(command: list[str], package: Path, cwd: Path) -> subprocess.CompletedProcess:
    """`command` in a child process that imports azjax from `package` (a folder)."""
    env = subprocess_env(JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = str(package)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def test_the_page_has_the_recipes():
    assert [recipe.heading for recipe in RECIPES] == [
        "A new selection rule",
        "A new value target",
        "A new game",
    ]


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: recipe.heading)
def test_the_diff_applies_to_at_most_two_files_of_the_package(recipe, tmp_path):
    touched = apply(recipe, copy_package(tmp_path))
    package = [path for path in touched if path.startswith("azjax/")]
    assert 1 <= len(package) <= MAX_PACKAGE_FILES, f"{recipe.heading} touches {touched}"


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda recipe: recipe.heading)
def test_the_recipe_trains_and_its_check_shows_the_change(recipe, tmp_path):
    copy = copy_package(tmp_path)
    apply(recipe, copy)
    where = run([sys.executable, "-c", "import azjax; print(azjax.__file__)"], copy, copy)
    assert Path(where.stdout.strip()).is_relative_to(copy), where.stdout + where.stderr

    workdir = tmp_path / "run"
    train = [sys.executable, "-m", "azjax.apps.cli", "train", *recipe.train]
    result = run([*train, "--workdir", str(workdir), *SMALL], copy, copy)
    assert result.returncode == 0, f"{recipe.heading}: training failed:\n{result.stderr[-4000:]}"
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [1, 2]

    script = tmp_path / "check.py"
    script.write_text(recipe.check, encoding="utf-8")
    (tmp_path / "patched").mkdir()
    (tmp_path / "unpatched").mkdir()
    patched = run([sys.executable, str(script)], copy, tmp_path / "patched")
    assert patched.returncode == 0, (
        f"{recipe.heading}: the check fails with the recipe:\n{patched.stdout}\n"
        f"{patched.stderr[-4000:]}"
    )
    unpatched = run([sys.executable, str(script)], ROOT, tmp_path / "unpatched")
    assert unpatched.returncode != 0 or unpatched.stdout != patched.stdout, (
        f"{recipe.heading}: the check shows no change; it prints, with and without the "
        f"recipe:\n{patched.stdout}"
    )


def test_the_training_overrides_are_config_keys():
    from azjax.config import KEYS  # noqa: PLC0415

    for override in SMALL:
        assert override.startswith("--config.") and override[9:].partition("=")[0] in KEYS
