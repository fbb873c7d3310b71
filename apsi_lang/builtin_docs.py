"""The documentation of Apsi's builtins (doc_source.py): the table docs/language.md shows."""

from .doc_table import Source, Table

TABLES = (
    Table('docs/language.md', 'builtin', None,
          ('function', 'what it does'),
          (
              ('`print(*values, sep=" ", end="\\n", file="stdout")`', 'writes values; `file="stderr"` to the error stream'),
              ('`eprint(*values, sep=" ", end="\\n")`', 'print to stderr'),
              ('`len`, `range`, `enumerate`, `zip`', 'as in Python'),
              ('`str`, `repr`, `int`, `float`, `bool`, `list`, `tuple`', 'conversions (`str(true)` is `"true"`)'),
              ('`abs`, `min`, `max`, `sum`, `round`, `divmod`, `pow`', 'numbers (`use nn` makes them work on tensors too)'),
              ('`sorted(xs, key=…, reverse=…)`, `reversed(xs)`', 'reversed gives a list'),
              ('`map(f, xs)`, `filter(f, xs)`', 'give lists'),
              ('`any`, `all`, `chr`, `ord`', 'as in Python'),
              ('`type(x)`', 'the type\'s name: `"int"`, `"float"`, `"str"`, `"bool"`, `"none"`, `"list"`, `"record"`, `"function"`, …'),
              ('`fields(r)`, `get(r, name, default)`, `has(r, name)`', 'records by computed field names'),
              ('`error(message)`', 'raises an Apsi error'),
              ('`input(prompt)`', 'a line of input; `none` at the end of input'),
              ('`exit(code)`, `exit("message")`', 'stop with that code; a message goes to stderr and the code is 1'),
              ('`sqrt exp log log2 log10 sin cos tan asin acos atan atan2 hypot`', "Python's math functions on numbers (`log(x, base)`); `use nn` replaces `exp log sqrt sin cos` with its tensor versions"),
              ('`floor ceil trunc`', 'to an int'),
              ('`pi inf nan`, `isnan isinf isfinite`, `gcd`', ''),
              ('`set(xs)`', 'a set'),
              ('`clock()`', 'seconds from an arbitrary start, for timing: `let t = clock()` … `clock() - t`'),
              ('`args`', "the program's command-line arguments (a list of strings)"),
              ('`read_text(path)`, `write_text(path, text)`, `exists(path)`', 'files; outside the project folder need `read`/`write`; inside it, writing needs `write` except for data files (`.csv`, `.json`, `.txt`, `.npz`, …: docs/permissions.md); writes are atomic'),
              ('`append_text(path, text)`', 'adds at the end (creates the file)'),
              ('`read_json(path)`, `write_json(path, value, indent=2)`', 'JSON: objects are maps, arrays lists, null none; records write as objects'),
              ('`read_csv(path, header=true, sep=",", numbers=true, as="rows")`', 'rows: records named by the header line (or lists with `header=false`); `as="columns"`: one list per column instead (a record of them, or a list). A column whose cells are all numbers holds numbers (see [CSV files](#csv-files)). With `use nn`, `load_csv(path, …)` gives tensors'),
              ('`list_dir(path=".")`, `make_dir(path)`, `delete(path)`', 'folder names (sorted); create a folder and its parents; delete a file or an empty folder'),
              ('`getenv(name, default)`', 'needs `env` (or `--allow-env=NAME`)'),
              ('`run_command(["cmd", "arg"])`', 'needs `run` (or `--allow-run=cmd`); gives `{code, stdout, stderr}`'),
              ('`fetch_text(url)`', 'needs `net` (or `--allow-net=host`)'),
              ('`pyimport("name")`', 'needs `python`: a Python module, fully usable'),
              ('`help(name)`', 'what `name` is (a builtin, a module such as `nn`, a function such as `fit`): its signature, a paragraph, its options with their defaults and an example; `apsi doc NAME` shows the same from a shell'),
          )),
)

EXAMPLES = {
    "print": 'print("loss", 0.25, sep=" = ")\nprint("to the error stream", file="stderr")',
    "help": "help(print)\nhelp(nn)",
}

SOURCE = Source("", "Apsi's builtins: every program sees them (docs/language.md).", TABLES, EXAMPLES)
