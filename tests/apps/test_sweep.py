"""Sweeps (`azjax sweep`, `azjax.apps.sweeps`): the space file and its checks, every bad input as
one line and status 2, a small sweep in this process (trial runs, told values, the report),
pruning, claiming abandoned trials, and populations of trials."""

import copy
import json
import socket
import subprocess
import textwrap

import optuna
import pytest
from conftest import PYTHON, tiny_config, tiny_experiment
from optuna.trial import TrialState

from azjax.apps import cli, sweeps
from azjax.apps.sweeps import liveness
from azjax.apps.sweeps import objective as objective_lib
from azjax.apps.sweeps import space as space_lib
from azjax.apps.sweeps import storage as storage_lib
from azjax.runs.metrics import read_metrics
from azjax.types import UserError


def write_space(folder, params: str, **options) -> str:
    """A space file in `folder` whose get_space() returns Space(params={params}, **options)."""
    extra = "".join(f", {k}={v}" for k, v in options.items())
    path = folder / "space.py"
    path.write_text(
        textwrap.dedent(f"""
        import optuna
        from azjax.apps.sweeps import Choice, Int, LogUniform, Space, Uniform

        def get_space():
            return Space(params={{{params}}}{extra})
        """)
    )
    return str(path)


def sweep_config(num_iterations: int = 4):
    """The tiny Tic-tac-toe config, evaluated against random every 2 iterations."""
    config = tiny_config()
    config.train.num_iterations = num_iterations
    config.eval.every = 2
    return config


def run_cli(argv, capsys) -> tuple[int, str]:
    status = cli.main(argv)
    return status, capsys.readouterr().err


def test_space_files_load_and_check():
    from azjax.config import load_config

    space = sweeps.load_space("connect_four")  # azjax/apps/spaces/, by name
    checked = space_lib.check(space, load_config("connect_four"))
    assert checked.objective == "eval/elo" and checked.pruner == "median"
    distributions = checked.distributions()
    assert distributions["learner.learning_rate"].log
    assert distributions["selfplay.temperature_moves"].step == 2
    tiny = space_lib.check(sweeps.load_space("sweeps/tic_tac_toe.py"),  # the old spelling
                           sweep_config())  # fmt: skip
    assert tiny.objective == "eval/random/score"  # a single anchor: no Elo to judge by
    assert isinstance(tiny.distributions()["selfplay.temperature_moves"],
                      optuna.distributions.CategoricalDistribution)  # fmt: skip


def test_objectives_are_checked_against_what_runs_log():
    config = sweep_config()
    space = sweeps.Space(params={}, objective="value_loss", direction="minimize")
    assert space_lib.check(space, config).objective == "value_loss"  # a training metric
    for objective in ("eval/random/win_rate", "eval/elo", "games_per_second", "learning_rate"):
        objective_lib.check_objective(config, objective)
    with pytest.raises(UserError, match="did you mean 'value_loss'"):
        objective_lib.check_objective(config, "value_los")


BAD_SPACES = [
    ('"learner.learnig_rate": LogUniform(1e-4, 1e-2)', {}, "did you mean 'learner.learning_rate'"),
    ('"search.algorithm": LogUniform(1e-4, 1e-2)', {}, "holds a str"),
    ('"replay.augment": Uniform(0.0, 1.0)', {}, "holds a bool"),
    ('"learner.learning_rate": Int(1, 3)', {}, "Int draws integers"),
    ('"network.num_blocks": Choice(["two", "four"])', {}, "Choice value 'two'"),
    ('"learner.learning_rate": Uniform(0.01, 0.001)', {}, "low < high"),
    ('"learner.weight_decay": LogUniform(0.0, 0.1)', {}, "low > 0"),
    ('"learner.learning_rate": Uniform(0.0, 0.1)', {}, "learner.learning_rate=0.0"),
    ('"network.num_blocks": Int(1, 300)', {}, "network.num_blocks=300"),
    ('"learner.learning_rate": LogUniform(1e-4, 1e-2)', {"sampler": '"grid"'}, "grid sampler"),
    ('"learner.learning_rate": LogUniform(1e-4, 1e-2)', {"sampler": '"bayes"'}, "sampler must"),
    ('"learner.learning_rate": LogUniform(1e-4, 1e-2)', {"pruner": '"sometimes"'}, "pruner must"),
    ('"name": Choice(["a", "b"])', {}, "set per trial"),
    ("", {"objective": '"eval/mcts:999/score"'}, "do not log the objective"),
    ("", {"objective": '"eval/random/scor"'}, "did you mean 'eval/random/score'"),
    ("", {"objective": '"value_los"'}, "did you mean 'value_loss'"),
]


@pytest.mark.parametrize("params, options, message", BAD_SPACES)
def test_bad_spaces_are_one_line_and_status_2(tmp_path, capsys, params, options, message):
    experiment = tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=2)
    space = write_space(tmp_path, params, **options)
    argv = ["sweep", "--config", str(experiment), "--space", space, "--trials", "2",
            "--workdir", str(tmp_path / "sweep"), "--config.eval.every=2"]  # fmt: skip
    status, err = run_cli(argv, capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not list((tmp_path / "sweep").glob("trial_*"))


def test_bad_sweep_inputs_are_one_line_and_status_2(tmp_path, capsys):
    experiment = str(tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=2))
    space = write_space(tmp_path, '"learner.learning_rate": LogUniform(1e-4, 1e-2)')
    base = ["sweep", "--config", experiment, "--trials", "2", "--workdir", str(tmp_path / "w")]
    no_function = tmp_path / "empty.py"
    no_function.write_text("x = 1\n")
    cases = [
        # the tiny experiment never evaluates: no default objective, no eval objective
        ([*base, "--space", space], "eval.every = 0"),
        (
            [*base, "--space", write_space(tmp_path, "", objective='"eval/random/score"')],
            "eval.every = 0",
        ),
        ([*base, "--space", str(tmp_path / "missing.py")], "not found"),
        ([*base, "--space", str(no_function)], "no get_space() function"),
        ([*base, "--space", space, "--config.eval.every=8"], "never evaluated"),
        (
            [*base, "--space", space, "--config.eval.every=2", "--population", "2", "--pbt"],
            "--population of at least 4",
        ),  # fmt: skip
        (
            [*base, "--space", space, "--config.eval.every=2", "--config.learner.rate=1"],
            "unknown config key",
        ),  # fmt: skip
        (
            [
                *base,
                "--space",
                space,
                "--config.eval.every=2",
                "--storage",
                "postgresql://nobody:secret@127.0.0.1:9/none",
            ],
            "cannot open",
        ),  # fmt: skip
        (["sweep", "--workdir", str(tmp_path / "none"), "--report"], "no sweep in"),
        ([*base, "--space", space, "--report"], "--report takes only"),
        (["sweep", "--workdir", str(tmp_path / "w2"), "--space", space], "--trials N"),
    ]
    for argv, message in cases:
        status, err = run_cli(argv, capsys)
        assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, (argv, err)
        assert "secret" not in err
    assert not list(tmp_path.glob("w*/trial_*"))


@pytest.mark.slow  # trains several tiny trials
def test_a_sweep_trains_tells_reports_resumes_and_prunes(tmp_path, capsys):
    # One test, so that its trials share one compilation wherever pytest-xdist runs it.
    workdir = tmp_path / "ttt"
    space = sweeps.load_space("tic_tac_toe")
    study = sweeps.run_sweep(sweep_config(), space, workdir, trials=3, quiet=True, heartbeat=1)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    for trial in trials:  # each trial is an ordinary run, told its metric's last value
        run = workdir / f"trial_{trial.number:04d}"
        assert (run / "config.json").exists() and (run / "checkpoints").is_dir()
        records = read_metrics(run)
        assert [r["iteration"] for r in records] == [1, 2, 3, 4]
        assert trial.value == records[-1]["eval/random/score"]
        assert trial.intermediate_values == {2: records[1]["eval/random/score"],
                                             4: records[3]["eval/random/score"]}  # fmt: skip
        saved = json.loads((run / "config.json").read_text())
        assert saved["name"] == f"tiny_tic_tac_toe_trial_{trial.number:04d}"
        assert saved["learner"]["learning_rate"] == trial.params["learner.learning_rate"]
        assert (workdir / "tensorboard" / run.name).is_dir()  # the HParams view
    assert json.loads((workdir / "sweep.json").read_text())["objective"] == "eval/random/score"

    table = sweeps.trials_table(workdir)
    assert list(table.columns[:3]) == ["trial", "state", "objective"]
    columns = {"learner.learning_rate", "selfplay.temperature_moves", "iterations", "minutes"}
    assert columns <= set(table.columns) and set(table["iterations"]) == {4}
    assert list(table["objective"]) == sorted(table["objective"], reverse=True)
    assert cli.main(["sweep", "--workdir", str(workdir), "--report"]) == 0
    out = capsys.readouterr().out
    assert "eval/random/score" in out and "history.png" in out
    for name in ("history.png", "importance.png", "slice.png"):
        assert (workdir / "report" / name).stat().st_size > 0

    study = sweeps.run_sweep(sweep_config(), space, workdir, trials=3, quiet=True)
    assert len(study.get_trials()) == 3  # the study holds its 3 trials: nothing more to run
    experiment = tiny_experiment(tmp_path, num_iterations=4, checkpoint_every=2)
    other = write_space(tmp_path, '"learner.learning_rate": LogUniform(1e-4, 1e-2)')
    argv = ["sweep", "--config", str(experiment), "--space", other, "--trials", "4",
            "--workdir", str(workdir), "--config.eval.every=2"]  # fmt: skip
    status, err = run_cli(argv, capsys)
    assert status == 2 and "was started with another space" in err
    argv[argv.index("--space") + 1] = "tic_tac_toe"
    argv[-1] = "--config.eval.every=4"
    status, err = run_cli(argv, capsys)
    assert status == 2 and "another config: eval.every: 2 -> 4" in err

    pruning = sweeps.Space(
        params={"learner.learning_rate": sweeps.LogUniform(1e-4, 1e-2)},
        pruner=optuna.pruners.ThresholdPruner(lower=2.0),  # any score is below 2: prune
    )
    study = sweeps.run_sweep(sweep_config(), pruning, tmp_path / "pruned", trials=1, quiet=True)
    (trial,) = study.get_trials()
    assert trial.state == TrialState.PRUNED and list(trial.intermediate_values) == [2]
    assert [r["iteration"] for r in read_metrics(tmp_path / "pruned" / "trial_0000")] == [1, 2]


def test_an_abandoned_trial_is_claimed_once_and_requeued(tmp_path):
    path = str(tmp_path / "study.journal")
    from optuna.storages.journal import JournalFileBackend

    def storage():
        return optuna.storages.JournalStorage(JournalFileBackend(path))

    distributions = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    study = optuna.create_study(storage=storage(), study_name="s")
    trial = study.ask(distributions)
    dead = subprocess.run([PYTHON, "-c", "import os; print(os.getpid())"], capture_output=True)
    worker = f"{socket.gethostname()}:{int(dead.stdout)}"  # a process of this host, gone
    study._storage.set_trial_user_attr(trial._trial_id, liveness.WORKER, worker)
    frozen = study._storage.get_trial(trial._trial_id)
    assert "is gone" in liveness.abandoned(frozen, grace=60)
    alive = copy.copy(frozen)
    alive.user_attrs = {**frozen.user_attrs, liveness.WORKER: liveness.worker_name()}
    assert liveness.abandoned(alive, grace=60) is None
    later = frozen.datetime_start.timestamp() + 5
    assert "no heartbeat" in liveness.abandoned(frozen, grace=1, now=later)
    # Two workers (two storages on one journal) claim it: one FAIL takes effect.
    workdir = tmp_path
    claims = [
        liveness.claim(s, frozen, grace=60, lock=storage_lib.locked(workdir))
        for s in (storage(), storage())
    ]
    assert sum(c is not None for c in claims) == 1
    liveness.requeue(study, next(c for c in claims if c is not None))
    again = study.ask(distributions)
    popped = study._storage.get_trial(again._trial_id)
    assert popped.params == frozen.params and liveness.root_number(popped) == trial.number
    assert liveness.WORKER not in popped.user_attrs and liveness.is_retry(popped)
    assert [t.state for t in study.get_trials()] == [TrialState.FAIL, TrialState.RUNNING]


@pytest.mark.deep  # CI: tests/training/test_population.py
@pytest.mark.slow  # trains several tiny trials
def test_a_population_of_trials_trains_together(tmp_path):
    space = sweeps.Space(
        params={"learner.learning_rate": sweeps.LogUniform(1e-4, 1e-2)}, sampler="random"
    )
    study = sweeps.run_sweep(
        sweep_config(), space, tmp_path / "p", trials=3, population=2, quiet=True
    )
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    for trial in trials:
        records = read_metrics(tmp_path / "p" / f"trial_{trial.number:04d}")
        assert [r["iteration"] for r in records] == [1, 2, 3, 4]
        assert trial.value == records[-1]["eval/random/score"]
    # The two members of the first population log their learning rates (population metrics).
    assert "hyper/learner.learning_rate" in read_metrics(tmp_path / "p" / "trial_0000")[0]


def test_two_workers_asking_at_once_stay_within_the_total(tmp_path):
    from optuna.storages.journal import JournalFileBackend

    from azjax.apps.sweeps import worker as worker_lib

    def storage():
        return optuna.storages.JournalStorage(JournalFileBackend(str(tmp_path / "j.journal")))

    config = sweep_config()
    space = space_lib.check(
        sweeps.Space(params={"learner.learning_rate": sweeps.LogUniform(1e-4, 1e-2)}), config
    )
    store = storage()
    study = optuna.create_study(storage=store, study_name="s", direction="maximize")
    other = optuna.load_study(storage=storage(), study_name="s")
    worker = worker_lib._Worker(study, store, space, config, tmp_path, trials=1, pbt=None,
                                population=1, heartbeat=1, grace=3, progress="none",
                                quiet=True, log=lambda *_: None)  # fmt: skip
    worker.beat = liveness.Heartbeat(store, 1)  # its thread not started: marks only
    ask = study.ask

    def racing_ask(distributions):  # another worker creates trial 0 after our count of 0
        other.ask(distributions)
        return ask(distributions)

    study.ask = racing_ask
    assert worker._ask(1) == []
    first, second = study.get_trials()
    assert first.state == TrialState.RUNNING and second.state == TrialState.FAIL
    assert second.user_attrs[liveness.SURPLUS] and worker._roots() == [first]


@pytest.mark.parametrize(
    "text, message",
    [("[" * 100_000, "nested too deeply"), ("{", "is corrupt"), ("1" * 5000, "is corrupt")],
)
def test_a_damaged_sweep_file_is_one_line(tmp_path, text, message):
    (tmp_path / "sweep.json").write_text(text)
    with pytest.raises(UserError, match=message):
        storage_lib.stored_url(tmp_path, None)
    (tmp_path / "sweep.json").unlink()
    (tmp_path / "sweep.json").mkdir()
    with pytest.raises(UserError, match="not a regular file"):
        storage_lib.stored_url(tmp_path, None)
