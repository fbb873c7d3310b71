"""The errors an Apsi program or the apsi command can meet.

Every error a user sees is an ApsiError (or a subclass): its `message` says what happened and what to
do. The runner adds where (Apsi file:line) from the traceback, so raisers only need the message.
"""


class ApsiError(Exception):
    """A runtime error visible to Apsi code (`catch e:` gives one; `e.message` is its text)."""

    # Python packages that raise ApsiError from inside Apsi calls get the same treatment as `error()`.
    __apsi_attrs__ = frozenset({"message", "kind"})
    __apsi_type__ = "error"          # what `type(e)` says

    def __init__(self, message, kind="error"):
        from .py_text import no_address

        message = no_address(str(message))
        super().__init__(message)
        self.message = message
        self.kind = kind

    def __str__(self):
        return self.message


class PermissionDenied(ApsiError):
    """An operation needs a permission the program was not given."""

    def __init__(self, message, permission):
        super().__init__(message, kind="permission")
        self.permission = permission


class ApsiSyntaxError(Exception):
    """A compile-time error: the program does not run at all (exit code 2)."""

    def __init__(self, message, filename="<input>", line=1, col=1, source_line=None):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        self.used_by = []       # (file, line, module) of the `use` lines that led to this file
        # the source stops in the middle of something (an open bracket, block or triple-quoted
        # string): more lines could complete it, so the REPL waits for them
        self.incomplete = False

    def render(self):
        """`file:line:col: message`, the source line and a caret under the column."""
        out = f"{self.filename}:{self.line}:{self.col}: {self.message}"
        if self.source_line is not None:
            from .excerpt import caret_lines

            text, pad = caret_lines(self.source_line.rstrip("\n"), self.col - 1)
            out += f"\n    {text}\n    {pad}^"
        for filename, line, module in self.used_by:
            out += f"\n  in module '{module}', used at {filename}:{line}"
        return out

    def __str__(self):
        return self.render()


class ConfigError(Exception):
    """apsi.toml is malformed or has a bad value; names the file and the key."""
