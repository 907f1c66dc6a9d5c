"""The README and the pages in docs/: their Python blocks run, their links resolve.

Every ```python block of README.md and docs/*.md (but docs/architecture.md, whose blocks are
interface signatures, not programs) is a test of its own, named by its file,
the heading above it and its number under that heading (`README.md::from-python-1`). It
runs as a script in a fresh process whose working folder is an empty tmp_path, with the
repository on PYTHONPATH, and must exit with status 0: what a reader copies must run as it
stands. Blocks that train or compute for more than a few seconds (they call one of
`SLOW_CALLS`) are marked slow; the rest run with the default suite.

A block may be left out only where the Markdown marks it, on the line right before its
fence, with a visible reason: `<!-- not run: REASON -->`. The blocks left out now, with
their reasons:

- none.

`test_left_out_blocks_are_listed_here` keeps that list true. Besides the blocks: the README
stays at most 300 lines, every relative link (files and #anchors) resolves, and no page
cites an issue number, which a reader could not open.

The README's table of the zoo is written from the agents' cards (the measured truth) by

    python tests/test_readme.py

and `test_the_readme_shows_the_zoo_cards` fails where they differ; a score the README gives
elsewhere for a zoo agent must be in its card's notes.
"""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, subprocess_env

ROOT = Path(REPO).resolve()
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
ZOO = ROOT / "azjax" / "matches" / "zoo" / "agents"
ZOO_START = "<!-- written from the zoo's cards by `python tests/test_readme.py`: edit the cards, not this -->\n"  # noqa: E501
ZOO_END = "<!-- end of the zoo's table -->"
SCORE = r"\d\.\d{3} \(\d\.\d{3}-\d\.\d{3}\)"  # 0.955 (0.917-0.976)
# docs/architecture.md shows the modules' signatures in python blocks: read, not run.
PROGRAM_PAGES = [page for page in PAGES if page.name != "architecture.md"]
README_MAX_LINES = 300
# A block that calls any of these trains, compiles a search or steps a game: seconds at least.
SLOW_CALLS = ("train.train(", "train_population(", "tournament.run(", "play_step", ".step(")
LEFT_OUT = re.compile(r"^<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*(?P<info>\S*)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    heading: str  # the slug of the heading above the block ("top" before any)
    index: int  # 1, 2, ... under that heading
    line: int  # the fence's line, 1-based
    code: str
    left_out: str | None  # the reason, where the page marks the block `not run`

    @property
    def id(self) -> str:
        return f"{self.page.name}::{self.heading}-{self.index}"

    @property
    def slow(self) -> bool:
        return any(call in self.code for call in SLOW_CALLS)


def slug(title: str) -> str:
    """The #anchor GitHub gives a heading (before numbering repeats)."""
    title = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", title).strip().lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def parse(page: Path) -> tuple[list[Block], list[str]]:
    """The page's Python blocks and its headings' anchors, code fences skipped."""
    blocks, anchors, seen = [], [], {}
    heading, index, fence, info, start, code, previous = "top", 0, None, "", 0, [], ""
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if fence is not None:
            if line.strip() == fence:
                if info == "python":
                    left_out = LEFT_OUT.match(previous.strip())
                    reason = left_out["reason"] if left_out else None
                    index += 1
                    blocks.append(Block(page, heading, index, start, "\n".join(code), reason))
                fence, previous = None, ""
            else:
                code.append(line)
            continue
        opening = FENCE.match(line)
        if opening:
            fence, info, start, code = opening.group(1), opening["info"].lower(), number, []
            continue
        title = HEADING.match(line)
        if title:
            base = slug(title["title"])
            anchor = f"{base}-{seen[base]}" if base in seen else base
            seen[base] = seen.get(base, 0) + 1
            anchors.append(anchor)
            heading, index = anchor, 0
        if line.strip():
            previous = line
    assert fence is None, f"{page.name}: a code fence opened at line {start} never closes"
    return blocks, anchors


def all_blocks() -> list[Block]:
    return [block for page in PROGRAM_PAGES for block in parse(page)[0]]


def block_params() -> list:
    params = []
    for block in all_blocks():
        marks = [pytest.mark.slow] if block.slow else []
        if block.left_out:
            marks.append(pytest.mark.skip(reason=f"not run: {block.left_out}"))
        params.append(pytest.param(block, id=block.id, marks=marks))
    return params


@pytest.mark.parametrize("block", block_params())
def test_python_block_runs(block, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(block.code + "\n")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=subprocess_env(MPLBACKEND="Agg"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{block.page.name}, the block at line {block.line}, exited with "
        f"{result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )


def test_pages_have_python_blocks():
    ids = [block.id for block in all_blocks()]
    assert any(i.startswith("README.md::") for i in ids)
    assert len(ids) == len(set(ids)), "two blocks with one id"


def test_left_out_blocks_are_listed_here():
    for block in all_blocks():
        if block.left_out:
            assert block.left_out in __doc__, f"{block.id} is not run ({block.left_out})"
    if not any(block.left_out for block in all_blocks()):
        assert "- none." in __doc__


# Pages that stay short: the architecture states rules, results keep the evidence for the
# current defaults and the zoo (history stays in git).
MAX_LINES = {"README.md": README_MAX_LINES, "docs/architecture.md": 350, "docs/results.md": 600}


@pytest.mark.parametrize("page", MAX_LINES)
def test_page_is_short(page):
    lines = len((ROOT / page).read_text().splitlines())
    assert lines <= MAX_LINES[page], f"{page} has {lines} lines (at most {MAX_LINES[page]})"


def links(page: Path):
    """The page's link targets outside code (fenced blocks and `inline code`)."""
    fence = None
    for line in page.read_text().splitlines():
        opening = FENCE.match(line)
        if fence is not None:
            fence = None if line.strip() == fence else fence
        elif opening:
            fence = opening.group(1)
        else:
            for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
                yield match["target"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in parse(file)[1]:
            broken.append(target)
        elif ROOT not in (file, *file.parents):
            broken.append(f"{target} (outside the repository)")
    assert not broken, f"{page.name}: broken links {broken}"


def test_no_page_cites_an_issue_number():
    files = [*PAGES, *sorted((ROOT / "tests").rglob("*.py"))]
    pattern = re.compile(r"issue ?[0-9]+", re.IGNORECASE)
    cited = [
        f"{file.relative_to(ROOT)}:{number}"
        for file in files
        for number, line in enumerate(file.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not cited, f"issue numbers a reader cannot open: {cited}"


# A home or work folder of the machine a file was made on (an author's run, a peer's model).
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|root|home/\w+|Users/\w+)/")


def test_no_committed_file_names_a_machines_absolute_path():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    named = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix in (".png", ".gif", ".ico"):
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        named += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1)
                  if MACHINE_PATH.search(line)]  # fmt: skip
    assert not named, f"a machine's absolute paths: {named}"


def _opponent(spec: str) -> str:
    """A card's opponent as the README names it: MCTS-N, random, minimax, an engine's spec."""
    if spec.startswith("mcts:"):
        return "MCTS-" + spec.removeprefix("mcts:")
    return f"`{spec}`" if ":" in spec else spec


def zoo_table() -> str:
    """The README's table of the zoo: one row per agent, from its card and config."""
    rows = [
        "| agent | trained | simulations | score (95% interval), 200 games each unless marked |",
        "|:--|:--|--:|:--|",
    ]
    for path in sorted(ZOO.glob("*/card.json")):
        card = json.loads(path.read_text())
        config = json.loads((path.parent / "config.json").read_text())
        scores = "; ".join(
            f"{_opponent(r['opponent'])} {r['score']:.3f} ({r['low']:.3f}-{r['high']:.3f})"
            + ("" if r["games"] == 200 else f", {r['games']} games")
            for r in card["ratings"]
        )
        trained = f"{card['train_minutes']:g} min, {card['iteration']} iterations, `{card['cpu']}`"
        rows.append(
            f"| `{card['name']}` | {trained} | {config['eval']['num_simulations']} | {scores} |"
        )
    return "\n".join(rows)


def with_zoo_table(text: str) -> str:
    """The README `text` with its table of the zoo written afresh from the cards."""
    start, end = text.index(ZOO_START) + len(ZOO_START), text.index(ZOO_END)
    return f"{text[:start]}\n{zoo_table()}\n\n{text[end:]}"


def test_the_readme_shows_the_zoo_cards():
    text = README.read_text()
    assert text == with_zoo_table(text), (
        "README.md's table of the zoo differs from the cards: run `python tests/test_readme.py`"
    )
    # Elsewhere in the README, a zoo agent's score is one its card holds.
    names = {path.parent.name for path in ZOO.glob("*/card.json")}
    outside = text.replace(text[text.index(ZOO_START) : text.index(ZOO_END)], "")
    unsourced = []
    for line in outside.splitlines():
        for name in set(re.findall(r"zoo `(\w+)`", line)) & names:
            notes = json.loads((ZOO / name / "card.json").read_text())["notes"]
            unsourced += [f"{name}: {s}" for s in re.findall(SCORE, line) if s not in notes]
    assert not unsourced, f"README.md scores of zoo agents not on their cards: {unsourced}"


if __name__ == "__main__":
    README.write_text(with_zoo_table(README.read_text()))
