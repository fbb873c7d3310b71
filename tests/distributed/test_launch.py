"""fit(distributed=…) on two CPU processes (gloo on loopback), through `apsi launch` and plain torchrun:
an N-process fit equals a 1-process fit with batch_size × N, every rank ends with the same parameters,
only rank 0 writes, and a failing rank stops them all with a message naming it and its Apsi line."""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("train.apsi")
# one thread per process: the machines running the tests have few cores, shared
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
for _name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
    ENV.pop(_name, None)


def run(args, cwd, timeout=240):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, cwd=cwd,
                          timeout=timeout)


def launch(cwd, *args):
    return run(["-m", "apsi", "launch", "--nproc", "2", "--allow-python", *args], cwd)


def load(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def start_one_process(folder, program, *args):
    """Start a 1-process reference run of program in a folder of its own, now: it runs beside the
    launch it is compared with (suite time; each process is one thread, mostly starting Python and
    torch). Returns a function that waits for it and gives its stdout."""
    folder.mkdir()
    shutil.copy(program, folder)
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "run", "--allow-python", program.name, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=folder)

    def stdout():
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        return out

    return stdout


def _arg(config):
    """train.apsi's argument for one fit: N,batch_size,optimizer[,variant[,how]]."""
    return ",".join(map(str, config))


def one_process(tmp_path, configs):
    """The 1-process run of train.apsi over `configs`, started now; the function returned gives the
    tree of each fit."""
    folder = tmp_path / "one"
    stdout = start_one_process(folder, PROGRAM, *map(_arg, configs))

    def trees():
        assert stdout().split("\n")[:-1] == ["rank 0 of 1 world 1"] * len(configs)
        return [load(folder / f"rank0-{k}.npz") for k in range(len(configs))]

    return trees


def two_processes(tmp_path, configs, how="launch"):
    """train.apsi over `configs` on two processes: its folder, and each fit's trees on rank 0 and 1."""
    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copy(PROGRAM, folder)
    args = ("train.apsi", *map(_arg, configs))
    if how == "launch":
        out = launch(folder, *args)
    else:
        out = run(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "apsi", "run",
                   "--allow-python", *args], folder)
    assert out.returncode == 0, out.stdout + out.stderr
    said = ["rank 0 of 2 world 2"] * len(configs) + ["rank 1 of 2 world 2"] * len(configs)
    assert sorted(out.stdout.split("\n")[:-1]) == said
    return folder, [(load(folder / f"rank0-{k}.npz"), load(folder / f"rank1-{k}.npz"))
                    for k in range(len(configs))]


# 37 rows, 5 per rank: the last global batch of 7 gives rank 1 two rows; 33 rows, 3 per rank: the last
# global batch of 3 leaves rank 1 none (it must still join the gradient all-reduce, with weight 0); with
# a mask, a rank's share may keep fewer samples than the other's, or none. "fsdp" shards the weights
# and the optimizer state too, and must give the same numbers (with Adam: test_options.py's Python
# caller and test_fsdp_checkpoints_and_resumes_as_one_process)
SAME_AS_ONE = [(37, 5, "adam", "plain", "auto"), (33, 3, "sgd", "mask", "auto"),
               (37, 5, "adam", "mask", "auto"), (33, 3, "sgd", "mask", "fsdp"),
               (37, 5, "sgd", "weights", "auto")]
BATCH_NORM = {shard: (40, 5, "adam", "bn", shard) for shard in ("auto", "fsdp")}
PLAIN_SGD = (33, 3, "sgd", "plain", "auto")
LAUNCHED = [*SAME_AS_ONE, *BATCH_NORM.values(), PLAIN_SGD]


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    """Every 2-process fit of the tests below in one launch of train.apsi (one start-up of the launcher
    and its two ranks, not eight: suite time), beside one process that makes SAME_AS_ONE's fits with
    twice the batch. Each fit runs as a program's later fit does: in the process group already joined."""
    tmp_path = tmp_path_factory.mktemp("fits")
    started = one_process(tmp_path, [(n, bs * 2, opt, variant) for n, bs, opt, variant, _ in SAME_AS_ONE])
    folder, ranks = two_processes(tmp_path, LAUNCHED)
    return SimpleNamespace(folder=folder, ranks=dict(zip(LAUNCHED, ranks)),
                           one=dict(zip(SAME_AS_ONE, started())))


@pytest.mark.parametrize("config", SAME_AS_ONE, ids=_arg)
def test_two_processes_equal_one_with_twice_the_batch(fits, config):
    one, (r0, r1) = fits.one[config], fits.ranks[config]
    for key in one:
        np.testing.assert_allclose(r0[key], one[key], rtol=0, atol=1e-10, err_msg=key)
        np.testing.assert_array_equal(r1[key], r0[key], err_msg=key)      # the same tree on every rank
    # only rank 0 wrote save_params' file and the checkpoint (rank 1 skipped them without an error)
    k, folder = LAUNCHED.index(config), fits.folder
    assert (folder / f"only0-{k}.npz").exists() and not (folder / f"only1-{k}.npz").exists()
    assert (folder / f"ck0-{k}.npz").exists() and not (folder / f"ck1-{k}.npz").exists()


@pytest.mark.parametrize("shard", ["auto", "fsdp"])
def test_batch_norm_statistics_end_the_same_on_every_rank(fits, shard):
    """Each rank normalises its own rows (running statistics per process while an epoch runs, as DDP
    without SyncBatchNorm); after each epoch they are averaged, so r.params is one tree everywhere."""
    r0, r1 = fits.ranks[BATCH_NORM[shard]]
    states = [k for k in r0 if k.startswith("params.") and ".state." in k]
    assert states, sorted(r0)
    for key in r0:
        np.testing.assert_array_equal(r1[key], r0[key], err_msg=key)
    assert all(np.isfinite(r0[k]).all() for k in states)


def test_plain_torchrun_runs_the_same_fit(tmp_path):
    started = one_process(tmp_path, [(37, 10, "adam")])
    _, [(r0, r1)] = two_processes(tmp_path, [(37, 5, "adam")], how="torchrun")
    [one] = started()
    np.testing.assert_allclose(r0["history"], one["history"], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(r1["params.dense.w"], r0["params.dense.w"])


def test_the_sharded_fit_matches_plain_torch(fits):
    """An independent reference: the same MLP, shuffling and SGD written directly in torch."""
    import torch

    from apsi_layers.layers.training.batches import seeds

    n, batch_size = PLAIN_SGD[:2]
    r0, _ = fits.ranks[PLAIN_SGD]
    x, y = torch.from_numpy(r0["x"]), torch.from_numpy(r0["y"]).long()
    w = [torch.from_numpy(r0[f"start.{k}"]).clone().requires_grad_(True)
         for k in ("dense.w", "dense.b", "dense_1.w", "dense_1.b")]
    shuffle = np.random.default_rng(seeds(0)[0])
    history = []
    for _ in range(3):
        order = shuffle.permutation(n)
        total = 0.0
        for i in range(0, n, batch_size * 2):
            rows = torch.from_numpy(order[i:i + batch_size * 2])
            logits = torch.relu(x[rows] @ w[0] + w[1]) @ w[2] + w[3]
            loss = torch.nn.functional.cross_entropy(logits, y[rows])
            for t in w:
                t.grad = None
            loss.backward()
            with torch.no_grad():
                for t in w:
                    t -= 0.5 * t.grad
            total += loss.item() * len(rows)
        history.append(total / n)
    np.testing.assert_allclose(r0["history"], history, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r0["params.dense_1.w"], w[2].detach().numpy(), rtol=0, atol=1e-10)


FAILING = """use nn
use layers
let x = randn([40, 4], seed=1)
fn loss(p, t):
    if rank() == 1:
        let bad = [1, 2][7]
    return mean((p - t) * (p - t))
let net = mlp(4, 3, hidden=[8])
let r = fit(net, net.init(seed=0), x, randn([40, 3], seed=3), loss=loss, epochs=2, batch_size=5,
            backend="torch", precision="fp64", distributed=true, verbose=false)
print("finished")
"""


def test_a_failing_rank_stops_every_rank(tmp_path):
    (tmp_path / "fail.apsi").write_text(FAILING)
    out = launch(tmp_path, "fail.apsi")
    assert out.returncode == 1
    assert "finished" not in out.stdout
    err = out.stderr
    assert "apsi: rank 1 of 2 failed:" in err
    assert "fail.apsi:6:25: error: index out of range" in err        # the rank's Apsi line
    # rank 0 either notices the lost contact first or is stopped by torchrun's SIGTERM (143) first: a race
    assert ("fit: rank 0 lost contact with the other ranks during epoch 1" in err
            and "apsi launch: rank 0 exited with code 1; rank 1 exited with code 1" in err
            or "apsi launch: rank 0 exited with code 143; rank 1 exited with code 1" in err), err
    assert "Traceback (most recent call last):\n  File" not in err        # no Python traceback
    assert "GLHF" not in err and "RuntimeError" not in err


def test_launch_says_what_the_workers_need(tmp_path):
    (tmp_path / "p.apsi").write_text('print("hi")\n')
    command = [sys.executable, "-m", "apsi", "launch", "--nnodes", "2", "--allow-python", "p.apsi"]
    nodes = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                             cwd=tmp_path)
    out = run(["-m", "apsi", "launch", "--nproc", "2", "p.apsi"], tmp_path)      # (beside it: suite time)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hi\nhi\n"
    assert "needs permission 'python': add --allow-python" in out.stderr
    _, err = nodes.communicate(timeout=240)
    assert nodes.returncode == 2 and "--rdzv-endpoint" in err


def test_deny_env_keeps_what_the_ranks_need_to_meet(tmp_path):
    """--deny-env removes variables from the process (sandbox/confine.py), but not torchrun's: without
    them each worker trained alone (world 1) and wrote over the others' files."""
    folder = tmp_path / "two"
    folder.mkdir()
    shutil.copy(PROGRAM, folder)
    out = launch(folder, "--deny-env", "train.apsi", "20,5,sgd")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:2]) == ["rank 0 of 2 world 2", "rank 1 of 2 world 2"]


CONFINED = """use nn
use layers
save_params("only" + str(rank()) + ".npz", {w: zeros([2])})
print(rank(), world_size())
"""


def test_a_confined_program_knows_its_rank(tmp_path):
    """Without `python` each worker runs under the kernel's wall, whose environment cleaning keeps
    torchrun's variables: rank() is right and only rank 0 writes."""
    (tmp_path / "c.apsi").write_text(CONFINED)
    out = run(["-m", "apsi", "launch", "--nproc", "2", "c.apsi"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:2]) == ["0 2", "1 2"]
    assert (tmp_path / "only0.npz").exists() and not (tmp_path / "only1.npz").exists()


LONG = """use nn
use layers
let x = randn([400, 4], seed=1)
let y = randint(0, 3, [400], seed=2)
let net = mlp(4, 3, hidden=[8])
print("started", rank())
fn said(epoch, logs):
    if rank() == 0 and epoch == 1:
        print("inside fit")
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=100000, batch_size=4,
            backend="torch", distributed=true, verbose=false, on_epoch=said)
print("finished")
"""


def test_ctrl_c_on_the_launcher_stops_every_rank(tmp_path):
    import signal

    (tmp_path / "long.apsi").write_text(LONG)
    # a terminal's Ctrl-C reaches the whole foreground process group: the launcher and its workers
    command = [sys.executable, "-m", "apsi", "launch", "--nproc", "2", "--allow-python", "long.apsi"]
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         cwd=tmp_path, start_new_session=True)
    try:
        assert p.stdout.readline().startswith("started")
        # rank 0 ended an epoch: both ranks are inside fit (each step's gradients are averaged over both)
        while (line := p.stdout.readline()) != "inside fit\n":
            assert line, p.stderr.read()
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    assert "finished" not in out
    assert err.count("apsi: interrupted (Ctrl-C)") == 2
    assert err.rstrip().endswith("apsi launch: interrupted (Ctrl-C); every rank was stopped")
    assert "Traceback" not in err


def four_epochs_on_one_process(tmp_path):
    """4 epochs of resume.apsi on one process with batch_size 10, started now; the function returned
    checks that a resumed run printed the same history."""
    whole = start_one_process(tmp_path / "whole", PROGRAM.with_name("resume.apsi"), "10", "4", "new")

    def same_as(resumed):
        history = [float(v) for v in resumed.stdout.strip().strip("[]").split(",")]
        expected = [float(v) for v in whole().strip().strip("[]").split(",")]
        assert len(history) == 4
        np.testing.assert_allclose(history, expected, rtol=0, atol=1e-10)

    return same_as


def test_a_checkpoint_continues_on_another_number_of_processes(tmp_path):
    """2 epochs on one process with batch_size 10, resumed on two with 5 each to 4 epochs, equals 4 epochs
    on one process: the checkpoint records the global batch (10 both ways)."""
    same_as_four_epochs = four_epochs_on_one_process(tmp_path)
    shutil.copy(PROGRAM.with_name("resume.apsi"), tmp_path)
    first = run(["-m", "apsi", "run", "--allow-python", "resume.apsi", "10", "2", "new"], tmp_path)
    assert first.returncode == 0, first.stderr
    # the refused resume from a copy of the checkpoint, beside the one that continues (suite time)
    (tmp_path / "refused").mkdir()
    for name in ("resume.apsi", "run.ckpt"):
        shutil.copy(tmp_path / name, tmp_path / "refused")
    refused = subprocess.Popen([sys.executable, "-m", "apsi", "launch", "--nproc", "2", "--allow-python",
                                "resume.apsi", "10", "6", "resume"], cwd=tmp_path / "refused", env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    resumed = launch(tmp_path, "resume.apsi", "5", "4", "resume")
    assert resumed.returncode == 0, resumed.stderr
    same_as_four_epochs(resumed)
    _, err = refused.communicate(timeout=240)                              # 20 rows a step: another run
    assert refused.returncode == 1, err
    assert "the rows of one step (batch_size × processes) differs (checkpoint: 10, now: 20)" in err


def test_fsdp_checkpoints_and_resumes_as_one_process(tmp_path):
    """distributed="fsdp": the checkpoint holds whole weights and optimizer state (gathered from the
    ranks' slices); resuming cuts them again; with clip= (the norm over the slices) the run equals one
    process with the same global batch."""
    same_as_four_epochs = four_epochs_on_one_process(tmp_path)
    shutil.copy(PROGRAM.with_name("resume.apsi"), tmp_path)
    first = launch(tmp_path, "resume.apsi", "5", "2", "new", "fsdp")
    assert first.returncode == 0, first.stderr
    resumed = launch(tmp_path, "resume.apsi", "5", "4", "resume", "fsdp")
    assert resumed.returncode == 0, resumed.stderr
    same_as_four_epochs(resumed)


def test_a_rank_that_never_joins_is_a_timeout_naming_the_rendezvous(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    shutil.copy(PROGRAM, tmp_path)
    env = {**ENV, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "APSI_DIST_TIMEOUT": "2"}
    command = [sys.executable, "-m", "apsi", "run", "--allow-python", "train.apsi", "20,5,sgd"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 1
    assert (f"fit: rank 0 of 2 could not meet the other ranks at the rendezvous 127.0.0.1:{port} (gloo): "
            "Timed out") in out.stderr
    assert "check that every rank was started" in out.stderr


SHARDED_CHECKPOINT = """use nn
use layers
let x = randn([400, 4], seed=1)
let y = randint(0, 3, [400], seed=2)
let net = mlp(4, 3, hidden=[8])
fn said(epoch, logs):
    if rank() == 0 and epoch == 2:
        print("two epochs")
let r = fit(net, net.init(seed=0), x, y, loss="cross_entropy", epochs=100000, batch_size=4,
            backend="torch", distributed="fsdp", verbose=false, checkpoint="long.ckpt", on_epoch=said)
"""


def test_ctrl_c_during_a_sharded_fit_says_once_and_truly_where_to_resume(tmp_path):
    """Every rank used to say where to resume, and the ranks that do not write said that no epoch had
    finished and the checkpoint was not written, beside rank 0's word that it holds epoch N."""
    import re
    import signal

    (tmp_path / "long.apsi").write_text(SHARDED_CHECKPOINT)
    command = [sys.executable, "-m", "apsi", "launch", "--nproc", "2", "--allow-python", "long.apsi"]
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         cwd=tmp_path, start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "two epochs"
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    assert "was not written" not in err, err
    said = re.findall(r"fit: interrupted \(Ctrl-C\) during epoch (\d+); long.ckpt holds the run after epoch "
                      r"(\d+); continue with", err)
    assert len(said) == 1 and int(said[0][1]) >= 2, err
    assert (tmp_path / "long.ckpt").exists()



VERBOSE = """use nn
use layers
let x = randn([40, 4], seed=1)
let net = mlp(4, 3, hidden=[8])
fn said(epoch, logs):
    print(f"rank {rank()} saw epoch {epoch}")
let r = fit(net, net.init(seed=0), x, randn([40, 3], seed=3), loss="mse", epochs=2, batch_size=5,
            backend="torch", precision="fp64", distributed=true, verbose=true, on_epoch=said)
"""


def test_in_a_terminal_no_rank_erases_another(tmp_path):
    """issue 28: under `apsi launch` in a terminal, rank 0's live bar redrew itself over the lines the
    other rank printed (erasing them) and drew itself again; rank 0 writes plain lines there."""
    import select

    (tmp_path / "v.apsi").write_text(VERBOSE)
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "apsi", "launch", "--nproc", "2", "--allow-python",
                             "v.apsi"], cwd=tmp_path, stdin=slave, stdout=slave, stderr=slave,
                            env={**ENV, "TERM": "xterm", "COLUMNS": "100"})
    os.close(slave)
    shown = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 1)
            try:
                chunk = os.read(master, 65536) if ready else b""
            except OSError:
                break
            if ready and not chunk:
                break
            shown += chunk
            if not ready and proc.poll() is not None:
                break
        assert proc.wait(timeout=240) == 0, shown
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = shown.decode("utf-8", "replace")
    assert "\x1b[1A" not in text, text             # no redraw moved the cursor up over other lines
    assert [ln.split("  ")[0] for ln in text.splitlines() if ln.startswith("epoch")] == \
        ["epoch 1/2", "epoch 2/2"], text
    for rank in (0, 1):
        for epoch in (1, 2):
            assert f"rank {rank} saw epoch {epoch}" in text, text


def test_the_exit_code_is_the_failing_ranks_not_the_one_torchrun_stopped(capsys):
    """torchrun SIGTERMs the other ranks when one fails; whichever it sees first, `apsi launch` exits
    with the code of the rank that failed on its own (1: an Apsi error), not 143."""
    from types import SimpleNamespace

    from apsi_cli.launch_cmd import _report

    failed = SimpleNamespace(failures={0: SimpleNamespace(exitcode=143), 1: SimpleNamespace(exitcode=1)})
    assert _report(failed) == 1
    assert "rank 0 exited with code 143; rank 1 exited with code 1" in capsys.readouterr().err
    killed = SimpleNamespace(failures={0: SimpleNamespace(exitcode=-9), 1: SimpleNamespace(exitcode=-15)})
    assert _report(killed) == 1
    assert "rank 0 was killed by signal 9" in capsys.readouterr().err
    own = SimpleNamespace(failures={0: SimpleNamespace(exitcode=3), 1: SimpleNamespace(exitcode=143)})
    assert _report(own) == 3
