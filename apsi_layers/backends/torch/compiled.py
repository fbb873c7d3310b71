"""compile=true: the forward pass through torch.compile, and eager mode when that fails.

torch.compile fails late: the call that wraps a function succeeds, and the compiler (Inductor needs
a C++ toolchain on the CPU, Triton on GPUs) runs at the first call. So the first call is tried, and
any failure there that is not an error of the program itself prints the note
`torch.compile failed (...); continuing eagerly` and runs the same function eagerly from then on.

Dynamo keeps its compiled versions on the function's code object, and after a few (its recompile
limit, 8) it stops compiling that code and logs raw warnings. Every fit's objective is the same
nested function, so the ninth model in one process ran uncompiled. Each Forward therefore compiles
its own copy of the code object: one compiled function per fit, whatever ran before.
"""

import itertools
import sys
import types

from apsi_lang.errors import ApsiError


def failure_note(error):
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    detail = f"{type(error).__name__}: {first}" if first else type(error).__name__
    if len(detail) > 200:
        detail = detail[:197] + "..."
    return f"torch.compile failed ({detail}); continuing eagerly"


def note(text):
    from apsi_layers import distributed

    if distributed.rank() == 0:         # one note for a launch, not one per rank
        print(text, file=sys.stderr, flush=True)


COMPILING = ("note: compiling the model with torch.compile; the first steps wait for it "
             "(on the CPU this can take minutes)")
_serial = itertools.count(1)


def own_code(fn):
    """fn (a function or a bound method) with a code object of its own (same body, closure and
    globals), so Dynamo's cache for it starts empty."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(own_code(fn.__func__), fn.__self__)
    name = f"{fn.__name__}_{next(_serial)}"
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    return types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)


class Forward:
    """`fn` compiled (when asked) with the eager fallback; call it like fn."""

    def __init__(self, torch, fn, compile=False, on_note=note):
        self.fn = fn
        self.compiled = None
        self.proven = False          # the compiled version has run once
        self.on_note = on_note
        self.note = None             # the fallback note, when there was one
        if compile:
            from .ops import ready_for_compile

            ready_for_compile()
            try:
                self.compiled = torch.compile(own_code(fn), dynamic=False)
            except Exception as e:   # no compiler at all (e.g. an unsupported Python or platform)
                self._fall_back(e)

    @property
    def active(self):
        return self.compiled is not None

    def _fall_back(self, error):
        self.compiled = None
        self.note = failure_note(error)
        self.on_note(self.note)

    def __call__(self, *args):
        if self.compiled is None:
            return self.fn(*args)
        if self.proven:
            return self.compiled(*args)
        self.on_note(COMPILING)
        try:
            out = self.compiled(*args)
        except ApsiError:            # the program's own error: not the compiler's fault
            raise
        except Exception as e:
            self._fall_back(e)
            return self.fn(*args)
        self.proven = True
        return out
