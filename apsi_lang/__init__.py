"""The Apsi language: source -> tokens -> syntax tree -> Python AST -> code object.

This package knows nothing of NumPy or torch. Public API:

    run_source(text, filename="<input>", args=(), grants=None, echo=False) -> namespace dict
    compile_source(text, filename) -> a Program (code object + the names it defines)
    ApsiError, ApsiSyntaxError, PermissionDenied
    permissions.require(name, what=...), permissions.allowed(name)
"""

from .errors import ApsiError, ApsiSyntaxError, PermissionDenied  # noqa: F401
from .values import Record  # noqa: F401


def run_source(text, filename="<input>", args=(), grants=None, echo=False):
    from .program import run_source as _run

    return _run(text, filename=filename, args=args, grants=grants, echo=echo)


def compile_source(text, filename="<input>"):
    from .program import compile_source as _compile

    return _compile(text, filename)
