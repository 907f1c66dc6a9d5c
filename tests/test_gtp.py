"""The GTP engine: protocol responses, errors for bad commands and input (a fuzz test), and
complete games against GNU Go (Debian package `gnugo`, installed by .ci/run; the test is
skipped where it is missing) through a small referee.

The referee checks our engine against GNU Go as an independent Go implementation: every
move either engine generates must be accepted by the other, the stones on the board (GNU Go's
`list_stones`) must agree after every move, and our final score must equal a plain-Python
Tromp-Taylor count of GNU Go's final board.
"""

import io
import random
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, REPO, require_program, subprocess_env, tiny_config, untrained_run

from azjax import agent as agent_lib
from azjax import cli
from azjax.protocols import gtp

# One entry per compilation of the search of the `engine` fixture: komi is a field of the
# state, so one compilation serves every komi (and every test of this module).
SEARCH_TRACES = []
MAKE_SEARCHER = gtp.build.make_agent_searcher


def make_counted_searcher(*args, **kwargs):
    search = MAKE_SEARCHER(*args, **kwargs)

    def counted(*inputs):
        SEARCH_TRACES.append(None)  # the Python body runs once per compilation
        return search(*inputs)

    return counted


@pytest.fixture(scope="module")
def engine(go_run, tmp_path_factory):
    agent = agent_lib.load_agent(go_run, num_simulations=4)
    sgf_dir = tmp_path_factory.mktemp("gtp_sgf")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gtp.build, "make_agent_searcher", make_counted_searcher)
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
        # Numbers and command ids are ASCII digits: str.isdigit and float() take more.
        ("boardsize \u00b2", "? boardsize not an integer"),  # superscript two
        ("boardsize \u0669", "? boardsize not an integer"),  # Arabic-Indic nine
        ("boardsize 99999999999999999999", "? boardsize not an integer"),
        ("\u0661 name", "? unknown command"),  # Arabic-Indic one is no command id
        ("time_settings 1 \u00b2 2", "? syntax error"),
        ("time_left b 1_0 0", "? syntax error"),
        ("komi \u0663.5", "? komi not a float"),
        ("komi 1_0", "? komi not a float"),
        # Komi is finite and at most the number of points either way.
        ("komi nan", "? komi not a float"),
        ("komi inf", "? komi not a float"),
        ("komi -Infinity", "? komi not a float"),
        ("komi 1e999", "? komi must be a finite number from -81 to 81"),
        ("komi 81.5", "? komi must be a finite number from -81 to 81"),
        ("komi -100", "? komi must be a finite number from -81 to 81"),
        ("printsgf a b", "? syntax error"),
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


def test_printsgf_reports_paths_it_cannot_write(engine, tmp_path):
    ask(engine, "clear_board")
    ask(engine, "play b E5")
    blocker = tmp_path / "file"
    blocker.write_text("")
    for path, reason in [
        (tmp_path, "Is a directory"),
        (tmp_path / "missing" / "game.sgf", "No such file or directory"),
        (blocker / "game.sgf", "Not a directory"),
    ]:
        assert ask(engine, f"printsgf {path}") == f"? cannot write SGF to {path}: {reason}\n\n"
    path = tmp_path / "game.sgf"
    assert ask(engine, f"printsgf {path}") == "=\n\n"
    assert path.read_text().startswith("(;GM[1]FF[4]")


def test_komi_is_state_and_the_search_compiles_once(engine):
    for komi, empty_board in [("6.5", "W+6.5"), ("0.5", "W+0.5"), ("-80", "B+80"), ("81", "W+81")]:
        assert ask(engine, "clear_board") == "=\n\n"
        assert ask(engine, f"komi {komi}") == "=\n\n"
        assert ask(engine, "final_score") == f"= {empty_board}\n\n"
        assert ask(engine, "genmove b").startswith("= ")
        assert f"KM[{komi}]" in ask(engine, "printsgf")
    assert len(SEARCH_TRACES) == 1
    assert ask(engine, "komi 100") == "? komi must be a finite number from -81 to 81\n\n"
    # Komi changes the game in progress, undo included; the next game keeps it.
    ask(engine, "clear_board")
    ask(engine, "play b E5")  # black owns all 81 points
    assert ask(engine, "komi 0.5") == "=\n\n"
    assert ask(engine, "final_score") == "= B+80.5\n\n"
    ask(engine, "undo")
    assert ask(engine, "final_score") == "= W+0.5\n\n"
    ask(engine, "clear_board")
    assert ask(engine, "final_score") == "= W+0.5\n\n"
    # Two passes end the game and its rewards follow the state's komi.
    ask(engine, "komi -0.5")
    ask(engine, "play b pass")
    ask(engine, "play w pass")
    assert engine.state.terminated and engine.state.rewards.tolist() == [1.0, -1.0]
    ask(engine, "komi 7.5")


# Bytes that are not UTF-8 (a lone continuation byte, an invalid start, a truncated
# sequence), in a command id, a command and a line of their own.
RAW_INPUT = b"1 name\n2 \xff\xfe\x80 name\n3 n\xe9me\n\xc3\x28\n\x80\n4 name\n"
RAW_RESPONSES = (
    "=1 azjax\n\n?2 unknown command\n\n?3 unknown command\n\n? unknown command\n\n"
    "? unknown command\n\n=4 azjax\n\n"
)


def test_serve_survives_bytes_that_are_not_utf8(engine):
    strict = io.TextIOWrapper(io.BytesIO(RAW_INPUT), encoding="utf-8", errors="strict")
    stdout = io.StringIO()
    assert gtp.serve(engine, strict, stdout) == 0
    assert stdout.getvalue() == RAW_RESPONSES
    stdout = io.StringIO()
    assert gtp.serve(engine, io.BytesIO(RAW_INPUT), stdout) == 0  # a binary stream
    assert stdout.getvalue() == RAW_RESPONSES
    # A response that echoes non-ASCII input reaches a stdout whose encoding is ASCII.
    ascii_stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    gtp.serve(engine, io.BytesIO("printsgf /nonexistent/\u00e9.sgf\n".encode()), ascii_stdout)
    expected = "? cannot write SGF to /nonexistent/\u00e9.sgf: No such file or directory\n\n"
    assert ascii_stdout.buffer.getvalue() == expected.encode()


def test_gtp_command_survives_bytes_that_are_not_utf8(go_run):
    result = subprocess.run(
        [PYTHON, "-m", "azjax.cli", "gtp", "--workdir", str(go_run)],
        input=RAW_INPUT + b"5 quit\n",
        capture_output=True,
        env=subprocess_env(PYTHONIOENCODING="utf-8:strict"),
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout.decode() == RAW_RESPONSES + "=5\n\n"


def fuzz_lines(num_lines: int, seed: int) -> list[bytes]:
    """Random and malformed GTP input lines (bytes ending in a newline): random bytes,
    random tokens, every known command with random arguments of any arity, well-formed
    moves, huge numbers, digits that are not ASCII, odd whitespace and control characters."""
    rng = random.Random(seed)
    numbers = [
        *("0", "9", "19", "-1", "+5", "7.5", ".5", "5.", "-0", "6.5e0", "1e", "0x10", "--1"),
        *("1e999", "-1e999", "nan", "NaN", "inf", "-inf", "Infinity", "1_0", "9" * 40, "9" * 5000),
        *("\u00b2", "\u0661", "\u0663.\u0665", "\uff19", "\u2168", "\U0001d7d7"),
    ]
    words = [
        *gtp.COMMANDS,
        *("fly", "NAME", "Known_Command", "kgs_time_settings", "b", "w", "black", "WHITE"),
        *("green", "E5", "e5", "A1", "J9", "I5", "Z9", "A10", "A0", "pass", "PASS", "resign"),
        *("none", "absolute", "byoyomi", "canadian", ".", "/", "/proc/version", "x.sgf"),
        *("/nonexistent/x.sgf", "\u00e9", "\ufffd", "\U0001f004", "\u212a", "=", "?", "\\"),
    ]
    tokens = words + numbers
    spaces = [" ", "  ", "\t", "\r", "\x0b", "\x0c", "\x00", "\x1b", "\x7f", "\xa0", "\u3000"]
    vertices = [f"{c}{r}" for c in "ABCDEFGHJ" for r in range(1, 10)] + ["pass"]
    lines = []
    for index in range(num_lines):
        kind = index % 5
        if kind == 0:
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
            lines.append(noise.replace(b"\n", b"") + b"\n")
            continue
        if kind == 1:
            parts = [rng.choice(gtp.COMMANDS)] + rng.choices(tokens, k=rng.randrange(5))
        elif kind == 2:
            parts = rng.choices(tokens, k=rng.randrange(1, 6))
        else:  # well-formed commands that move the game on, a search now and then
            command = rng.choices(
                ["play", "undo", "komi", "clear_board", "genmove", "list_stones"],
                weights=[80, 3, 4, 1, 2, 3],
            )[0]
            color = rng.choice(["b", "w"])
            parts = {
                "play": [command, color, rng.choice(vertices)],
                "komi": [command, rng.choice(numbers)],
                "genmove": [command, color],
                "list_stones": [command, color],
            }.get(command, [command])
        if rng.random() < 0.3:
            parts.insert(0, rng.choice(["1", "007", "\u0661", "\u00b2", "9" * 30, "-1", "1.5"]))
        text = "".join(word + (rng.choice(spaces) if rng.random() < 0.2 else " ") for word in parts)
        if rng.random() < 0.1:
            text += "# " + rng.choice(tokens)
        lines.append(text.encode() + b"\n")
    return lines


def check_response(response: str) -> None:
    assert response[0] in "=?" and response.endswith("\n\n"), repr(response)
    assert "\n\n" not in response[:-2], repr(response)  # a blank line ends a response
    assert "internal error" not in response, repr(response)


def test_random_and_malformed_input_gets_gtp_responses(engine, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)  # printsgf with a relative path writes here
    lines = fuzz_lines(3000, seed=0)
    try:
        for line in lines[:1500]:  # through respond, as a decoded line
            response = gtp.respond(engine, line.decode("utf-8", errors="replace"))
            if response is not None:
                check_response(response)
        data = b"".join(lines[1500:])  # through serve, as bytes; serving again after quit
        stdin, stdout = io.BytesIO(data), io.StringIO()
        while stdin.tell() < len(data):
            engine.finished = False
            gtp.serve(engine, stdin, stdout)
        responses = stdout.getvalue().split("\n\n")
        assert responses.pop() == ""
        for response in responses:
            check_response(response + "\n\n")
        assert "Traceback" not in capfd.readouterr().err
        # A normal game still works.
        engine.finished = False
        for command in ("boardsize 9", "clear_board", "komi 7.5", "play b E5", "play w C3"):
            assert ask(engine, command) == "=\n\n"
        move = ask(engine, "genmove b")[2:].strip()
        assert move == "pass" or move in ask(engine, "list_stones black").split()
        assert ask(engine, "final_score").startswith("= ")
        assert len(SEARCH_TRACES) == 1  # the komi changed hundreds of times
    finally:
        engine.finished = False
        ask(engine, "komi 7.5")
        ask(engine, "clear_board")


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
    gnugo_path = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
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
    gnugo = GtpProcess([gnugo_path, "--mode", "gtp", "--level", "0", "--chinese-rules"])
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
