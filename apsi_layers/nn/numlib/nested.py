"""Where a nested list stops being a tensor's worth of numbers, in words: shared by array() and by
fit's, predict's and serve_model's input checks."""

from apsi_lang.values import show


def list_problem(value, arg, depth=64):
    """Where a nested list stops being numbers of equal lengths, in words (None when not found): a
    client of serve_model sending [["a", 2]] must learn which entry, not just 'ragged'; a program
    whose list has gaps (none) learns the first one."""
    def at(path):
        return f"{arg}[{', '.join(map(str, path))}]"

    def shape_of(x):
        return len(x) if isinstance(x, list | tuple) else None

    def kind(x):
        return "a number" if shape_of(x) is None else f"a list of {len(x)}"

    def walk(v, path):
        if isinstance(v, list | tuple):
            if len(path) >= depth:
                return f"{arg} is lists nested more than {depth} deep (tensors have at most {depth} axes)"
            odd = next((i for i, x in enumerate(v) if shape_of(x) != shape_of(v[0])), None)
            if odd is not None:
                return f"{at(path + [odd])} is {kind(v[odd])} but {at(path + [0])} is {kind(v[0])}"
            return next((f for i, x in enumerate(v) if (f := walk(x, path + [i]))), None)
        if type(v) is int and abs(v) > 2 ** 1023:
            return f"{at(path)} is {show(v)[:20]}… ({len(show(v))} digits), too large for a float"
        if type(v) in (int, float, bool):
            return None
        return f"{at(path)} is {show(v, True)[:60]}, not a number"
    return walk(value, [])
