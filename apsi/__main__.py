"""`python -m apsi`. Python put the current folder first on sys.path; a program can write files there,
so nothing is imported from it (a planted `apsi_lang.py` or distribution would run instead: issue 15),
unless it is the folder this package itself came from (a source checkout run in place)."""

import os
import sys


def _drop_current_folder():
    here = os.path.realpath(os.getcwd())
    home = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    sys.path[:] = [p for p in sys.path
                   if os.path.realpath(p or ".") != here or here == home]


_drop_current_folder()

from apsi_cli.launched import die_with_launcher  # noqa: E402
from apsi_cli.main import main  # noqa: E402

if __name__ == "__main__":
    die_with_launcher()     # a rank of `apsi launch` or torchrun ends when its launcher does
    main(prog_name="apsi")
