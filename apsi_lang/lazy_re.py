"""Pattern(...): a regex compiled when first used. Messages and help need a few dozen patterns that
`apsi -e "print(1)"` never uses; compiling them at import cost about a tenth of its own instructions
(issue 36). tests/test_startup_imports.py checks that start-up compiles none."""

import re


class Pattern:
    __slots__ = ("args", "compiled")

    def __init__(self, *args):
        self.args, self.compiled = args, None

    def __getattr__(self, name):            # fullmatch, sub, …: those of the compiled pattern
        if self.compiled is None:
            self.compiled = re.compile(*self.args)
        return getattr(self.compiled, name)
