"""Outside engines as host players: engine specs, the guarded subprocess (missing programs,
deadlines, stderr in messages), GTP against GNU Go and UCI against Fairy-Stockfish (each
skipped where the program is missing), and fake engines that crash, hang, break their
protocol or play illegal moves: every failure is an `EngineError` within the timeout.
"""

import shlex
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import PYTHON, require_program

from azjax import games
from azjax.games import notation
from azjax.games.base import random_legal_action
from azjax.games.notation import xiangqi
from azjax.matches import arena
from azjax.matches.engines import (
    RESIGN,
    EngineError,
    EngineProcess,
    EngineSpec,
    HostPlayer,
    open_player,
    parse_engine_spec,
)
from azjax.matches.engines.gtp_client import GtpPlayer, genmove_command
from azjax.matches.engines.uci_client import UciPlayer, iccs_to_engine
from azjax.types import UserError

# A fake engine: `fake.py PROTOCOL MODE [MARKER]`. Modes: ok (GTP passes, UCI plays h2e2),
# crash (exits with status 3 on genmove/go, once only when MARKER is given), hang (sleeps on
# genmove/go), mute (never answers), illegal (E5 / a0a5), garbage (a word that is no move),
# resign, broken (a GTP answer without = or ?), deaf (ignores quit and stdin's end), cleanup
# (lists kgs-genmove_cleanup, which plays E5; genmove still passes).
FAKE_ENGINE = r"""
import os, sys, time

protocol, mode = sys.argv[1], sys.argv[2]
marker = sys.argv[3] if len(sys.argv) > 3 else None


def out(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def move_time():
    if mode == "crash" and not (marker and os.path.exists(marker)):
        if marker:
            open(marker, "w").close()
        sys.stderr.write("fake: segmentation fault\n")
        sys.stderr.flush()
        sys.exit(3)
    if mode == "hang":
        time.sleep(3600)


for line in sys.stdin:
    words = line.split()
    if mode == "mute" or mode == "deaf" and words[:1] == ["quit"]:
        time.sleep(3600)
    if not words:
        continue
    if protocol == "gtp":
        if words[0] == "list_commands":
            extra = ["kgs-genmove_cleanup"] if mode == "cleanup" else []
            out("= " + "\n".join(["genmove", "list_commands", *extra]) + "\n")
        elif words[0] == "kgs-genmove_cleanup":
            out("= E5\n")
        elif words[0] == "genmove":
            move_time()
            reply = {"illegal": "E5", "garbage": "banana", "resign": "resign"}.get(mode, "pass")
            out(("oops " if mode == "broken" else "= ") + reply + "\n")
        else:
            out("=\n")
        if words[0] == "quit":
            sys.exit(0)
    elif words[0] == "uci":
        out("id name Fake Engine")
        out("option name Hash type spin default 16 min 1 max 1024")
        out("uciok")
    elif words[0] == "isready":
        out("readyok")
    elif words[0] == "go":
        move_time()
        out("info depth 1 score cp 0")
        out("bestmove " + {"illegal": "a0a5", "garbage": "xyzzy"}.get(mode, "h2e2"))
    elif words[0] == "quit":
        sys.exit(0)
if mode == "deaf":
    time.sleep(3600)
"""


@pytest.fixture
def fake(tmp_path):
    """fake(protocol, mode, *extra) -> the fake engine's command line."""
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE_ENGINE)
    return lambda protocol, mode, *extra: shlex.join([PYTHON, str(path), protocol, mode, *extra])


@pytest.fixture(scope="module")
def go():
    return games.make("go_9x9")


@pytest.fixture(scope="module")
def chess():
    return games.make("xiangqi")


def test_parse_engine_spec(go, chess):
    spec = parse_engine_spec('gtp:"gnugo --mode gtp --level 5"')
    assert spec == EngineSpec("gtp", "gnugo --mode gtp --level 5", {})
    assert spec.name == "gtp:gnugo --mode gtp --level 5"
    assert spec.plays(go) and not spec.plays(chess)
    player = open_player(spec)  # the engine starts with the first game
    assert isinstance(player, GtpPlayer) and player.name == spec.name
    spec = parse_engine_spec("uci:fairy-stockfish depth=1")
    assert spec == EngineSpec("uci", "fairy-stockfish", {"depth": 1})
    assert spec.plays(chess) and not spec.plays(go)
    player = open_player(spec)
    assert isinstance(player, UciPlayer) and player.limit == "depth 1"
    spec = parse_engine_spec(' UCI:"/opt/pika fish" nodes=500 timeout=2.5 ranks=0-9 ')
    assert spec == EngineSpec(
        "uci", "/opt/pika fish", {"nodes": 500, "timeout": 2.5, "ranks": "0-9"}
    )
    assert open_player(spec).timeout == open_player(spec, timeout=9).timeout == 2.5
    assert open_player("uci:pikafish movetime=200").limit == "movetime 200"
    assert UciPlayer("pikafish").limit == "movetime 1000"  # the default
    assert parse_engine_spec("gtp:gnugo timeout=9").options == {"timeout": 9.0}
    assert open_player("uci:fairy-stockfish depth=1 skill=-20").skill == -20
    assert UciPlayer("pikafish").skill is None  # the engine's own setting
    assert GtpPlayer("gnugo").cleanup  # the default
    spec = parse_engine_spec("gtp:gnugo cleanup=false")
    assert spec.options == {"cleanup": False} and not open_player(spec).cleanup
    assert open_player(spec, timeout=9).timeout == 9.0
    assert parse_engine_spec("gtp:gnugo cleanup=True").options == {"cleanup": True}


@pytest.mark.parametrize(
    "spec, message",
    [
        ("gnugo", "expected gtp:COMMAND or uci:COMMAND"),
        ("chess:stockfish", "expected gtp:COMMAND or uci:COMMAND"),
        ("gtp:", "no command"),
        ('gtp:""', "no command"),
        ('gtp:"gnugo --mode gtp', "No closing quotation"),
        ("gtp:gnugo --mode gtp", "'--mode' is no key=value option (quote a command"),
        ("gtp:gnugo depth=1", "unknown option 'depth'; gtp takes timeout"),
        ("uci:fsf depth=0", "depth must be an integer from 1 to 1000, got '0'"),
        ("uci:fsf depth=x", "depth must be an integer from 1 to 1000, got 'x'"),
        ("uci:fsf nodes=1.5", "nodes must be a positive integer"),
        ("uci:fsf timeout=nan", "timeout must be a positive number of seconds"),
        ("uci:fsf timeout=-1", "timeout must be a positive number of seconds"),
        ("uci:fsf ranks=1-9", "ranks must be auto, 0-9 or 1-10"),
        ("uci:fsf depth=1 nodes=5", "give at most one of depth, nodes and movetime"),
        ("gtp:gnugo cleanup=maybe", "cleanup must be true or false, got 'maybe'"),
        ("uci:fsf cleanup=true", "unknown option 'cleanup'"),
        ("uci:fsf skill=21", "skill must be an integer from -20 to 20, got '21'"),
        ("gtp:gnugo skill=1", "unknown option 'skill'"),
    ],
)
def test_bad_engine_specs_are_one_line_user_errors(spec, message):
    with pytest.raises(UserError) as error:
        parse_engine_spec(spec)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(f"bad engine spec {spec!r}: ")


def test_missing_or_unrunnable_programs_are_user_errors(go, tmp_path):
    with pytest.raises(UserError, match="^engine program not found: no-such-engine-xyz$"):
        EngineProcess("no-such-engine-xyz --mode gtp", name="x")
    with pytest.raises(UserError, match=f"^engine program cannot be run: {tmp_path}: "):
        EngineProcess([str(tmp_path)], name="x")
    with pytest.raises(UserError, match="^engine program not found: no-such-engine-xyz$"):
        GtpPlayer("no-such-engine-xyz").start(go, go.init(jax.random.PRNGKey(0)))
    with pytest.raises(UserError, match="empty command"):
        EngineProcess("  ", name="x")


def test_engine_process_reads_with_deadlines_and_reports_stderr():
    with EngineProcess("cat", name="cat", timeout=5) as cat:
        cat.send("hello\nworld")  # one line: a newline inside becomes a space
        assert cat.read_line() == "hello world"
        started = time.monotonic()
        with pytest.raises(EngineError, match="^engine cat did not send an answer within 0.2 s$"):
            cat.read_line(timeout=0.2)
        assert time.monotonic() - started < 1
        assert cat.alive
    assert not cat.alive
    script = "import sys; sys.stderr.write('boom\\n'); print('partial'); sys.exit(3)"
    with EngineProcess([PYTHON, "-c", script], name="dying", timeout=5) as dying:
        assert dying.read_line() == "partial"
        with pytest.raises(EngineError) as error:
            dying.read_until(lambda line: False, waiting_for="uciok")
        assert str(error.value) == (
            "engine dying exited with status 3 while the host waited for uciok (stderr: boom)"
        )
        with pytest.raises(EngineError, match="exited with status 3 before 'more'"):
            dying.send("more")


def test_close_kills_an_engine_that_ignores_quit(fake):
    engine = EngineProcess(fake("uci", "deaf"), name="deaf", timeout=5)
    engine.send("isready")
    assert engine.read_line() == "readyok"
    started = time.monotonic()
    engine.close()
    assert time.monotonic() - started < 5 and engine._process.returncode is not None
    engine.close()  # twice is fine


def gtp_stones(player: GtpPlayer, color: str) -> set[str]:
    return set(player._ask(f"list_stones {color}").split())


def test_gtp_player_against_gnugo(go):
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    command = f"{gnugo} --mode gtp --level 0 --chinese-rules"
    step = jax.jit(go.step)
    black, white = GtpPlayer(command, timeout=60), GtpPlayer(command, timeout=60)
    with black, white:
        for game_number in range(2):  # one process serves game after game
            state = go.init(jax.random.PRNGKey(0)).replace(komi=jnp.float32(6.5))
            for player in (black, white):
                player.start(go, state)
            if game_number == 0:
                processes = black._process, white._process
            assert (black._process, white._process) == processes
            assert black._ask("get_komi") == "6.5"
            plies, passes = 0, 0
            while not state.terminated and plies < 30:
                mover = (black, white)[int(state.current_player)]
                action = mover.choose(state)
                assert action != RESIGN and bool(state.legal_action_mask[action])
                for player in (black, white):
                    player.observe(state, action)
                state = step(state, jnp.int32(action))
                plies += 1
                passes = passes + 1 if action == go.num_actions - 1 else 0
            board = np.asarray(state.board)
            ours = {notation.action_to_string(go, p) for p in np.flatnonzero(board == 1)}
            assert gtp_stones(black, "black") == gtp_stones(white, "black") == ours
        # A set-up position: its stones are played onto the engine's board.
        board = np.zeros(81, np.int8)
        board[[40, 41]], board[[30]] = 1, -1
        state = go.setup(board, 1)
        white.start(go, state)
        assert gtp_stones(white, "black") == {"E5", "F5"} and gtp_stones(white, "white") == {"D6"}
        action = white.choose(state)
        assert bool(state.legal_action_mask[action])


def test_gtp_moves_by_kgs_genmove_cleanup_where_the_engine_lists_it(fake, go):
    assert genmove_command(["genmove", "kgs-genmove_cleanup"]) == "kgs-genmove_cleanup"
    assert genmove_command(["genmove", "kgs-genmove_cleanup"], cleanup=False) == "genmove"
    assert genmove_command(["genmove", "play"]) == "genmove"
    start = go.init(jax.random.PRNGKey(0))
    e5, pass_action = notation.parse_action(go, "E5", start), go.num_actions - 1
    # The fake answers kgs-genmove_cleanup with E5 and genmove with a pass.
    for mode, cleanup, expected in [
        ("cleanup", True, e5),
        ("cleanup", False, pass_action),
        ("ok", True, pass_action),  # it lists no kgs-genmove_cleanup
    ]:
        with GtpPlayer(fake("gtp", mode), timeout=10, cleanup=cleanup) as player:
            for _ in range(2):  # the command is chosen once per process, kept between games
                player.start(go, start)
                assert player.choose(start) == expected, (mode, cleanup)


class RandomThenPass(HostPlayer):
    """A weak Go player: `moves` random legal moves that are no pass, then passes only.
    It keeps the moves of the game (`actions`)."""

    def __init__(self, moves: int, seed: int):
        self.name, self.moves, self.rng = "random-then-pass", moves, np.random.default_rng(seed)

    def start(self, game, state):
        self.pass_action, self.played, self.actions = game.num_actions - 1, 0, []

    def observe(self, state, action):
        self.actions.append(action)

    def choose(self, state):
        legal = np.flatnonzero(np.asarray(state.legal_action_mask)[: self.pass_action])
        self.played += 1
        if self.played > self.moves or not len(legal):
            return self.pass_action
        return int(self.rng.choice(legal))

    def close(self):
        pass


def gtp_score(text: str) -> float:
    """A GTP final_score ("B+3.5", "W+88.5", "0") as black's lead."""
    return 0.0 if text == "0" else float(text[2:]) * (1 if text[0] in "Bb" else -1)


@pytest.mark.slow
def test_games_against_gnugo_end_as_gnugo_scores_them(go):
    """Complete games against GNU Go refereed by azjax's Tromp-Taylor rules. A weak player
    leaves dead stones in GNU Go's area and passes; with kgs-genmove_cleanup GNU Go captures
    them before it passes too, so the game ends with no dead stones and azjax's score of the
    final board is GNU Go's own (area) final_score. (With plain genmove GNU Go passed at once
    and the dead stones counted for their owner: the weak side won on the board.)"""
    gnugo = require_program("gnugo", install="apt-get install gnugo", paths=("/usr/games",))
    engine = GtpPlayer(f"{gnugo} --mode gtp --level 0 --chinese-rules", timeout=60)
    step = jax.jit(go.step)
    with engine:
        for seed in range(2):  # GNU Go black, then white
            weak = RandomThenPass(moves=25, seed=seed)
            first, second = (engine, weak) if seed == 0 else (weak, engine)
            score, plies, reason = arena.play_host_game(
                go, first, second, opening_plies=0, key=jax.random.PRNGKey(seed), step=step
            )
            assert reason == "" and plies == len(weak.actions) < go.max_episode_length
            assert weak.actions[-2:] == [go.num_actions - 1] * 2  # ended by two passes
            state = go.init(jax.random.PRNGKey(seed))
            for action in weak.actions:
                state = step(state, jnp.int32(action))
            assert bool(state.terminated)
            assert engine._ask("final_status_list dead") == ""
            lead = float(go.score(state))  # black's Tromp-Taylor lead
            assert lead == gtp_score(engine._ask("final_score")), seed
            assert score == (1.0 if lead > 0 else 0.0) and (score == 1.0) == (seed == 0)


def rhino_board(engine: GtpPlayer) -> list[str]:
    """gtp-rhino's `showboard` rows as strings of "X" (black), "O" and ".", row 1 first."""
    cells = [word for word in engine._ask("showboard").split() if word in ("X", "O", ".")]
    return ["".join(cells[i : i + 8]) for i in range(0, 64, 8)]


@pytest.mark.slow  # complete Othello games against GRhino
def test_gtp_player_plays_othello_against_grhino():
    """Two GRhino engines (gtp-rhino, GTP as Quarry speaks it for Othello) play whole games
    through the GTP player after 4 random plies, refereed by azjax's rules: after every move
    both engines' boards are azjax's, and each game's end, winner and score are GRhino's own."""
    rhino = require_program("gtp-rhino", install="apt-get install grhino", paths=("/usr/games",))
    othello = games.make("othello")
    step = jax.jit(othello.step)
    discs = {1: "X", -1: "O", 0: "."}
    black = GtpPlayer(f"{rhino} --level 1", timeout=60)
    white = GtpPlayer(f"{rhino} --level 1 --rand 5", timeout=60)
    with black, white:
        for seed in range(3):
            key = jax.random.PRNGKey(seed)
            state, plies = othello.init(key), 0
            for player in (black, white):
                player.start(othello, state)
            while not bool(state.terminated):
                if plies < 4:  # varied openings
                    key, sub = jax.random.split(key)
                    action = int(random_legal_action(sub, state.legal_action_mask))
                else:
                    action = (black, white)[int(state.current_player)].choose(state)
                assert bool(state.legal_action_mask[action]), action
                for player in (black, white):
                    player.observe(state, action)
                state, plies = step(state, jnp.int32(action)), plies + 1
                board = np.asarray(state.board).reshape(8, 8)
                ours = ["".join(discs[int(v)] for v in row) for row in board]
                assert rhino_board(black) == rhino_board(white) == ours, plies
            board = np.asarray(state.board)
            lead = int(np.sum(board))  # black's discs less white's
            # GRhino scores by the World Othello Federation's rule: the empty squares of a
            # game that ended before the board was full go to the winner.
            lead += int(np.sign(lead)) * int(np.sum(board == 0))
            said = black._ask("final_score")
            assert lead == (0 if said == "0" else int(said[2:]) * (1 if said[0] == "B" else -1))
            assert np.sign(float(state.rewards[0])) == np.sign(lead)


def test_uci_player_against_fairy_stockfish(chess):
    fsf = require_program(
        "fairy-stockfish", install="apt-get install fairy-stockfish", paths=("/usr/games",)
    )
    step = jax.jit(chess.step)
    red = UciPlayer(fsf, depth=1, timeout=60, skill=-20)  # at its weakest
    black = UciPlayer(fsf, nodes=200, ranks="1-10")
    with red, black:
        for start_fen in (xiangqi.START_FEN, "4k4/9/9/9/9/9/9/9/4A4/3K1R3 w"):
            state = xiangqi.from_fen(chess, start_fen)
            for player in (red, black):
                player.start(chess, state)
            assert red.engine_name.startswith("Fairy-Stockfish") and red.rank_base == 1
            assert red._start_fen == xiangqi.to_fen(chess, state)
            names = []
            for _ in range(24):
                if state.terminated:
                    break
                mover = (red, black)[int(state.current_player)]
                action = mover.choose(state)  # an EngineError if it were illegal for us
                assert bool(state.legal_action_mask[action])
                names.append(notation.action_to_string(chess, action, state))
                for player in (red, black):
                    player.observe(state, action)
                state = step(state, jnp.int32(action))
            # Fairy-Stockfish's ranks are 1-10: the cannon to the centre, h2e2, is h3e3.
            assert red._moves == black._moves == [iccs_to_engine(name, 1) for name in names]
            assert len(names) >= 1


def chess_action(game, move: str, state) -> int:
    return notation.parse_action(game, move, state)


@pytest.mark.parametrize("protocol", ["gtp", "uci"])
def test_fake_engines_fail_with_engine_errors(protocol, fake, go, chess, tmp_path):
    game = go if protocol == "gtp" else chess
    player_class = GtpPlayer if protocol == "gtp" else UciPlayer
    start = game.init(jax.random.PRNGKey(0))

    limit = {} if protocol == "gtp" else {"depth": 1}
    played = go.num_actions - 1 if protocol == "gtp" else chess_action(chess, "h2e2", start)

    def player(mode, *extra, timeout=10):
        result = player_class(fake(protocol, mode, *extra), timeout=timeout, **limit)
        result.start(game, start)
        return result

    with player("ok") as ok:
        assert ok.choose(start) == played
    with player("crash") as crashing:
        with pytest.raises(EngineError, match="exited with status 3.*stderr: fake: segmentation"):
            crashing.choose(start)
    with player("hang", timeout=1) as hanging:
        started = time.monotonic()
        with pytest.raises(EngineError, match="did not send .* within 1 s"):
            hanging.choose(start)
        assert time.monotonic() - started < 5  # the timeout, then the quit grace
    with player("garbage") as garbage:
        expected = "illegal move.*'banana' is not a move" if protocol == "gtp" else "no move"
        with pytest.raises(EngineError, match=expected):
            garbage.choose(start)
    with player("illegal") as illegal:
        state = start
        if protocol == "gtp":  # black E5, then the engine (white) answers E5
            action = notation.parse_action(go, "E5", start)
            illegal.observe(start, action)
            state = go.step(start, action)
        with pytest.raises(EngineError, match="illegal move"):
            illegal.choose(state)
    with pytest.raises(
        EngineError, match="did not send (uciok|a response to 'list_commands') within"
    ):
        player("mute", timeout=1)
    # A crash ends the process; the next game starts a new one.
    marker = tmp_path / "crashed"
    with player("crash", str(marker)) as once:
        with pytest.raises(EngineError, match="exited with status 3"):
            once.choose(start)
        once.start(game, start)
        assert once.choose(start) == played
    if protocol == "uci":  # the fake lists no Skill Level option
        with pytest.raises(EngineError, match="has no Skill Level option"):
            UciPlayer(fake("uci", "ok"), skill=-20).start(game, start)


def test_gtp_resignation_and_broken_answers(fake, go):
    start = go.init(jax.random.PRNGKey(0))
    with GtpPlayer(fake("gtp", "resign")) as resigning:
        resigning.start(go, start)
        assert resigning.choose(start) == RESIGN
    with GtpPlayer(fake("gtp", "broken")) as broken:
        broken.start(go, start)
        with pytest.raises(EngineError, match="broke GTP: 'oops pass' in response to 'genmove b'"):
            broken.choose(start)
    with UciPlayer("cat") as cat, pytest.raises(UserError, match="plays xiangqi over UCI, not go"):
        cat.start(go, start)
