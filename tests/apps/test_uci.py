"""The UCI engine for Xiangqi: protocol answers, coordinates, search budgets, random and
malformed input (a fuzz test), and complete games against Fairy-Stockfish (Debian package
`fairy-stockfish`; the test is skipped where it is missing) through a small referee.

The referee keeps the game with azjax's Xiangqi rules and checks them against
Fairy-Stockfish as an independent implementation at every ply: the set of legal moves of
our game equals Fairy-Stockfish's (`go perft 1`), and every move either engine plays is in
it. Games end by our rules (mate, no-capture limit, repetition, the run's move limit).
"""

import io
import math
import random
import time

import jax
import numpy as np
import pytest
from conftest import PYTHON, REPO, require_program, subprocess_env, tiny_config, untrained_run

from azjax import config as config_lib
from azjax.apps.protocols import uci, uci_search
from azjax.config import build
from azjax.games import notation
from azjax.games.notation import xiangqi
from azjax.matches import agent as agent_lib
from azjax.matches.engines import EngineProcess
from azjax.matches.engines.uci_client import engine_to_iccs, iccs_to_engine
from azjax.types import UserError

MATE_FEN = "3k5/9/3R5/9/9/9/9/9/9/4K4 b"  # Black's general d9 is mated by the chariot d7
START = xiangqi.START_FEN


@pytest.fixture(scope="module")
def engine(xiangqi_run):
    """One engine for the module: every budget is 4 simulations, so it compiles once."""
    agent = agent_lib.load_agent(xiangqi_run, num_simulations=4)
    return uci.Engine(agent, min_simulations=4, max_simulations=4)


def ask(engine, line: str) -> list[str]:
    return uci.respond(engine, line)


def fen(engine) -> str:
    return xiangqi.to_fen(engine.game, engine.state)


def test_protocol_basics(engine):
    lines = ask(engine, "uci")
    assert lines[0].startswith("id name azjax 0.1.0 (tiny_xiangqi, iteration 0)")
    assert "option name UCI_Variant type combo default xiangqi var xiangqi" in lines
    assert "option name Simulations type spin default 4 min 4 max 4" in lines
    assert "option name Ranks type combo default 0-9 var 0-9 var 1-10" in lines
    assert lines[-1] == "uciok"
    assert ask(engine, "isready") == ["readyok"]
    assert ask(engine, "joho isready") == ["readyok"]  # unknown words before a command
    assert ask(engine, "") == [] and ask(engine, " \t ") == []
    assert ask(engine, "debug on") == [] and ask(engine, "register later") == []
    assert ask(engine, "fly me") == ["info string unknown command: fly me"]
    assert ask(engine, "setoption name UCI_Variant value xiangqi") == []
    assert ask(engine, "setoption name UCI_Variant value chess") == [
        "info string only xiangqi is played"
    ]
    assert ask(engine, "setoption name simulations value 4") == []  # names ignore case
    assert ask(engine, "setoption name Simulations value 5") == [
        "info string Simulations is an integer from 4 to 4"
    ]
    assert ask(engine, "setoption name Hash value 16") == ["info string unknown option: Hash"]
    assert ask(engine, "setoption Hash") == [
        "info string setoption needs: setoption name <id> [value <x>]"
    ]
    assert ask(engine, "setoption name Ranks value 2-11") == ["info string Ranks is 0-9 or 1-10"]
    assert ask(engine, "ucinewgame") == [] and fen(engine) == START
    assert ask(engine, "stop") == [] and ask(engine, "ponderhit") == []


def test_coordinates_ranks_0_9_from_reds_side(engine):
    ask(engine, "position startpos moves h2e2")  # Red's cannon to the centre
    assert fen(engine) == "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1"
    ask(engine, "position startpos moves b0c2 h7e7")  # Red's horse, Black's cannon
    assert fen(engine) == "rnbakabnr/9/1c2c4/p1p1p1p1p/9/9/P1P1P1P1P/1CN4C1/9/R1BAKABNR w - - 2 2"
    board = [line for line in ask(engine, "d") if line.startswith("info string 2 ")]
    assert board == ["info string 2 . C N . . . . C ."]
    # Fairy-Stockfish's ranks 1-10 name the same moves one rank higher.
    assert ask(engine, "setoption name Ranks value 1-10") == []
    try:
        ask(engine, "position startpos moves b1c3 h8e8")
        assert fen(engine).startswith("rnbakabnr/9/1c2c4/p1p1p1p1p/9/9/P1P1P1P1P/1CN4C1/9/R1B")
        lines = ask(engine, "go")
        best = lines[-1].split()[1]
        assert engine_to_iccs(best, 1) is not None
        notation.parse_action(engine.game, engine_to_iccs(best, 1), engine.state)
        assert ask(engine, "position startpos moves a10a9")[0].startswith(
            "info string illegal move a10a9 at ply 1"  # Red moves first
        )
    finally:
        ask(engine, "setoption name Ranks value 0-9")
    assert iccs_to_engine("h2e2", 1) == "h3e3" and iccs_to_engine("a9a8", 1) == "a10a9"
    assert engine_to_iccs("a10a9", 1) == "a9a8" and engine_to_iccs("a10a9", 0) is None
    assert engine_to_iccs("H2E2", 0) == "h2e2" and engine_to_iccs("h0e10", 1) is None


def test_position_with_an_illegal_move_stops_there(engine):
    lines = ask(engine, "position startpos moves h2e2 h2e2 b9c7")  # Black has no h2 piece
    assert lines == ["info string illegal move h2e2 at ply 2; the position stands before it"]
    assert fen(engine) == "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1"
    assert ask(engine, "position startpos moves a0a5")[0].startswith(
        "info string illegal move a0a5"  # the chariot cannot pass its soldier
    )
    assert fen(engine) == START
    assert ask(engine, "position startpos moves h2e2 xyzzy")[0].startswith(
        "info string illegal move xyzzy at ply 2"
    )
    assert ask(engine, "position fen 9/9/9 w") == [
        "info string bad FEN '9/9/9 w': expected 10 ranks separated by '/', got 3; "
        "the position is unchanged"
    ]
    assert ask(engine, "position") == [
        "info string position needs: position startpos|fen FEN [moves ...]"
    ]
    assert fen(engine).startswith("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/")
    # The position after the good moves is searched.
    move = ask(engine, "go nodes 4")[-1].split()[1]
    notation.parse_action(engine.game, move, engine.state)
    # A FEN position with moves; the next command reuses the states of its moves.
    ask(engine, f"position fen {START} moves h2e2 h9g7")
    assert fen(engine) == "rnbakab1r/9/1c4nc1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR w - - 2 2"
    first_states = list(engine._states)
    ask(engine, f"position fen {START} moves h2e2 h9g7 b0c2")
    assert engine._states[:3] == first_states


@pytest.mark.parametrize(
    "counts",
    [
        "² 1",
        "0 ²",
        "\u0661 1",
        "99999999999999999999 1",
        "2147483648 1",
        "0 " + "9" * 5000,
        "120 1",
    ],
)
def test_position_fen_with_bad_counts_is_one_info_line(engine, capfd, counts):
    """Counts in digits that str.isdigit takes but int() does not, or past int32: the usual
    answer to a bad FEN, not an internal error."""
    ask(engine, "position startpos moves h2e2")
    before = fen(engine)
    (line,) = ask(engine, f"position fen {START.rsplit(' ', 2)[0]} {counts}")
    assert line.startswith("info string bad FEN") and line.endswith("the position is unchanged")
    assert len(line) < 400
    assert fen(engine) == before
    assert "Traceback" not in capfd.readouterr().err


def parse_info(line: str) -> dict:
    words = line.split()
    assert words[0] == "info"
    score_at, pv_at = words.index("score"), words.index("pv")
    fields = dict(zip(words[1:score_at:2], words[2:score_at:2], strict=True))
    fields["score"] = words[score_at + 1 : pv_at]
    fields["pv"] = words[pv_at + 1 :]
    return fields


@pytest.mark.slow  # 19 s
def test_go_prints_info_and_a_legal_bestmove_with_its_pv(engine):
    ask(engine, "position startpos moves h2e2 h9g7")
    info, best = ask(engine, "go nodes 4")
    fields = parse_info(info)
    assert fields["nodes"] == "4" and fields["score"][0] == "cp"
    assert abs(int(fields["score"][1])) < 13000
    assert int(fields["depth"]) == len(fields["pv"]) >= 1
    words = best.split()
    assert words[:2] == ["bestmove", fields["pv"][0]]
    assert words[2:] == (["ponder", fields["pv"][1]] if len(fields["pv"]) > 1 else [])
    state = engine.state
    for move in fields["pv"]:  # every move of the PV is legal in turn
        state = engine._step(state, notation.parse_action(engine.game, move, state))
    # infinite and ponder hold the bestmove until stop or ponderhit.
    lines = ask(engine, "go infinite")
    assert len(lines) == 1 and lines[0].startswith("info depth")
    assert ask(engine, "isready") == ["readyok"]
    assert ask(engine, "stop")[0].startswith("bestmove ")
    assert ask(engine, "stop") == []
    assert len(ask(engine, "go ponder wtime 1000 btime 1000")) == 1
    assert ask(engine, "ponderhit")[0].startswith("bestmove ")
    ask(engine, "go infinite")
    held = ask(engine, "go movetime 10")  # a new go sends the held bestmove first
    assert held[0].startswith("bestmove ") and held[-1].startswith("bestmove ")
    # searchmoves restricts the root.
    ask(engine, "position startpos")
    assert ask(engine, "go searchmoves a3a4 nodes 4")[-1].split()[:2] == ["bestmove", "a3a4"]
    assert ask(engine, "go nodes x")[0] == "info string go nodes needs an integer"
    assert engine.compilations == 1


def test_go_reuses_the_tree_of_the_last_search(engine):
    """With the run's tree reuse (the default), a position the last search's tree holds
    starts from its subtree: the same position searched again, or the position after the
    move played; `ucinewgame` starts afresh."""
    assert engine.agent.settings.agent.search.tree_reuse
    ask(engine, "ucinewgame")
    ask(engine, "position startpos")
    first = parse_info(ask(engine, "go nodes 4")[0])["pv"][0]
    assert engine.carried == 0
    ask(engine, f"position startpos moves {first}")  # the child the search chose
    ask(engine, "go nodes 4")
    carried = engine.carried
    assert carried >= 1
    ask(engine, "go nodes 4")  # the same position again: its root, 4 visits more
    assert engine.carried == carried + 4
    ask(engine, "ucinewgame")
    ask(engine, "position startpos")
    ask(engine, "go nodes 4")
    assert engine.carried == 0


def test_mate_and_positions_the_rules_have_drawn(engine):
    ask(engine, f"position fen {MATE_FEN}")
    assert ask(engine, "go") == ["info depth 0 score mate 0", "bestmove (none)"]
    # Threefold repetition: the run's rules draw; the engine searches on from the board.
    shuffle = "b0c2 b9c7 c2b0 c7b9 " * 2
    ask(engine, f"position startpos moves {shuffle}")
    assert engine.state.terminated and not engine.state.rewards.any()
    lines = ask(engine, "go")
    assert lines[0] == "info string the run's rules have drawn this game; searching on"
    notation.parse_action(engine.game, lines[-1].split()[1], engine.game.init(None))
    assert ask(engine, f"position startpos moves {shuffle} h2e2") == []
    assert fen(engine).startswith("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/")


def test_go_limits_map_to_budgets(xiangqi_run):
    agent = agent_lib.load_agent(xiangqi_run, num_simulations=200)
    engine = uci.Engine(agent)  # nothing is searched here, nothing compiles

    def budget(line: str, player: int = 0) -> int:
        values, flags, _ = uci_search.parse_go(line.split(), [])
        return engine._budget(values, flags, player)

    assert budget("") == 200 and budget("infinite") == 200 and budget("nodes 200") == 200
    assert budget("nodes 1000") == 512 and budget("nodes 250") == 200
    assert budget("nodes 100") == 64 and budget("nodes 0") == 1 and budget("nodes -5") == 1
    assert budget("depth 3") == 8 and budget("depth 30") == 4096 and budget("depth 0") == 1
    assert budget("nodes 5 depth 1") == 2  # the smallest limit
    assert budget("movetime 100") == 200  # no speed measured yet: the default
    engine._rate = 1000.0  # simulations per second
    assert budget("movetime 100") == 64
    assert budget("wtime 60000 btime 1000") == 1024  # min(30, 60 / 30) s at 1000 per s
    assert budget("wtime 60000 btime 1000", player=1) == 32  # 1 s / 30
    assert budget("wtime 10000 winc 2000 movestogo 5") == 2048  # min(5, 2 + 2) s
    assert budget("wtime -100") == 1
    assert uci.centipawns(0.0) == 0 and uci.centipawns(0.5) == 111
    assert uci.centipawns(-0.5) == -111 and uci.centipawns(2.0) == uci.centipawns(1.0)
    assert 12000 < uci.centipawns(1.0) < 13000
    assert math.isclose(uci.centipawns(0.25), 111.714640912 * math.tan(0.390517), abs_tol=1)


# Bytes that are not UTF-8, in a command and on lines of their own.
RAW_INPUT = b"isready\n\xff\xfe\x80 isready\nis\xe9ready\n\xc3\x28\n\x80\nisready\n"
RAW_OUTPUT = (
    "readyok\nreadyok\ninfo string unknown command: is\ufffdready\n"
    "info string unknown command: \ufffd(\ninfo string unknown command: \ufffd\nreadyok\n"
)


def test_serve_survives_bytes_that_are_not_utf8(engine):
    strict = io.TextIOWrapper(io.BytesIO(RAW_INPUT), encoding="utf-8", errors="strict")
    stdout = io.StringIO()
    assert uci.serve(engine, strict, stdout) == 0
    assert stdout.getvalue() == RAW_OUTPUT
    ascii_stdout = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    assert uci.serve(engine, io.BytesIO(RAW_INPUT + b"quit\nisready\n"), ascii_stdout) == 0
    assert ascii_stdout.buffer.getvalue() == RAW_OUTPUT.encode()
    engine.finished = False


def fuzz_lines(num_lines: int, seed: int) -> list[bytes]:
    """Random and malformed UCI input lines: random bytes, random tokens, every command
    with random arguments, well-formed positions with random (mostly illegal) moves, huge
    and non-ASCII numbers, odd whitespace and control characters."""
    rng = random.Random(seed)
    numbers = [
        *("0", "1", "4", "-1", "+5", "7.5", "1e3", "0x10", "9" * 40, "\u00b2", "\u0661"),
        *("nan", "inf", "-0", "1_0", "99999999999999999"),
    ]
    words = [
        *uci.COMMANDS,
        *uci_search.GO_WORDS,
        *("name", "value", "startpos", "fen", "moves", "UCI_Variant", "Simulations", "Ranks"),
        *("xiangqi", "chess", "0-9", "1-10", "on", "off", "Hash", "w", "b", "-", "(none)"),
        *("h2e2", "b0c2", "h9g7", "a10a9", "h3e3", "e0e1", "i9i8", "\u00e9", "\ufffd", "=?"),
        *(START, "9/9/9", MATE_FEN, "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RN"),
    ]
    tokens = words + numbers
    spaces = [" ", "  ", "\t", "\r", "\x0b", "\x0c", "\x00", "\x1b", "\x7f", "\xa0", "\u3000"]
    squares = [f"{f}{r}" for f in "abcdefghi" for r in range(10)]
    lines = []
    for index in range(num_lines):
        kind = index % 5
        if kind == 0:
            noise = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
            lines.append(noise.replace(b"\n", b"") + b"\n")
            continue
        if kind == 1:
            parts = [rng.choice(uci.COMMANDS)] + rng.choices(tokens, k=rng.randrange(6))
        elif kind == 2:
            parts = rng.choices(tokens, k=rng.randrange(1, 7))
        else:  # well-formed commands, a search now and then
            command = rng.choices(["position", "go", "setoption", "d"], weights=[85, 6, 6, 3])[0]
            if command == "position":
                moves = [rng.choice(squares) + rng.choice(squares) for _ in range(12)]
                base = rng.choice(["startpos", f"fen {START}", f"fen {MATE_FEN}"])
                parts = ["position", base, "moves", *rng.choices(["h2e2", "h9g7", *moves], k=8)]
            elif command == "go":
                parts = ["go", *rng.choice([[], ["nodes", "4"], ["depth", "2"], ["infinite"]])]
            elif command == "setoption":
                option = rng.choice([["Ranks", "1-10"], ["Ranks", "0-9"], ["Simulations", "4"]])
                parts = ["setoption", "name", option[0], "value", option[1]]
            else:
                parts = ["d"]
        text = "".join(word + (rng.choice(spaces) if rng.random() < 0.2 else " ") for word in parts)
        lines.append(text.encode() + b"\n")
    return lines


ANSWERS = ("id ", "option ", "uciok", "readyok", "info ", "bestmove ")


def test_random_and_malformed_input_is_harmless(engine, capfd):
    lines = fuzz_lines(2000, seed=0)
    started = time.perf_counter()
    try:
        for line in lines[:1000]:  # through respond, as a decoded line
            for output in uci.respond(engine, line.decode("utf-8", errors="replace")):
                assert output.startswith(ANSWERS) and "\n" not in output, repr(output)
                assert "internal error" not in output, output
        data = b"".join(lines[1000:])  # through serve, as bytes; serving again after quit
        stdin, stdout = io.BytesIO(data), io.StringIO()
        while stdin.tell() < len(data):
            engine.finished = False
            uci.serve(engine, stdin, stdout)
        for output in stdout.getvalue().splitlines():
            assert output.startswith(ANSWERS), repr(output)
            assert "internal error" not in output, output
        assert "Traceback" not in capfd.readouterr().err
        # It still plays.
        engine.finished = False
        for command in ("setoption name Ranks value 0-9", "ucinewgame", "stop"):
            ask(engine, command)
        ask(engine, "position startpos moves h2e2")
        move = ask(engine, "go nodes 4")[-1].split()[1]
        notation.parse_action(engine.game, move, engine.state)
        assert engine.compilations == 1
    finally:
        engine.finished = False
        ask(engine, "setoption name Ranks value 0-9")
        ask(engine, "stop")
    print(f"fuzz: {time.perf_counter() - started:.1f} s")


def test_uci_needs_a_xiangqi_run(tmp_path, capsys):
    run = untrained_run(tmp_path / "ttt", tiny_config("tic_tac_toe"))
    with pytest.raises(UserError, match="the UCI engine plays xiangqi; this run plays tic_tac_toe"):
        uci.Engine(agent_lib.load_agent(run))
    assert uci.main(["--workdir", str(tmp_path / "nothing")]) == 2
    assert "not an azjax run directory" in capsys.readouterr().err


class Referee:
    """Keeps a game with azjax's rules and checks both engines against it."""

    def __init__(self, run, fsf: EngineProcess):
        config = config_lib.load_run_config(run)
        self.game = build.make_game(config)
        self.step = jax.jit(self.game.step)
        self.legal_mask = jax.jit(self.game.legal_action_mask)
        self.fsf = fsf

    def legal_moves(self, state) -> set[str]:
        """Our legal moves (ICCS), from the board (also where a draw rule ended the game)."""
        mask = np.asarray(self.legal_mask(state))
        return {notation.action_to_string(self.game, a, state) for a in np.flatnonzero(mask)}

    def fsf_legal_moves(self, position: str) -> set[str]:
        self.fsf.send(position)
        self.fsf.send("go perft 1")
        lines = self.fsf.read_until(lambda line: line.startswith("Nodes searched"))
        moves = {line.split(":")[0] for line in lines if line.endswith(": 1")}
        assert int(lines[-1].split(":")[1]) == len(moves), lines
        return {engine_to_iccs(move, 1) for move in moves}


def best_move(engine: EngineProcess, position: str, go: str) -> list[str]:
    engine.send(position)
    engine.send(go)
    return engine.read_until(lambda line: line.startswith("bestmove "))


@pytest.mark.slow
def test_complete_games_against_fairy_stockfish(xiangqi_run):
    fsf_path = require_program(
        "fairy-stockfish", install="apt-get install fairy-stockfish", paths=("/usr/games",)
    )
    argv = [PYTHON, "-m", "azjax.apps.protocols.uci", "--workdir", str(xiangqi_run)]
    ours = EngineProcess(
        [*argv, "--simulations", "8"], name="azjax", timeout=300, cwd=REPO, env=subprocess_env()
    )
    fsf = EngineProcess([fsf_path], name="fairy-stockfish", timeout=60)
    endings = []
    try:
        ours.send("uci")
        assert ours.read_until(lambda line: line == "uciok")[0].startswith("id name azjax")
        fsf.send("uci")
        fsf.read_until(lambda line: line == "uciok")
        fsf.send("setoption name UCI_Variant value xiangqi")
        referee = Referee(xiangqi_run, fsf)
        game = referee.game
        for ours_red in (True, False):
            for engine in (ours, fsf):
                engine.send("ucinewgame")
                engine.send("isready")
                engine.read_until(lambda line: line == "readyok")
            state, moves = game.init(jax.random.PRNGKey(0)), []
            while True:
                ours_moves = " ".join(moves)
                fsf_moves = " ".join(iccs_to_engine(move, 1) for move in moves)
                ours_position = f"position startpos moves {ours_moves}".strip()
                fsf_position = f"position fen {START} moves {fsf_moves}".strip()
                legal = referee.legal_moves(state)
                assert legal == referee.fsf_legal_moves(fsf_position), f"ply {len(moves)}"
                if state.terminated:
                    break
                if ours_red == (int(state.current_player) == 0):
                    lines = best_move(ours, ours_position, "go nodes 8")
                    assert parse_info(lines[-2])["nodes"] == "8"
                    move = lines[-1].split()[1]
                else:
                    reply = best_move(fsf, fsf_position, "go depth 1")[-1].split()[1]
                    move = engine_to_iccs(reply, 1)
                assert move in legal, f"ply {len(moves)}: {move} is not legal"
                state = referee.step(state, notation.parse_action(game, move, state))
                moves.append(move)
            rewards = np.asarray(state.rewards)
            if not legal:  # mate or stalemate: both engines have no move
                assert best_move(ours, ours_position, "go")[-1] == "bestmove (none)"
                winner = "ours" if (rewards[0] > 0) == ours_red else "fsf"
                endings.append(f"{winner} won in {len(moves)} plies")
            else:
                assert not rewards.any()
                status = notation.render(game, state).splitlines()[-1]
                endings.append(f"draw after {len(moves)} plies ({status})")
        print(endings)
        assert any("won" in ending for ending in endings)
        ours.send("quit")
        assert ours._process.wait(timeout=30) == 0
    finally:
        ours.close()
        fsf.close()
