"""What a rank started by `apsi launch` or torchrun does first: end when the launcher ends, however.

torchrun starts each rank in a session of its own (so that it can stop a rank with everything the rank
started, its process group); a terminal's Ctrl-C or a CI runner killing the launcher's process group
therefore never reaches the ranks, and when the launcher was killed outright (kill -9, the OOM killer)
they went on training, and writing checkpoints, with nobody waiting for them. So the rank asks Linux for
SIGTERM when its parent goes (PR_SET_PDEATHSIG), which stops it as any SIGTERM does (its cleanups run,
exit 143), and leaves at once if the parent has gone already. `apsi launch` names itself in
LAUNCHER_PID, so that a launcher gone before that question is always seen; under plain torchrun
(TORCHELASTIC_RUN_ID, no pid) the parent this process starts with is taken, which misses only an
agent that died in the instant between starting the rank and this check.
"""

import os

LAUNCHER_PID = "APSI_LAUNCHER_PID"      # set by `apsi launch` for the ranks it starts
AGENT_RUN = "TORCHELASTIC_RUN_ID"       # set by torchrun's agent for the workers it starts


def die_with_launcher():
    """SIGTERM when the launcher that started this process ends; nothing when none started it."""
    launcher = os.environ.pop(LAUNCHER_PID, "")      # (not passed on: the rank's children have other parents)
    if launcher.isdigit():
        parent = int(launcher)
    elif os.environ.get(AGENT_RUN):
        parent = os.getppid()
    else:
        return
    import ctypes

    from apsi_layers.forked import die_with

    die_with(parent, ctypes)
