"""Golden tests: every tests/lang/NAME.apsi runs through the real CLI and must print exactly NAME.expect.

A case may start with directive lines:
    #: cmd: apsi --allow-env {file} one two     how to run it (default `apsi {file}`); shlex-split
    #: env: APSI_DEBUG=1                        extra environment variables
    #: module                                   not a case: a support file (`use helpers` loads it)

NAME.expect holds the exit code, stdout and stderr:
    == exit 0
    == stdout
    ...
    == stderr
    ...
A section whose text has no final newline is marked `== stdout (no final newline)`.

Each run happens in a temporary copy of tests/lang (so file names in messages are the bare NAME.apsi),
with a file `outside.txt` in the folder above it (outside the project folder). Absolute paths of that
copy are written as $DIR, the Python executable as $PYTHON.

Regenerate expectations with `python tests/test_golden.py --update [NAME...]` and review every diff by
hand: an expectation says what is right, not whatever the code happens to print.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

LANG = Path(__file__).parent / "lang"
ROOT = Path(__file__).parent.parent
TIMEOUT = 60


def directives(path):
    out = {"cmd": "apsi {file}", "env": {}, "module": False}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.startswith("#:"):
            break
        body = line[2:].strip()
        if body == "module":
            out["module"] = True
        elif body.startswith("cmd:"):
            out["cmd"] = body[4:].strip()
        elif body.startswith("env:"):
            key, _, value = body[4:].strip().partition("=")
            out["env"][key] = value
        else:
            raise ValueError(f"{path.name}: unknown directive {line!r}")
    return out


def cases():
    return sorted(p.stem for p in LANG.glob("*.apsi") if not directives(p)["module"])


def make_sandbox():
    """A temporary copy of tests/lang (the project folder) with outside.txt above it."""
    top = Path(tempfile.mkdtemp(prefix="apsi-golden-"))
    (top / "outside.txt").write_text("outside the project\n", encoding="utf-8")
    shutil.copytree(LANG, top / "lang")
    return top / "lang"


def run_case(name, folder):
    d = directives(LANG / f"{name}.apsi")
    argv = [a.replace("{file}", f"{name}.apsi") for a in shlex.split(d["cmd"])]
    assert argv[0] == "apsi", f"{name}: cmd must start with 'apsi'"
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_") and k != "PYTHONPATH"}
    env.update(d["env"])
    env["PYTHONPATH"] = str(ROOT)
    env["APSI_HISTORY"] = str(folder / ".history")
    env["NO_COLOR"] = "1"
    p = subprocess.run([sys.executable, "-m", "apsi", *argv[1:]], cwd=folder, env=env,
                       capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    return p.returncode, normalize(p.stdout, folder), normalize(p.stderr, folder)


def normalize(text, folder):
    for d in {str(folder.parent.resolve()), str(folder.parent)}:
        text = text.replace(d + "/lang", "$DIR").replace(d, "$DIR/..")
    text = re.sub(r"\(installed: [^)]*\)", "(installed: $MODULES)", text)
    return text.replace(sys.executable, "$PYTHON")


def render(code, out, err):
    parts = [f"== exit {code}\n"]
    for label, text in (("stdout", out), ("stderr", err)):
        if text and not text.endswith("\n"):
            parts.append(f"== {label} (no final newline)\n{text}\n")
        else:
            parts.append(f"== {label}\n{text}")
    return "".join(parts)


def parse_expect(text):
    sections, label, buf = {}, None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("== "):
            if label is not None:
                sections[label] = "".join(buf)
            label, buf = line[3:].strip(), []
        else:
            buf.append(line)
    if label is not None:
        sections[label] = "".join(buf)
    code = next(int(k.split()[1]) for k in sections if k.startswith("exit "))
    out = {}
    for k, v in sections.items():
        if k.endswith("(no final newline)"):
            out[k.split()[0]] = v[:-1]
        elif not k.startswith("exit"):
            out[k] = v
    return code, out.get("stdout", ""), out.get("stderr", "")


@pytest.fixture(scope="session")
def golden_results():
    folder = make_sandbox()
    try:
        with ThreadPoolExecutor(max_workers=max(2, min(8, (os.cpu_count() or 2) * 2))) as pool:
            futures = {name: pool.submit(run_case, name, folder) for name in cases()}
            yield {name: f.result() for name, f in futures.items()}
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)


@pytest.mark.parametrize("name", cases())
def test_golden(name, golden_results):
    expect_file = LANG / f"{name}.expect"
    assert expect_file.exists(), f"no {expect_file.name}: run python tests/test_golden.py --update {name}"
    code, out, err = golden_results[name]
    want_code, want_out, want_err = parse_expect(expect_file.read_text(encoding="utf-8"))
    assert (out, err, code) == (want_out, want_err, want_code)
    assert "Traceback (most recent call last):\n  File" not in err or "APSI_DEBUG" in \
        (LANG / f"{name}.apsi").read_text(encoding="utf-8"), "a Python traceback reached the user"


def test_every_expectation_has_a_case():
    stray = [p.name for p in LANG.glob("*.expect") if not (LANG / f"{p.stem}.apsi").exists()]
    assert not stray


def main(argv):
    if not argv or argv[0] != "--update":
        print(__doc__)
        return 2
    names = argv[1:] or cases()
    folder = make_sandbox()
    try:
        for name in names:
            result = render(*run_case(name, folder))
            path = LANG / f"{name}.expect"
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != result:
                path.write_text(result, encoding="utf-8")
                print(f"{'updated' if old else 'created'} {path.relative_to(ROOT)}")
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
