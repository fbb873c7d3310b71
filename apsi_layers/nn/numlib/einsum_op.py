"""einsum: the subscripts string is user input, so it is parsed and checked here, strictly, before
NumPy sees it. '...' is expanded into spare letters, so the op and its gradient rule only ever meet
plain letters (no ellipsis, no implicit output)."""

import numpy as np

from apsi_lang.errors import ApsiError

from ..autograd import foreign
from ..autograd.foreign import Foreign
from ..autograd.ops import apply
from ..autograd.shape import broadcast_to
from ..autograd.tensor import as_tensor
from .linalg_vjps import MAX_EINSUM_OPERANDS

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ALLOWED = set(LETTERS) | set(",->. ")


def parse(subscripts, shapes):
    """(inputs, output): one letter string per operand and the output's, ellipses expanded."""
    if not isinstance(subscripts, str):
        raise ApsiError(f"einsum: the first argument must be a subscripts string like \"ij,jk->ik\", "
                        f"not a {type(subscripts).__name__}")
    _check_characters(subscripts)
    if "." in subscripts.replace("...", ""):         # (before spaces go: ".. ." is no ellipsis)
        raise ApsiError(f"einsum: {subscripts!r}: a '.' may only appear as one '...' (three in a row, "
                        "for the remaining axes)")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1 or ("-" in text.replace("->", "")) or (">" in text.replace("->", "")):
        raise ApsiError(f"einsum: {subscripts!r} has a stray '-' or '>': write one '->' before the output")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ApsiError(f"einsum: {subscripts!r} names {len(terms)} operand(s) but {len(shapes)} "
                        "tensor(s) were given")
    for t in terms + [rhs]:
        _check_dots(subscripts, t)
    used = set(text) & set(LETTERS)
    spare = [c for c in LETTERS if c not in used]
    ell = _ellipsis_letters(subscripts, terms, shapes, spare)
    inputs = [t.replace("...", ell[-_ell_ndim(t, s):] if _ell_ndim(t, s) else "") for t, s in
              zip(terms, shapes, strict=True)]
    if arrow:
        if "..." in rhs and not any("..." in t for t in terms):
            raise ApsiError(f"einsum: {subscripts!r} has '...' in the output but in no operand")
        output = rhs.replace("...", ell)
    else:
        counts = {c: sum(s.count(c) for s in inputs) for c in set("".join(inputs))}
        output = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    _check_output(subscripts, inputs, output)
    _check_sizes(subscripts, inputs, shapes)
    return tuple(inputs), output


def _check_characters(subscripts):
    for i, c in enumerate(subscripts):
        if c not in _ALLOWED:
            raise ApsiError(f"einsum: character {c!r} at position {i} of {subscripts!r} is not allowed: "
                            "subscripts are letters a-z and A-Z (one per axis), commas between operands, "
                            "'->' before the output and '...' for the remaining axes")


def _check_dots(subscripts, term):
    if term.replace("...", "").count(".") or term.count("...") > 1:
        raise ApsiError(f"einsum: {term!r} in {subscripts!r}: a '.' may only appear as one '...' per "
                        "operand")


def _ell_ndim(term, shape):
    return len(shape) - (len(term) - 3) if "..." in term else 0


def _ellipsis_letters(subscripts, terms, shapes, spare):
    """The letters standing for '...': as many as the most axes any operand's '...' covers."""
    widest = 0
    for i, (t, shape) in enumerate(zip(terms, shapes, strict=True)):
        named = len(t) - 3 if "..." in t else len(t)
        if ("..." in t and len(shape) < named) or ("..." not in t and len(shape) != named):
            raise ApsiError(f"einsum: operand {i} has shape {tuple(shape)} ({len(shape)} axes) but "
                            f"{t!r} in {subscripts!r} names {named} axis letter(s)"
                            f"{' plus ...' if '...' in t else ''}")
        widest = max(widest, _ell_ndim(t, shape))
    if widest > len(spare):
        raise ApsiError(f"einsum: {subscripts!r} needs more than 52 distinct axes")
    return "".join(spare[:widest])


def _check_output(subscripts, inputs, output):
    for c in output:
        if output.count(c) > 1:
            raise ApsiError(f"einsum: the output of {subscripts!r} names {c!r} twice; each output "
                            "letter appears once")
        if not any(c in s for s in inputs):
            raise ApsiError(f"einsum: the output letter {c!r} of {subscripts!r} is in no operand")


def _check_sizes(subscripts, inputs, shapes):
    sizes = {}
    for i, (term, shape) in enumerate(zip(inputs, shapes, strict=True)):
        for c, n in zip(term, shape, strict=True):
            if sizes.setdefault(c, (n, i))[0] != n:
                n0, i0 = sizes[c]
                what = f"letter {c!r}" if c in subscripts else "an axis under '...'"
                raise ApsiError(f"einsum: {what} in {subscripts!r} has size {n0} in operand {i0} "
                                f"but {n} in operand {i}; the sizes of one letter must be equal "
                                "(broadcast_to first to repeat a tensor)")


def ellipsis_shapes(subscripts, shapes):
    """The operands' shapes with their '...' axes broadcast against each other, NumPy's rule (right
    aligned; a size-1 axis stretches). Shapes are returned unchanged when there is nothing to
    broadcast or the subscripts are malformed (parse then says what is wrong)."""
    if not isinstance(subscripts, str):
        return list(shapes)
    terms = subscripts.replace(" ", "").partition("->")[0].split(",")
    if len(terms) != len(shapes) or not all(_ell_fits(t, s) for t, s in zip(terms, shapes, strict=True)):
        return list(shapes)
    spans = [_ell_span(t, s) for t, s in zip(terms, shapes, strict=True)]
    parts = [tuple(s[a:b]) for s, (a, b) in zip(shapes, spans, strict=True)]
    try:
        wide = np.broadcast_shapes(*parts)
    except ValueError:
        raise ApsiError(f"einsum: the axes under '...' in {subscripts!r} have shapes "
                        f"{', '.join(str(p) for p in parts)}, which do not broadcast (NumPy's rule: "
                        "right-aligned, each size equal or 1)") from None
    out = []
    for s, p, (a, b) in zip(shapes, parts, spans, strict=True):
        out.append(tuple(s[:a]) + tuple(wide[len(wide) - len(p):]) + tuple(s[b:]) if p else tuple(s))
    return out


def _ell_fits(term, shape):
    return term.count("...") <= 1 and len(shape) >= len(term) - 3 * term.count("...")


def _ell_span(term, shape):
    """Where the '...' axes sit in shape: [start, stop)."""
    if "..." not in term:
        return 0, 0
    start = term.index("...")
    return start, start + _ell_ndim(term, shape)


def expanded(inputs, output):
    return ",".join(inputs) + "->" + output


def einsum(subscripts, *operands):
    """Einstein summation as NumPy's einsum: einsum("ij,jk->ik", a, b); differentiable in every
    operand."""
    if not operands:
        raise ApsiError("einsum: give the subscripts and at least one tensor, e.g. einsum(\"ii\", a)")
    if len(operands) > MAX_EINSUM_OPERANDS:
        raise ApsiError(f"einsum: at most {MAX_EINSUM_OPERANDS} operands, got {len(operands)}")
    try:
        ts = tuple(as_tensor(x, "einsum", f"operands[{i}]") for i, x in enumerate(operands))
    except Foreign:
        return foreign.call("einsum", subscripts, *operands)
    wide = ellipsis_shapes(subscripts, [t.shape for t in ts])
    ts = tuple(t if t.shape == w else broadcast_to(t, w) for t, w in zip(ts, wide, strict=True))
    inputs, output = parse(subscripts, [t.shape for t in ts])
    spec = expanded(inputs, output)
    opt = len(ts) > 2
    return apply("einsum", lambda *ds, inputs, output: np.einsum(spec, *ds, optimize=opt), ts,
                 {"inputs": inputs, "output": output})
