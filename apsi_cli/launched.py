"""What a rank started by `apsi launch` does first: end when the launcher ends, however it ends.

torchrun starts each rank in a session of its own (so that it can stop a rank with everything the rank
started, its process group); a terminal's Ctrl-C or a CI runner killing the launcher's process group
therefore never reaches the ranks, and when the launcher was killed outright (kill -9, the OOM killer)
they went on training, and writing checkpoints, with nobody waiting for them. The launcher names
itself in LAUNCHER_PID; the rank asks Linux for SIGTERM when it goes (PR_SET_PDEATHSIG), which stops
the rank as any SIGTERM does (its cleanups run, exit 143), and leaves at once if it has already gone.
"""

import os

LAUNCHER_PID = "APSI_LAUNCHER_PID"      # set by `apsi launch` for the ranks it starts


def die_with_launcher():
    """SIGTERM when the launcher that started this process ends; nothing when no launcher started it."""
    launcher = os.environ.pop(LAUNCHER_PID, "")      # (not passed on: the rank's children have other parents)
    if not launcher.isdigit():
        return
    import ctypes

    from apsi_layers.forked import die_with

    die_with(int(launcher), ctypes)
