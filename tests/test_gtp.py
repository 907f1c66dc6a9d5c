"""The GTP engine: protocol responses, errors for bad commands, and complete games against
GNU Go (Debian package `gnugo`, installed by .ci/run) through a small referee.

The referee checks our engine against GNU Go as an independent Go implementation: every
move either engine generates must be accepted by the other, the stones on the board (GNU Go's
`list_stones`) must agree after every move, and our final score must equal a plain-Python
Tromp-Taylor count of GNU Go's final board.
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, REPO, subprocess_env, tiny_config, untrained_run

from azjax import agent as agent_lib
from azjax import cli
from azjax.protocols import gtp

GNUGO = shutil.which("gnugo") or shutil.which("gnugo", path="/usr/games")


@pytest.fixture(scope="module")
def engine(go_run, tmp_path_factory):
    agent = agent_lib.load_agent(go_run, num_simulations=4)
    sgf_dir = tmp_path_factory.mktemp("gtp_sgf")
    return gtp.Engine(agent, sgf_dir=sgf_dir)


def ask(engine, line):
    return gtp.respond(engine, line)


def test_protocol_basics(engine):
    assert ask(engine, "protocol_version") == "= 2\n\n"
    assert ask(engine, "name") == "= azjax\n\n"
    assert ask(engine, "7 version").startswith("=7 0.1.0")
    assert ask(engine, "known_command genmove") == "= true\n\n"
    assert ask(engine, "known_command fly") == "= false\n\n"
    listed = ask(engine, "list_commands")[2:].split()
    for command in (
        "protocol_version",
        "name",
        "version",
        "known_command",
        "list_commands",
        "quit",
        "boardsize",
        "clear_board",
        "komi",
        "play",
        "genmove",
        "undo",
        "showboard",
        "final_score",
        "time_settings",
        "time_left",
    ):
        assert command in listed
    assert ask(engine, "") is None and ask(engine, "# a comment") is None
    assert ask(engine, "  name   # trailing comment") == "= azjax\n\n"
    assert ask(engine, "time_settings 300 30 5") == "=\n\n"
    assert ask(engine, "time_left b 280 0") == "=\n\n"
    assert ask(engine, "kgs-time_settings byoyomi 300 30 5") == "=\n\n"


@pytest.mark.parametrize(
    "line, error",
    [
        ("fly to the moon", "? unknown command"),
        ("boardsize 19", "? unacceptable size"),
        ("boardsize nine", "? boardsize not an integer"),
        ("komi lots", "? komi not a float"),
        ("play b", "? syntax error"),
        ("play green E5", "? invalid color"),
        ("play b Z9", "? invalid coordinate"),
        ("play b I5", "? invalid coordinate"),  # GTP skips the letter I
        ("play b E10", "? invalid coordinate"),
        ("genmove", "? syntax error"),
        ("time_settings 1 x 2", "? syntax error"),
        ("12", "?12 syntax error"),
    ],
)
def test_bad_commands_get_error_responses(engine, line, error):
    assert ask(engine, "clear_board") == "=\n\n"
    assert ask(engine, line) == error + "\n\n"


def test_play_undo_score_and_illegal_moves(engine):
    ask(engine, "clear_board")
    assert ask(engine, "komi 7.5") == "=\n\n"
    assert ask(engine, "final_score") == "= W+7.5\n\n"  # empty board: komi only
    assert ask(engine, "play black E5") == "=\n\n"
    # One black stone owns the whole empty board: 81 points - 7.5 komi (Tromp-Taylor).
    assert ask(engine, "final_score") == "= B+73.5\n\n"
    assert ask(engine, "play w e5") == "? illegal move\n\n"  # occupied
    assert ask(engine, "list_stones black") == "= E5\n\n"
    assert ask(engine, "undo") == "=\n\n"
    assert ask(engine, "list_stones black") == "=\n\n"
    assert ask(engine, "undo") == "? cannot undo\n\n"
    # Two black moves in a row: a white pass is inserted between them.
    assert ask(engine, "play b A1") == "=\n\n"
    assert ask(engine, "play b B2") == "=\n\n"
    assert ask(engine, "list_stones b") == "= B2 A1\n\n"
    # Capture in the corner: white A2, B1 take black A1 (after black's B2 white plays B1).
    for move in ("play w A2", "play b J9", "play w B1"):
        assert ask(engine, move) == "=\n\n"
    assert ask(engine, "list_stones black") == "= J9 B2\n\n"
    assert "\n" in ask(engine, "showboard")
    # Suicide is illegal: black A1 would have no liberty and capture nothing (white A2 and
    # B1 keep liberties at A3 and C1).
    assert ask(engine, "play b A1") == "? illegal move\n\n"
    assert ask(engine, "komi 6") == "=\n\n"
    score = ask(engine, "final_score")
    assert score.startswith("= B+") or score.startswith("= W+") or score == "= 0\n\n"


def test_genmove_plays_a_legal_move_and_pass_ends(engine):
    ask(engine, "clear_board")
    response = ask(engine, "genmove b")
    assert response.startswith("= ")
    move = response[2:].strip()
    assert move == "pass" or ask(engine, "list_stones black") == f"= {move}\n\n"
    assert ask(engine, "reg_genmove w").startswith("= ")  # nothing is played
    assert ask(engine, "list_stones white") == "=\n\n"
    assert ask(engine, "play w pass") == "=\n\n"
    assert ask(engine, "play b pass") == "=\n\n"  # two passes end the game
    assert ask(engine, "genmove w") == "= pass\n\n"
    assert ask(engine, "play w D4").startswith("? illegal move")
    assert ask(engine, "printsgf").startswith("= (;GM[1]FF[4]")
    assert ask(engine, "clear_board") == "=\n\n"
    saved = sorted(Path(engine.sgf_dir).glob("*.sgf"))
    assert saved and "RE[" in saved[-1].read_text()


class GtpProcess:
    """A GTP engine in a child process: send a command, read its response."""

    def __init__(self, argv, **kwargs):
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kwargs
        )

    def send(self, command: str) -> tuple[bool, str]:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            line = self.process.stdout.readline()
            assert line, f"engine exited during {command!r}"
            if line == "\n" and lines:
                break
            lines.append(line.rstrip("\n"))
        text = "\n".join(lines)
        assert text[0] in "=?", text
        return text[0] == "=", text[1:].strip()

    def ok(self, command: str) -> str:
        success, text = self.send(command)
        assert success, f"{command!r} failed: {text}"
        return text

    def close(self):
        self.send("quit")
        self.process.wait(timeout=60)


def stones(engine: GtpProcess) -> dict[str, set[str]]:
    return {color: set(engine.ok(f"list_stones {color}").split()) for color in ("black", "white")}


def tromp_taylor(board: dict[str, set[str]], size: int, komi: float) -> float:
    """Area score (black - white - komi) of a board given as vertex sets: stones plus empty
    regions that reach only one colour. A plain-Python reference for the test."""
    letters = "ABCDEFGHJKLMNOPQRST"[:size]
    colour = {v: "black" for v in board["black"]} | {v: "white" for v in board["white"]}
    points = [f"{c}{r}" for c in letters for r in range(1, size + 1)]

    def neighbours(vertex):
        column, row = letters.index(vertex[0]), int(vertex[1:])
        for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= column + dc < size and 1 <= row + dr <= size:
                yield f"{letters[column + dc]}{row + dr}"

    area = {"black": len(board["black"]), "white": len(board["white"])}
    seen = set()
    for start in points:
        if start in colour or start in seen:
            continue
        region, reaches, frontier = {start}, set(), [start]
        while frontier:
            for neighbour in neighbours(frontier.pop()):
                if neighbour in colour:
                    reaches.add(colour[neighbour])
                elif neighbour not in region:
                    region.add(neighbour)
                    frontier.append(neighbour)
        seen |= region
        if len(reaches) == 1:
            area[reaches.pop()] += len(region)
    return area["black"] - area["white"] - komi


def test_complete_games_against_gnugo(go_run, tmp_path):
    assert GNUGO, "GNU Go is needed: apt-get install gnugo (.ci/run installs it)"
    ours = GtpProcess(
        [
            PYTHON,
            "-m",
            "azjax.cli",
            "gtp",
            "--workdir",
            str(go_run),
            "--simulations",
            "4",
            "--sgf-dir",
            str(tmp_path),
        ],
        env=subprocess_env(),
        cwd=REPO,
    )
    gnugo = GtpProcess([GNUGO, "--mode", "gtp", "--level", "0", "--chinese-rules"])
    try:
        for ours_black in (True, False):
            for engine in (ours, gnugo):
                engine.ok("boardsize 9")
                engine.ok("clear_board")
                engine.ok("komi 7.5")
            players = {"black": ours if ours_black else gnugo}
            players["white"] = gnugo if ours_black else ours
            passes, moves, color = 0, 0, "black"
            while passes < 2 and moves < 300:
                move = players[color].ok(f"genmove {color}")
                assert move.lower() != "resign"  # neither engine resigns here
                other = players["white" if color == "black" else "black"]
                other.ok(f"play {color} {move}")
                assert stones(ours) == stones(gnugo), f"boards differ after move {moves}"
                passes = passes + 1 if move.lower() == "pass" else 0
                moves += 1
                color = "white" if color == "black" else "black"
            assert passes == 2, "the game did not end by two passes within 300 moves"
            print(f"ours black={ours_black}: {moves} moves, {ours.ok('final_score')}")
            final = stones(gnugo)
            expected = tromp_taylor(final, 9, 7.5)
            assert ours.ok("final_score") == (
                f"B+{expected:g}" if expected > 0 else f"W+{-expected:g}" if expected else "0"
            )
        ours.close()
        records = sorted(tmp_path.glob("*.sgf"))
        assert len(records) == 2
    finally:
        for engine in (ours, gnugo):
            if engine.process.poll() is None:
                engine.process.kill()


def test_gtp_needs_a_go_run(tmp_path, capsys):
    run = untrained_run(tmp_path / "ttt", tiny_config("tic_tac_toe"))
    assert cli.main(["gtp", "--workdir", str(run)]) == 2
    assert "the GTP engine plays go; this run plays tic_tac_toe" in capsys.readouterr().err
    assert cli.main(["gtp", "--workdir", str(tmp_path / "nothing")]) == 2
    assert "not an azjax run directory" in capsys.readouterr().err
