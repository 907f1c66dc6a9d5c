"""The GTP engine: protocol responses, errors for bad commands and input (a fuzz test),
analysis in Leela Zero's and KataGo's formats streamed through pipes as a GUI reads it,
handicap, loadsgf, final_status_list, and complete games against GNU Go (Debian package
`gnugo`, installed by .ci/run; the tests are skipped where it is missing) through a small
referee.

The referee checks our engine against GNU Go as an independent Go implementation: every
move either engine generates must be accepted by the other, the stones on the board (GNU Go's
`list_stones`) must agree after every move, and our final score must equal a plain-Python
Tromp-Taylor count of GNU Go's final board.
"""

import datetime
import io
import os
import queue
import random
import re
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import PYTHON, REPO, require_program, subprocess_env, tiny_config, untrained_run
from sgfmill import boards
from sgfmill import sgf as sgfmill

from azjax.apps import cli
from azjax.apps.protocols import gtp, gtp_analysis, gtp_extensions, gtp_io
from azjax.config.settings import AgentSettings
from azjax.matches import agent as agent_lib

# One entry per compilation of the search of the `engine` fixture: komi is a field of the
# state, so one compilation serves every komi (and every test of this module).
SEARCH_TRACES = []
MAKE_SEARCHER = AgentSettings.searcher


def make_counted_searcher(*args, **kwargs):
    search = MAKE_SEARCHER(*args, **kwargs)

    def counted(*inputs):
        SEARCH_TRACES.append(None)  # the Python body runs once per compilation
        return search(*inputs)

    return counted


# The simulation counts of the analysis searches the `engine` fixture compiles, one entry per
# compilation: each count must compile once, however many analyses run.
ANALYSIS_TRACES = []
MAKE_SNAPSHOT_SEARCH = gtp_analysis.make_snapshot_search


def make_counted_snapshot_search(*args, num_simulations):
    search = MAKE_SNAPSHOT_SEARCH(*args, num_simulations=num_simulations)

    def counted(*inputs):
        ANALYSIS_TRACES.append(num_simulations)
        return search(*inputs)

    return counted


@pytest.fixture(scope="module")
def engine(go_run, tmp_path_factory):
    agent = agent_lib.load_agent(go_run, num_simulations=4)
    sgf_dir = tmp_path_factory.mktemp("gtp_sgf")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AgentSettings, "searcher", make_counted_searcher)
        patch.setattr(gtp_analysis, "make_snapshot_search", make_counted_snapshot_search)
        # Analyses search with 4, then 8 simulations (two compilations in all).
        return gtp.Engine(agent, sgf_dir=sgf_dir, analysis_simulations=(4, 8))


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
        *gtp_extensions.COMMANDS,
    ):
        assert command in listed
        assert ask(engine, f"known_command {command}") == "= true\n\n"
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
        # Analysis arguments as Leela Zero's AnalyzeTags and KataGo's parseAnalyzeCommand
        # read them: a bad interval, a key without value or an unknown key fails.
        ("lz-analyze -5", "? cannot parse analyze tags"),
        ("lz-analyze 1e999", "? cannot parse analyze tags"),
        ("lz-analyze interval nan", "? cannot parse analyze tags"),
        ("lz-analyze 10 minmoves", "? cannot parse analyze tags"),
        ("lz-analyze minmoves -1", "? cannot parse analyze tags"),
        ("lz-analyze \u0661", "? cannot parse analyze tags"),
        ("lz-analyze ownership true", "? cannot parse analyze tags"),  # KataGo's key only
        ("kata-analyze 10 pvVisits maybe", "? cannot parse analyze tags"),
        ("kata-analyze b 10 avoid b D4 1", "? cannot parse analyze tags"),
        ("genmove_analyze green", "? cannot parse analyze tags"),
        ("kgs-genmove_cleanup", "? syntax error"),
        ("final_status_list", "? syntax error"),
        ("final_status_list maybe", "? syntax error"),
        ("fixed_handicap 1", "? invalid number of stones"),
        ("fixed_handicap 10", "? invalid number of stones"),
        ("fixed_handicap two", "? invalid number of stones"),
        ("place_free_handicap 81", "? invalid number of stones"),
        ("set_free_handicap E5", "? bad vertex list"),
        ("set_free_handicap E5 e5", "? bad vertex list"),
        ("set_free_handicap E5 pass", "? bad vertex list"),
        ("set_free_handicap E5 Z9", "? invalid coordinate"),
        ("loadsgf", "? syntax error"),
        ("loadsgf x.sgf 1 2", "? syntax error"),
        ("loadsgf x.sgf 0", "? move number must be at least 1"),
        ("loadsgf x.sgf \u00b2", "? syntax error"),
        ("loadsgf /nonexistent/x.sgf", "? cannot load file: No such file or directory"),
        ("loadsgf /", "? cannot load file: not a regular file"),
        ("loadsgf /dev/null", "? cannot load file: not a regular file"),
        ("loadsgf /proc/version", "? cannot load file: SGF syntax error at character 0"),
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


# Leela Zero, src/UCTSearch.cpp: OutputAnalysisData::get_info_string writes a block
# ("info move M visits V winrate W prior P lcb L order O pv M ...", winrate, prior and lcb as
# static_cast<int>(x * 10000)), UCTSearch::output_analysis joins the blocks with spaces on one
# line, best first.
VERTEX = r"(?:[A-HJ-T](?:[1-9]|1[0-9])|pass)"
LZ_BLOCK = (
    rf"info move (?P<move>{VERTEX}) visits (?P<visits>\d+) winrate (?P<winrate>\d+) "
    rf"prior (?P<prior>\d+) lcb (?P<lcb>\d+) order (?P<order>\d+) pv (?P<pv>{VERTEX}(?: {VERTEX})*)"
)
# KataGo, cpp/command/gtp.cpp: GTPEngine::getAnalyzeCallback (kata-analyze) writes the same
# layout with utility before winrate, floats from a C++ ostream (std::showpoint, as it prints
# them for Sabaki), and pvVisits / pvEdgeVisits after the pv when asked for.
NUMBER = r"-?[0-9]+\.[0-9]*(?:e[+-][0-9]+)?"
KATA_BLOCK = (
    rf"info move (?P<move>{VERTEX}) visits (?P<visits>\d+) utility (?P<utility>{NUMBER}) "
    rf"winrate (?P<winrate>{NUMBER}) prior (?P<prior>{NUMBER}) lcb (?P<lcb>{NUMBER}) "
    rf"order (?P<order>\d+) pv (?P<pv>{VERTEX}(?: {VERTEX})*)"
    r"(?: pvVisits (?P<pv_visits>\d+(?: \d+)*))?(?: pvEdgeVisits (?P<pv_edge_visits>\d+(?: \d+)*))?"
)


def info_blocks(line: str, block: str) -> list[dict]:
    """The blocks of one analysis line, checked against the whole-line format."""
    unnamed = re.sub(r"\?P<\w+>", "", block)
    assert re.fullmatch(rf"{unnamed}(?: {unnamed})*", line), line
    blocks = [match.groupdict() for match in re.finditer(block, line)]
    assert [int(b["order"]) for b in blocks] == list(range(len(blocks)))
    for b in blocks:
        assert b["pv"].split()[0] == b["move"]
    return blocks


def test_lz_analyze_and_kata_analyze_formats(engine):
    ask(engine, "clear_board")
    ask(engine, "play b E5")
    choice = ask(engine, "reg_genmove w")[2:].strip()
    # Without an input stream an analysis stops after its first search (4 simulations):
    # "=id", one line, and the empty line that ends the response.
    lines = ask(engine, "5 lz-analyze 1").split("\n")
    assert lines[0] == "=5" and lines[2:] == ["", ""]
    lz = info_blocks(lines[1], LZ_BLOCK)
    visits = [int(b["visits"]) for b in lz]
    assert sum(visits) == 4 and all(visits) and visits == sorted(visits, reverse=True)
    assert lz[0]["move"] == choice  # order 0 is the move genmove plays
    assert "E5" not in [b["move"] for b in lz]
    for b in lz:
        assert 0 <= int(b["lcb"]) <= int(b["winrate"]) <= 10000 and 0 < int(b["prior"]) <= 10000

    lines = ask(engine, "kata-analyze 1 pvVisits true pvEdgeVisits true minmoves 6").split("\n")
    assert lines[0] == "=" and lines[2:] == ["", ""]
    kata = info_blocks(lines[1], KATA_BLOCK)
    assert [int(b["visits"]) for b in kata] == visits + [0] * (6 - len(visits))
    for lz_block, kata_block in zip(lz, kata, strict=False):  # the same deterministic search
        assert kata_block["move"] == lz_block["move"] and kata_block["pv"] == lz_block["pv"]
        assert abs(float(kata_block["winrate"]) * 10000 - int(lz_block["winrate"])) <= 1
        assert abs(float(kata_block["prior"]) * 10000 - int(lz_block["prior"])) <= 1
    for b in kata:
        assert abs(float(b["utility"]) - (2 * float(b["winrate"]) - 1)) < 1e-5
        assert 0 <= float(b["lcb"]) <= float(b["winrate"]) <= 1
        pv_visits = [int(n) for n in b["pv_visits"].split()]
        assert len(pv_visits) == len(b["pv"].split()) and pv_visits[0] == int(b["visits"])
        assert b["pv_edge_visits"] == b["pv_visits"]
    capped = ask(engine, "kata-analyze 1 minmoves 3 maxmoves 2").split("\n")[1]
    assert len(info_blocks(capped, KATA_BLOCK)) == 2
    # Without an interval nothing is reported (Leela Zero); a finished game has no analysis.
    assert ask(engine, "lz-analyze") == "=\n\n"
    assert ask(engine, "kata-analyze b interval 0") == "=\n\n"
    # For the colour not to move, the analysis follows a pass of the other.
    blocks = info_blocks(ask(engine, "lz-analyze b 1").split("\n")[1], LZ_BLOCK)
    assert sum(int(b["visits"]) for b in blocks) == 4
    ask(engine, "play w pass")
    assert ask(engine, "lz-analyze w 10").startswith("? cannot analyze for that color")
    ask(engine, "play b pass")
    assert ask(engine, "kata-analyze 10") == "=\n\n"
    assert len(ANALYSIS_TRACES) == len(set(ANALYSIS_TRACES))


def test_genmove_analyze_prints_the_search_then_plays(engine):
    ask(engine, "clear_board")
    ask(engine, "play b E5")
    choice = ask(engine, "reg_genmove w")[2:].strip()
    # "=", the search's line, "play MOVE", the empty line (KataGo's genMove with analysis,
    # Leela Zero's lz-genmove_analyze in GTP.cpp).
    lines = ask(engine, "3 lz-genmove_analyze w 1").split("\n")
    assert lines[0] == "=3" and lines[2] == f"play {choice}" and lines[3:] == ["", ""]
    assert info_blocks(lines[1], LZ_BLOCK)[0]["move"] == choice
    assert choice == "pass" or ask(engine, "list_stones white") == f"= {choice}\n\n"
    lines = ask(engine, "kata-genmove_analyze 1").split("\n")  # black, the player to move
    assert lines[0] == "=" and re.fullmatch(rf"play {VERTEX}", lines[2]), lines
    assert info_blocks(lines[1], KATA_BLOCK)[0]["move"] == lines[2][5:]
    assert re.fullmatch(rf"=\nplay {VERTEX}\n\n", ask(engine, "genmove_analyze w"))
    record = sgfmill.Sgf_game.from_string(ask(engine, "printsgf")[2:])
    comments = [
        node.get("C") if node.has_property("C") else None for node in record.get_main_sequence()[1:]
    ]
    assert comments[0] is None and all(
        re.fullmatch(r"value [+-][01]\.\d{3} \(win rate \d+\.\d%\), 4 visits", c)
        for c in comments[1:]
    ), comments
    assert record.get_root().get("DT") == datetime.date.today().isoformat()
    ask(engine, "play b pass")
    ask(engine, "play w pass")
    assert ask(engine, "lz-genmove_analyze b 1") == "=\nplay pass\n\n"


class PipeGui:
    """`gtp.serve` in a thread, written to and read from through OS pipes, as a GUI does."""

    def __init__(self, engine):
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        stdin, stdout = os.fdopen(in_read, "rb"), os.fdopen(out_write, "w")
        self._input = os.fdopen(in_write, "wb", buffering=0)
        self._lines: queue.Queue[str] = queue.Queue()
        self._engine = threading.Thread(target=gtp.serve, args=(engine, stdin, stdout))
        self._engine.start()
        threading.Thread(target=self._read, args=(os.fdopen(out_read, "rb"),), daemon=True).start()

    def _read(self, output):
        for line in output:
            self._lines.put(line.decode().rstrip("\n"))

    def send(self, line: str) -> float:
        self._input.write(line.encode() + b"\n")
        return time.monotonic()

    def line(self, timeout: float = 300) -> str:
        return self._lines.get(timeout=timeout)

    def close(self):
        self._input.close()  # the end of input ends `serve`
        self._engine.join(timeout=300)


def test_analysis_streams_until_the_next_command(engine):
    ask(engine, "clear_board")
    ask(engine, "play b E5")
    gui = PipeGui(engine)
    try:
        gui.send("7 lz-analyze 1")  # a line every centisecond
        assert gui.line() == "=7"
        for _ in range(3):
            info_blocks(gui.line(), LZ_BLOCK)
        sent = gui.send("8 name")
        lines = []
        while (line := gui.line()) != "=8 azjax":
            lines.append(line)
        waited = time.monotonic() - sent
        assert lines[-1] == "" and gui.line() == ""
        for line in lines[:-1]:  # lines that were on their way
            info_blocks(line, LZ_BLOCK)
        assert waited < 10, f"the analysis took {waited:.1f} s to stop"
        # The first line reports 4 simulations, later ones the search of 8; after that the
        # analysis is complete and nothing more comes until the next line (here an empty one).
        gui.send("9 kata-analyze b 20")
        assert gui.line() == "=9"
        totals = []
        while not totals or totals[-1] < 8:
            totals.append(sum(int(b["visits"]) for b in info_blocks(gui.line(), KATA_BLOCK)))
        assert totals[0] == 4 and set(totals) == {4, 8}
        with pytest.raises(queue.Empty):
            gui.line(timeout=1)
        gui.send("")
        assert gui.line() == ""
        gui.send("10 genmove_analyze w 1")
        assert gui.line() == "=10"
        info_blocks(gui.line(), KATA_BLOCK)
        assert re.fullmatch(rf"play {VERTEX}", gui.line()) and gui.line() == ""
        gui.send("11 quit")
        assert gui.line() == "=11" and gui.line() == ""
    finally:
        gui.close()
        engine.finished = False
    assert sorted(ANALYSIS_TRACES) == [4, 8]


def test_analysis_ends_with_the_input(engine):
    stdout = io.StringIO()
    gtp.serve(engine, io.BytesIO(b"clear_board\n1 kata-analyze 1\n2 name\n3 lz-analyze 1"), stdout)
    line = r"info move [^\n]*\n"
    assert re.fullmatch(rf"=\n\n=1\n({line})+\n=2 azjax\n\n=3\n({line})+\n", stdout.getvalue())


def test_final_status_list_calls_every_stone_alive(engine):
    ask(engine, "clear_board")
    for move in ("play b E5", "play w C3", "play b E6", "play w D3"):
        ask(engine, move)
    # GNU Go's format (play_gtp.c, gtp_final_status_list): one string (chain) per line.
    assert ask(engine, "final_status_list alive") == "= E6 E5\nC3 D3\n\n"
    assert ask(engine, "final_status_list dead") == "=\n\n"
    assert ask(engine, "final_status_list seki") == "=\n\n"
    ask(engine, "clear_board")
    assert ask(engine, "final_status_list alive") == "=\n\n"


def test_kgs_genmove_cleanup_plays_instead_of_passing(engine, tmp_path):
    # Black everywhere but its eyes A9 and C9 and J1, the last liberty of white's dead H1, H2,
    # J2. Where the search passes, cleanup captures them at J1 rather than fill an eye.
    board = np.ones(81, np.int8)
    board[[0, 2, 80]] = 0
    board[[79, 70, 71]] = -1
    state = engine.game.setup(board, 0)
    weights = np.zeros(82, np.float32)
    weights[[81, 0, 2]] = 0.5, 0.3, 0.2  # the pass first, then the eyes
    assert gtp_extensions.is_eye(board, 0, 1, 9) and gtp_extensions.is_eye(board, 2, 1, 9)
    assert not gtp_extensions.is_eye(board, 80, 1, 9)
    assert not gtp_extensions.is_eye(board, 0, -1, 9)
    assert gtp_extensions.cleanup_action(state, 81, weights, 9) == 80
    assert gtp_extensions.cleanup_action(state, 2, weights, 9) == 2  # the search's move stays
    board[[79, 70, 71, 80]] = 1
    only_eyes = engine.game.setup(board, 0)
    assert gtp_extensions.cleanup_action(only_eyes, 81, weights, 9) == 81
    # Through GTP: the position from SGF setup stones, black to move.
    path = tmp_path / "cleanup.sgf"

    def points(stone):
        return "".join(
            f"[{'abcdefghi'[p % 9]}{'abcdefghi'[p // 9]}]" for p in np.flatnonzero(board == stone)
        )

    board[[79, 70, 71]] = -1
    board[80] = 0
    path.write_text(f"(;SZ[9]AB{points(1)}AW{points(-1)}PL[B])")
    assert ask(engine, f"loadsgf {path}") == "=\n\n"
    assert ask(engine, "kgs-genmove_cleanup b") != "= pass\n\n"
    ask(engine, "clear_board")


def test_handicap_commands(engine):
    ask(engine, "clear_board")
    assert set(ask(engine, "fixed_handicap 4")[2:].split()) == {"C3", "G7", "C7", "G3"}
    assert set(ask(engine, "list_stones black")[2:].split()) == {"C3", "G7", "C7", "G3"}
    assert ask(engine, "fixed_handicap 2") == "? board not empty\n\n"
    assert ask(engine, "undo") == "? cannot undo\n\n"  # handicap stones are no moves
    move = ask(engine, "genmove w")[2:].strip()  # white moves next, no pass inserted
    assert move == "pass" or move in ask(engine, "list_stones white")
    record = sgfmill.Sgf_game.from_string(ask(engine, "printsgf")[2:])
    root = record.get_root()
    assert root.get("HA") == 4 and root.get("PL") == "w"
    assert {(r, c) for r, c in root.get_setup_stones()[0]} == {(2, 2), (6, 6), (6, 2), (2, 6)}
    assert record.get_main_sequence()[1].get_move()[0] == "w"
    ask(engine, "clear_board")
    stones = ask(engine, "place_free_handicap 3")[2:].split()
    assert len(set(stones)) == 3 and set(stones) == set(ask(engine, "list_stones b")[2:].split())
    assert int(engine.state.current_player) == 1
    ask(engine, "clear_board")
    stones = ask(engine, "place_free_handicap 11")[2:].split()  # 9 fixed, 2 by the network
    assert len(set(stones)) == 11 and set(stones) == set(ask(engine, "list_stones b")[2:].split())
    ask(engine, "clear_board")
    assert ask(engine, "set_free_handicap D4 F6") == "=\n\n"
    assert ask(engine, "list_stones black") == "= F6 D4\n\n"
    assert ask(engine, "set_free_handicap E5 E6") == "? board not empty\n\n"
    assert ask(engine, "play w E5") == "=\n\n"
    ask(engine, "clear_board")
    ask(engine, "play b pass")
    assert ask(engine, "fixed_handicap 2") == "? board not empty\n\n"


def test_handicap_placement_and_status_lists_agree_with_gnugo(engine):
    """GNU Go's fixed_handicap (GTP 2 specification, section 4.1.1) on 7x7 to 19x19 and its
    final_status_list format for a position where every stone lives."""
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    commands = []
    for size in (7, 8, 9, 13, 19):
        for count in range(1, 11):
            commands += [f"boardsize {size}", "clear_board", f"fixed_handicap {count}"]
    plays = ["play b E5", "play w C3", "play b E6", "play w D3"]
    commands += ["boardsize 9", "clear_board", *plays]
    commands += ["final_status_list alive", "final_status_list dead"]
    result = subprocess.run(
        [gnugo, "--mode", "gtp", "--level", "0"],
        input="\n".join(commands) + "\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    responses = result.stdout.split("\n\n")[: len(commands)]
    letters = "ABCDEFGHJKLMNOPQRST"
    for index in range(2, 150, 3):
        size, count = int(commands[index - 2].split()[1]), int(commands[index].split()[1])
        points = gtp_extensions.fixed_handicap_points(size, count)
        ours = (
            None if points is None else {f"{letters[p % size]}{size - p // size}" for p in points}
        )
        theirs = None if responses[index].startswith("?") else set(responses[index][2:].split())
        assert ours == theirs, (size, count)
    ask(engine, "clear_board")
    for command in plays:
        ask(engine, command)
    assert ask(engine, "final_status_list alive").rstrip() == responses[-2].rstrip()
    assert ask(engine, "final_status_list dead").rstrip() == responses[-1].rstrip()


def strip_comments(text: str) -> str:
    return re.sub(r"C\[(?:[^\\\]]|\\.)*\]", "", text)


def test_loadsgf_round_trips_printsgf(engine, tmp_path):
    ask(engine, "clear_board")
    ask(engine, "komi 6.5")
    ask(engine, "fixed_handicap 2")
    for command in ("genmove w", "play b E5", "genmove w", "play b D4", "play b E4"):
        assert ask(engine, command).startswith("=")
    path = tmp_path / "game.sgf"
    assert ask(engine, f"printsgf {path}") == "=\n\n"
    before = {color: ask(engine, f"list_stones {color}") for color in ("b", "w")}
    score, record = ask(engine, "final_score"), ask(engine, "printsgf")
    assert ask(engine, "clear_board") == "=\n\n" and ask(engine, "komi 0.5") == "=\n\n"
    assert ask(engine, f"loadsgf {path}") == "=\n\n"
    assert {color: ask(engine, f"list_stones {color}") for color in ("b", "w")} == before
    assert ask(engine, "final_score") == score  # KM[6.5]
    assert ask(engine, "printsgf") == strip_comments(record)  # the same game, comments aside
    assert int(engine.state.current_player) == 1
    # The position before move 2 (GTP's loadsgf): the handicap and white's first move.
    assert ask(engine, f"loadsgf {path} 2") == "=\n\n"
    assert len(engine._moves) == 1 and ask(engine, "list_stones b") == "= G7 C3\n\n"
    assert ask(engine, "undo") == "=\n\n" and ask(engine, "undo") == "? cannot undo\n\n"
    ask(engine, "komi 7.5")


def test_loadsgf_reads_games_written_by_sgfmill(engine, tmp_path):
    # sgfmill (an independent SGF writer and Go board) writes a game with setup stones of
    # both colours, a capture and a pass; loadsgf must reach sgfmill's final board.
    record = sgfmill.Sgf_game(size=9)
    root = record.get_root()
    root.set("KM", 5.5)
    root.set_setup_stones(
        black={(8, 1), (4, 4)}, white={(8, 0), (3, 3)}
    )  # (row from the bottom, column)
    moves = [("w", (0, 0)), ("b", (7, 0)), ("w", None), ("b", (6, 6)), ("w", (5, 5))]
    for colour, point in moves:  # black (7, 0) captures white's A9
        record.extend_main_sequence().set_move(colour, point)
    board = boards.Board(9)
    board.apply_setup({(8, 1), (4, 4)}, {(8, 0), (3, 3)}, set())
    for colour, point in moves:
        if point is not None:
            board.play(*point, colour)
    path = tmp_path / "sgfmill.sgf"
    path.write_bytes(record.serialise())
    ask(engine, "clear_board")
    ask(engine, "play b E5")
    assert ask(engine, f"loadsgf {path}") == "=\n\n"
    letters = "ABCDEFGHJ"
    for colour in ("b", "w"):
        expected = {
            f"{letters[c]}{r + 1}" for who, (r, c) in board.list_occupied_points() if who == colour
        }
        assert set(ask(engine, f"list_stones {colour}")[2:].split()) == expected
    assert ask(engine, "final_score") == f"= {sgfmill_score(board, 5.5)}\n\n"
    # Files that do not load leave the game as it was.
    stones = ask(engine, "list_stones b")
    illegal = tmp_path / "illegal.sgf"
    illegal.write_text("(;SZ[9];B[ee];W[ee])")
    assert ask(engine, f"loadsgf {illegal}") == "? cannot load file: move 2: illegal move\n\n"
    big = tmp_path / "big.sgf"
    big.write_bytes(sgfmill.Sgf_game(size=19).serialise())
    assert ask(engine, f"loadsgf {big}") == "? cannot load file: the game is 19x19\n\n"
    assert ask(engine, "list_stones b") == stones
    ask(engine, "komi 7.5")


def sgfmill_score(board: boards.Board, komi: float) -> str:
    stones = {"black": set(), "white": set()}
    for colour, (row, column) in board.list_occupied_points():
        stones["black" if colour == "b" else "white"].add(f"{'ABCDEFGHJ'[column]}{row + 1}")
    score = tromp_taylor(stones, 9, komi)
    return f"B+{score:g}" if score > 0 else f"W+{-score:g}" if score else "0"


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
        [PYTHON, "-m", "azjax.apps.cli", "gtp", "--workdir", str(go_run)],
        input=RAW_INPUT + b"5 quit\n",
        capture_output=True,
        env=subprocess_env(PYTHONIOENCODING="utf-8:strict"),
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout.decode() == RAW_RESPONSES + "=5\n\n"


# A number of 100,000 digits that a letter ends: a regex of overlapping quantifiers took
# minutes to refuse it (quadratic backtracking).
LONG_NUMBER = "1" * 100_000 + "x"


@pytest.mark.timeout(60)  # a guard only: the answers come at once
def test_long_numbers_get_errors_at_once(engine):
    assert ask(engine, "clear_board") == "=\n\n"
    assert ask(engine, f"komi {LONG_NUMBER}") == "? komi not a float\n\n"
    assert ask(engine, f"lz-analyze {LONG_NUMBER}") == "? cannot parse analyze tags\n\n"
    for tag in (f"interval {LONG_NUMBER}", f"b {LONG_NUMBER} minmoves 2"):
        assert ask(engine, f"kata-analyze {tag}") == "? cannot parse analyze tags\n\n"


def padded(command: str, length: int) -> str:
    """`command` as an input line of `length` bytes before its newline."""
    return command.ljust(length) + "\n"


@pytest.mark.timeout(60)
def test_lines_over_the_limit_get_an_error_and_the_engine_goes_on(engine):
    too_long = f" input line longer than {gtp_io.MAX_LINE} bytes\n\n"
    text = f"1 komi {LONG_NUMBER}\n2 name\n{LONG_NUMBER}\n"
    text += padded("3 name", gtp_io.MAX_LINE) + padded("4 name", gtp_io.MAX_LINE + 1)
    text += padded("5 name", gtp_io.MAX_LINE - 1) + f"6 {LONG_NUMBER}"  # the last: no newline
    expected = f"?1{too_long}=2 azjax\n\n?{too_long}=3 azjax\n\n?4{too_long}=5 azjax\n\n"
    expected += f"?6{too_long}"
    for stdin in (io.BytesIO(text.encode()), io.StringIO(text)):  # bytes, and a text stream
        stdout = io.StringIO()
        assert gtp.serve(engine, stdin, stdout) == 0
        assert stdout.getvalue() == expected


@pytest.mark.timeout(60)
def test_loadsgf_of_a_long_komi_gets_an_error_at_once(engine, tmp_path):
    path = tmp_path / "komi.sgf"
    path.write_text(f"(;GM[1]FF[4]SZ[9]KM[{LONG_NUMBER[:60_000]}x])")
    shown = "1" * 37 + "..."
    assert ask(engine, f"loadsgf {path}") == f"? cannot load file: KM[{shown}] is not a komi\n\n"


# Well-formed commands of `gtp_extensions` among the fuzz test's lines (all of them also come
# with random arguments): analyses stop after their first search (`respond`) or at the next
# line (`serve`), which is always there at once.
EXTENSIONS = ["lz-analyze", "kata-genmove_analyze", "kgs-genmove_cleanup", "final_status_list"]
EXTENSIONS += ["fixed_handicap", "printsgf", "loadsgf"]


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
                ["play", "undo", "komi", "clear_board", "genmove", "list_stones", *EXTENSIONS],
                weights=[80, 3, 4, 1, 2, 3, *[1] * len(EXTENSIONS)],
            )[0]
            color = rng.choice(["b", "w"])
            parts = {
                "play": [command, color, rng.choice(vertices)],
                "komi": [command, rng.choice(numbers)],
                "genmove": [command, color],
                "list_stones": [command, color],
                "lz-analyze": [command, color, rng.choice(["0", "1", "50"])],
                "kata-genmove_analyze": [command, color, "1"],
                "kgs-genmove_cleanup": [command, color],
                "final_status_list": [command, rng.choice(["alive", "dead", "seki"])],
                "fixed_handicap": [command, rng.choice(["2", "4", "9"])],
                "printsgf": [command, "x.sgf"],
                "loadsgf": [command, "x.sgf", *rng.choices(["1", "5", "50"], k=rng.randrange(2))],
            }.get(command, [command])
            if command == "fixed_handicap":  # on an empty board
                lines.append(b"clear_board\n")
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
        assert len(ANALYSIS_TRACES) == len(set(ANALYSIS_TRACES))
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


@pytest.mark.slow
def test_complete_games_against_gnugo(go_run, tmp_path):
    gnugo_path = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    ours = GtpProcess(
        [
            PYTHON,
            "-m",
            "azjax.apps.cli",
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
