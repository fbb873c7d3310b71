"""A test's view of the processes a program started (Linux's /proc): its children, and whether one
still runs. Used to prove that no worker, reader or rank outlives what started it."""

from pathlib import Path


def children(pid):
    """The pids whose parent is `pid` now."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def running(pid):
    """Alive and not a zombie (a dead process whose parent is gone waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
