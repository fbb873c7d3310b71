"""The interactive prompt: multi-line input after ':' or open brackets, history, values shown."""

import os
import re
import sys
from pathlib import Path

from apsi_lang import program
from apsi_lang.errors import ApsiSyntaxError

_COMPOUND = re.compile(r"\s*(if|for|while|try)\b|\s*fn\s+[^\W\d]")
HISTORY = Path(os.environ.get("APSI_HISTORY", Path.home() / ".apsi_history"))


HELP = """\
Type Apsi code: an expression shows its value, a statement runs.
  let x = 1              declare a variable        fn f(a): …    a function (end a block with an empty line)
  print(x)               show a value              use nn        load a module (tensors, grad, optimizers)
Words the REPL knows: help (this text), exit or quit (leave; Ctrl-D too). help(NAME) shows what
NAME is, its options and an example: help(print), help(nn), help(fit), help(dense).
Ctrl-C abandons the current entry. The language: docs/language.md; permissions: docs/permissions.md."""
WORDS = {"help", "exit", "quit"}


def needs_more(text):
    """True while the input could still be completed by more lines: an open block, bracket or
    triple-quoted string. A syntax error that more lines cannot fix ends the entry at once."""
    lines = text.split("\n")
    try:
        program.Parser(text, "<repl>").parse_program()
    except ApsiSyntaxError as e:
        return e.incomplete
    # `try: x` and `if c: x` on one line may go on (catch/elif/else), as in Python's REPL
    opened_block = any(line.split("#")[0].rstrip().endswith(":") for line in lines) \
        or _COMPOUND.match(text)
    return bool(opened_block and lines[-1].strip())    # a block ends with an empty line


class Repl:
    def __init__(self):
        from apsi_lang import interactive

        interactive.set_active(True)        # fit returns a partial result on Ctrl-C here
        self.ns = program.new_namespace(str(Path.cwd()))
        self.count = 0
        self.readline = self._setup_history()

    def _setup_history(self):
        try:
            import readline
        except ImportError:
            return None
        try:
            readline.read_history_file(HISTORY)
        except OSError:
            pass
        try:
            # opened now: once the process is confined (apsi_cli/sandbox/confine.py) it could not be opened
            self.history_out = os.open(HISTORY, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            self.history_out = None
        readline.set_completer(self.complete)
        readline.parse_and_bind("tab: complete")
        return readline

    def names(self):
        """What Tab offers: the program's names, the builtins and the keywords."""
        from apsi_lang.builtins import BUILTINS
        from apsi_lang.lexer import KEYWORDS

        own = (n for n in self.ns if not n.startswith("_"))
        return sorted(set(own) | set(BUILTINS) | KEYWORDS)

    def complete(self, text, state):
        matches = [n for n in self.names() if n.startswith(text)]
        return matches[state] if state < len(matches) else None

    def _save_history(self):
        """One line per entry, the format readline's read_history_file reads."""
        if self.readline is None or self.history_out is None:
            return
        rl = self.readline
        lines = [rl.get_history_item(i) for i in range(1, rl.get_current_history_length() + 1)]
        data = "".join(line + "\n" for line in lines if line is not None).encode("utf-8", "replace")
        try:
            os.ftruncate(self.history_out, 0)
            os.pwrite(self.history_out, data, 0)
        except OSError:
            pass

    def read(self):
        """One complete input, or None at end of input."""
        lines = []
        while True:
            prompt = "... " if lines else ">>> "
            try:
                line = input(prompt) if sys.stdin.isatty() else self._read_plain(prompt)
            except EOFError:
                return "\n".join(lines) if lines else None
            lines.append(line)
            text = "\n".join(lines)
            if not needs_more(text):
                return text

    def _read_plain(self, prompt):
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def loop(self):
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("apsi")
        except PackageNotFoundError:
            v = "source"
        print(f"Apsi {v} — type an expression to see its value; help for help; exit or Ctrl-D to leave.")
        from .guard import guarded

        while True:
            try:
                text = self.read()
            except KeyboardInterrupt:
                print("\n(interrupted: Ctrl-D leaves)")
                continue
            if text is None:
                print()
                break
            if not text.strip():
                continue
            word = text.strip()
            if word in WORDS and word not in self.ns:
                if word == "help":
                    print(HELP)
                    continue
                break
            self.count += 1
            name = f"<repl:{self.count}>"
            leaving = []

            def run(t=text, n=name, leaving=leaving):
                try:
                    program.compile_source(t, n, self.ns, echo=True).run()
                except SystemExit:
                    leaving.append(True)          # exit(…) leaves the REPL with its code
                    raise

            code = guarded(run)
            from apsi_lang import bigstack

            bigstack.release_signals()       # an interrupted input held them (see bigstack._hold_signals)
            if leaving:
                self._save_history()
                return code
        self._save_history()
        return 0
