"""A path argument checked, and an OSError on it said in Apsi's words: shared by the data functions
(data_files.py) and read_csv (csv_read.py)."""

import os

from .errors import ApsiError
from .values import a_type, show


def path_arg(fn, path):
    """A path argument: a non-empty string."""
    if type(path) is not str or not path:
        raise ApsiError(f"{fn}(path): path must be a non-empty string, got {a_type(path)}")
    return path


def os_error(fn, path, e):
    """The ApsiError saying what an OSError means for `fn`(path), and what to do."""
    if isinstance(e, FileNotFoundError):
        folder = os.path.dirname(path)
        if folder and not os.path.isdir(folder):
            return ApsiError(f"{fn}({show(path, True)}): the folder {show(folder, True)} does not "
                             "exist; create it first with make_dir")
        thing = "folder" if fn == "list_dir" else "file"
        return ApsiError(f"{fn}({show(path, True)}): there is no such {thing}")
    if isinstance(e, IsADirectoryError):
        return ApsiError(f"{fn}({show(path, True)}): that is a folder, not a file")
    return ApsiError(f"{fn}({show(path, True)}): {e.strerror or e}")
