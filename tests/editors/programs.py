"""Apsi programs of any length for the editor tests: each block different (its own names), as a real
file's statements are, so no check can answer one block from another's result."""


def block(i):
    return f'''fn score_{i}(xs, k={i}):
    let total = 0
    for x in xs:
        if x > k:
            total += x * {i}
        else:
            total -= 1
    return total

let data_{i} = [j * {i % 7} for j in range({i % 13 + 3})]
let rec_{i} = {{name: "r{i}", value: score_{i}(data_{i}), tags: ["a", "b"]}}
print(f"{{rec_{i}.name}}: {{rec_{i}.value}}")
'''


def program(lines):
    """A valid program of at least `lines` lines."""
    out, i = [], 0
    while sum(b.count("\n") for b in out) < lines:
        out.append(block(i))
        i += 1
    return "".join(out)
