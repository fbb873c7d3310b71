"""A new user's first hour: the mistakes they make on the command line and in apsi.toml, and what
`apsi` answers. Each message says what happened, where, and what to do, without a Python traceback."""

import os
import subprocess
import sys

APSI = [sys.executable, "-m", "apsi"]


def run(args, cwd, stdin=None):
    env = {k: v for k, v in os.environ.items() if k != "APSI_DEBUG"}
    return subprocess.run(APSI + args, cwd=cwd, input=stdin, capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_misspelt_command_is_named(tmp_path):
    for typed, meant in (("doctr", "doctor"), ("rn", "run"), ("check-torh", "check-torch")):
        r = run([typed], tmp_path)
        assert r.returncode == 2 and r.stdout == ""
        assert f"cannot run '{typed}': it does not exist (did you mean the command `apsi {meant}`?)" \
            in r.stderr


def test_a_program_named_without_apsi_or_misspelt_is_named(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.apsi").write_text('print("ok")\n')
    r = run(["src/train"], tmp_path)
    assert r.returncode == 2 and "(did you mean src/train.apsi?)" in r.stderr
    r = run(["src/trian.apsi"], tmp_path)
    assert r.returncode == 2 and "(did you mean src/train.apsi?)" in r.stderr
    r = run(["src/unrelated.apsi"], tmp_path)         # nothing alike: no guess
    assert r.returncode == 2 and "did you mean" not in r.stderr


def test_check_of_a_missing_file_shows_checks_usage(tmp_path):
    r = run(["check", "gone.apsi"], tmp_path)
    assert r.returncode == 2
    assert "cannot check 'gone.apsi': it does not exist. Usage: apsi check FILE.apsi..." in r.stderr


def test_a_permission_flag_after_the_program_is_explained(tmp_path):
    (tmp_path / "py.apsi").write_text('print(args)\nlet m = pyimport("math")\n')
    r = run(["py.apsi", "--allow-python", "--allow-net=x.org"], tmp_path)
    assert r.returncode == 1
    assert r.stdout == '["--allow-python", "--allow-net=x.org"]\n'      # still the program's arguments
    assert ("apsi: --allow-python came after py.apsi, so the program got it as an argument (in `args`), "
            "not as a permission: put permission flags before the program: apsi --allow-python py.apsi"
            in r.stderr)
    assert "--allow-net=x.org came" not in r.stderr                      # not the refused permission
    r = run(["-e", 'pyimport("math")', "-A"], tmp_path)
    assert r.returncode == 1 and "apsi: -A came after -e CODE" in r.stderr
    r = run(["py.apsi", "--allow-net"], tmp_path)                        # another permission: no note
    assert r.returncode == 1 and "came after" not in r.stderr


def _caret_pair(stderr):
    """The first source line shown and the caret line under it."""
    lines = stderr.splitlines()
    return next((a, b) for a, b in zip(lines, lines[1:], strict=False) if b.strip() == "^")


def test_a_long_line_is_cut_around_the_error(tmp_path):
    (tmp_path / "long.apsi").write_text('let s = "' + "a" * 100_000 + '" + 1\n')
    r = run(["long.apsi"], tmp_path)
    assert r.returncode == 1 and "long.apsi:1:100012: error: cannot add an int to a str" in r.stderr
    assert len(r.stderr) < 2_000                  # was the whole line, twice
    shown, caret = _caret_pair(r.stderr)
    assert shown.startswith("    …aaa") and shown[caret.index("^")] == "+"
    # a syntax error at the end of a long last line (no newline after it)
    (tmp_path / "last.apsi").write_text("print(1)\nlet x = " + "1 + " * 30_000 + ")")
    r = run(["last.apsi"], tmp_path)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr) < 1_000
    shown, caret = _caret_pair(r.stderr)
    assert shown.endswith("1 + 1 + )") and shown[caret.index("^")] == ")"


def test_the_caret_stands_under_the_error_after_wide_characters(tmp_path):
    r = run(["-e", 'print("日本語" + 1)'], tmp_path)
    assert r.returncode == 1
    # print(" is 7 cells, 日本語 6 (each two wide), then '" ' 2: the '+' is in cell 15
    assert _caret_pair(r.stderr) == ('    print("日本語" + 1)', "    " + " " * 15 + "^")
    r = run(["-e", 'let s = "🎉" + ¿'], tmp_path)
    assert r.returncode == 2
    # let s = " is 9 cells, 🎉 2, '" + ' 4: the ¿ is in cell 15
    assert _caret_pair(r.stderr) == ('    let s = "🎉" + ¿', "    " + " " * 15 + "^")


def _toml_message(tmp_path, text):
    """What `apsi -e` run from a subfolder says about this apsi.toml (bytes or text)."""
    data = text if isinstance(text, bytes) else text.encode()
    (tmp_path / "apsi.toml").write_bytes(data)
    (tmp_path / "sub").mkdir(exist_ok=True)
    r = run(["-e", "print(1)"], tmp_path / "sub")
    assert "Traceback" not in r.stderr
    return r.returncode, r.stderr.replace(f"{tmp_path / 'apsi.toml'}: ", "")


def test_apsi_toml_mistakes_say_where_and_what_to_write(tmp_path):
    # a key above any [section] line was called an unknown section
    assert _toml_message(tmp_path, 'allow = ["python"]\n') == (0, (
        "apsi: warning: 'allow' stands before any [section] line, so it is ignored: put a line [run] "
        "above it\n"))
    assert _toml_message(tmp_path, 'bogus = 1\n') == (
        0, "apsi: warning: unknown key 'bogus' ignored: keys go under [run] or [pkg]\n")
    code, said = _toml_message(tmp_path, '[run]\nalow = ["python"]\n')
    assert code == 0 and "unknown key run.alow ignored (did you mean allow?) (known: allow," in said
    code, said = _toml_message(tmp_path, '[rnu]\n')
    assert code == 0 and "unknown section [rnu] ignored (did you mean run?) (known: run, pkg)" in said
    # each list's example is of its own kind (read's was ["python"])
    for key, example in (("read", '["../data"]'), ("deny_write", '["out"]'), ("env", '["HOME"]'),
                         ("net", '["example.com", "localhost:8080"]')):
        assert _toml_message(tmp_path, f'[run]\n{key} = "x"\n') == (
            2, f"apsi: error in apsi.toml: run.{key} must be a list of strings, like {example}\n")
    assert _toml_message(tmp_path, "\ufeff[run]\n".encode("utf-16")) == (2, (
        "apsi: error in apsi.toml: not UTF-8 text (it is UTF-16, as some Windows editors save "
        "'Unicode'): save it as UTF-8\n"))


def test_a_net_grant_must_be_a_host(tmp_path):
    # a URL or a port that is no number granted nothing the program asked for, and every port to the
    # kernel wall; now refused, with what to write
    cases = [
        ("--allow-net=https://example.com/data",
         "'https://example.com/data' is a URL, not a host: write example.com (a host, or host:port)"),
        ("--allow-net=x.org,localhost:http",
         "'localhost:http': the port 'http' is not a number from 1 to 65535 (write localhost:8080, or "
         "localhost for every port)"),
        ("--deny-net=:8000", "':8000' has no host before its port: write localhost:8000 or 127.0.0.1:8000")]
    for flag, said in cases:
        r = run([flag, "-e", 'print("ran")'], tmp_path)
        assert (r.returncode, r.stdout) == (2, "")
        assert r.stderr == f"apsi: {flag.split('=')[0]}: {said}\n"
    r = run(["--allow-net=127.0.0.1:8000,example.com,[::1]:80", "-e", 'print("ran")'], tmp_path)
    assert (r.returncode, r.stdout) == (0, "ran\n")
    code, said = _toml_message(tmp_path, '[run]\nnet = ["http://localhost:8000/"]\n')
    assert (code, said) == (2, "apsi: error in apsi.toml: run.net: 'http://localhost:8000/' is a URL, not a "
                               "host: write localhost:8000 (a host, or host:port)\n")


def test_apsi_doc_of_a_misspelt_name_names_the_one_meant(tmp_path):
    r = run(["doc", "fitt"], tmp_path)
    assert r.returncode == 1
    assert r.stdout.startswith("help: no documentation for 'fitt' (did you mean fit")
    r = run(["doc", "adm"], tmp_path)                   # a name of a module's table (nn's optimizers)
    assert r.returncode == 1 and "(did you mean adam" in r.stdout
    r = run(["doc", "xyzzy"], tmp_path)
    assert (r.returncode, r.stdout) == (1, "help: no documentation for 'xyzzy'; help() lists where to look\n")


def test_tabs_and_spaces_mixed_by_width_are_named(tmp_path):
    # a tab after a block indented with 4 spaces was 'unexpected indent: only a block after a line ending
    # in ':' is indented', and one after 8 spaces was quietly the same block (Python: TabError)
    said = ("this line's indentation mixes tabs and spaces unlike the lines above it, so where its block "
            "is depends on a tab's width: indent with spaces only (or tabs only)")
    for name, text in (("four.apsi", "if true:\n    let a = 1\n\tlet b = 2\n"),
                       ("eight.apsi", 'if true:\n        let a = 1\n\tprint("ran")\n')):
        (tmp_path / name).write_text(text)
        r = run([name], tmp_path)
        assert (r.returncode, r.stdout) == (2, "") and f"{name}:3:1: {said}" in r.stderr
    (tmp_path / "tabs.apsi").write_text('if true:\n\tlet a = 1\n\tif a:\n\t\tprint("in")\nprint("out")\n')
    r = run(["tabs.apsi"], tmp_path)
    assert (r.returncode, r.stdout) == (0, "in\nout\n"), r.stderr


def test_apsi_trust_of_the_wrong_path_or_without_an_answer_says_what_to_do(tmp_path):
    (tmp_path / "apsi.toml").write_text('[run]\nallow = ["python"]\n')
    (tmp_path / "train.apsi").write_text("print(1)\n")
    # a folder that does not exist found the apsi.toml above it, and asked to trust that
    r = run(["trust", "nosuch"], tmp_path)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("Error: nosuch does not exist: give the project's folder (or its apsi.toml), or "
                        "nothing for the current folder\n")
    # a program was read as TOML ("not valid TOML: Expected '=' after a key …")
    r = run(["trust", "train.apsi"], tmp_path)
    assert r.returncode == 1 and "train.apsi is not an apsi.toml: give the project's folder" in r.stderr
    # input that ends was Click's bare 'Aborted!'
    r = run(["trust"], tmp_path, stdin="")
    assert r.returncode == 1 and "Aborted!" not in r.stderr
    assert ("not trusted: the input ended before an answer (it is not a terminal); review the grants above "
            "and run `apsi trust --yes`") in r.stderr


def test_a_module_function_used_before_its_use_line_names_the_module(tmp_path):
    # fit and mlp were "did you mean 'filter'/'map'?", figure had no hint; zeros already named nn
    for name, module in (("mlp", "layers"), ("fit", "layers"), ("figure", "plot"), ("zeros", "nn")):
        r = run(["-e", f"let v = {name}(1)"], tmp_path)
        assert (r.returncode, r.stdout) == (2, "")
        assert f"undefined name '{name}' ('{name}' comes with 'use {module}': add it at the top)" in r.stderr
    r = run(["-e", "let v = lenn"], tmp_path)
    assert "undefined name 'lenn' (did you mean 'len'?)" in r.stderr


def test_apsi_check_takes_bare_scoped_flags_as_apsi_run_does(tmp_path):
    # `apsi run --allow-read a.apsi` ran a.apsi; `apsi check --allow-read a.apsi` took a.apsi as the
    # paths to read and said "Missing argument 'FILES...'"
    (tmp_path / "good.apsi").write_text("print(1)\n")
    (tmp_path / "bad.apsi").write_text("print(1)\nlet = 2\n")
    r = run(["check", "--allow-read", "good.apsi"], tmp_path)
    assert (r.returncode, r.stderr) == (0, "")
    r = run(["check", "good.apsi", "--allow-read", "bad.apsi"], tmp_path)
    assert r.returncode == 2 and "bad.apsi:2:5: expected a name after 'let'" in r.stderr


def test_pyimport_of_a_missing_module_names_the_package_to_install(tmp_path):
    # it said `apsi pkg install sklearn` (a stub that fails), `torch` (the CPU build even on a GPU
    # machine), `torch.nn`, and for a module whose dependency was missing "no Python module named 'mine'"
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    for module in ("sklearn", "torch"):
        (shadow / f"{module}.py").write_text(f"raise ModuleNotFoundError(\"No module named '{module}'\", "
                                             f"name='{module}')\n")
    (shadow / "mine.py").write_text("import not_installed_dependency_q\n")
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    env.pop("APSI_DEBUG", None)
    for module, said, package in (
            ("sklearn.linear_model", "no Python module named 'sklearn'", "scikit-learn"),
            ("torch.nn", "no Python module named 'torch'", "torch-auto"),
            ("mine", "it needs the Python module 'not_installed_dependency_q', which is not installed",
             "not_installed_dependency_q")):
        r = subprocess.run(APSI + ["--allow-python", "-e", f'pyimport("{module}")'], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 1 and f'pyimport("{module}"): {said} in ' in r.stderr, r.stderr
        assert r.stderr.rstrip().endswith(f"install it with: apsi pkg install {package}"), r.stderr


def test_a_model_file_or_binary_data_run_as_a_program_is_named(tmp_path):
    # both were "is not UTF-8 text (byte 0x… at position …); save it as UTF-8"
    import zipfile

    with zipfile.ZipFile(tmp_path / "my model.apsim", "w") as z:
        z.writestr("model.json", "{}")
    r = run(["my model.apsim"], tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("apsi: 'my model.apsim' is a model file (save_model), not a program: serve it with "
                        "`apsi serve 'my model.apsim'`, or load it in a program with "
                        "load_model(\"my model.apsim\")\n")
    (tmp_path / "data.bin").write_bytes(b"\x89\x00\xff" * 10)
    r = run(["data.bin"], tmp_path)
    assert (r.returncode, r.stderr) == (
        2, "apsi: 'data.bin' is binary data, not an Apsi program (a text file, usually FILE.apsi)\n")
    (tmp_path / "latin.apsi").write_bytes(b'print("\xe9")\n')
    r = run(["latin.apsi"], tmp_path)
    assert r.stderr == "apsi: 'latin.apsi' is not UTF-8 text (byte 0xe9 at position 7); save it as UTF-8\n"


def test_a_misspelt_pytorch_build_is_not_fetched_from_the_package_index(tmp_path):
    # torch-cpu, torch-cu121, torch-gpu went to pip as ordinary packages, from PyPI, where anyone may
    # have published those names
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    env.pop("APSI_DEBUG", None)

    def dry_run(name):
        return subprocess.run(APSI + ["pkg", "install", "--dry-run", name], cwd=tmp_path, capture_output=True,
                              text=True, env=env, timeout=120)

    for name, meant in (("torch-cpu", "(the CPU build is named torch)"),
                        ("torch-cu121", "(did you mean "), ("torch-rocm6.2", "(did you mean torch-rocm6.4"),
                        ("torch-gpu", "(torch-auto picks the build for this machine's GPU)")):
        r = dry_run(name)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert f"Error: {name} is not a PyTorch build Apsi knows {meant}" in r.stderr
        assert "`apsi pkg install torch-auto` picks the one for this machine" in r.stderr
    r = dry_run("torch-geometric")                  # an ordinary package named torch-… stays one
    assert r.returncode == 0 and "-m pip install" in r.stdout and "torch-geometric" in r.stdout


def test_apsi_launch_of_a_missing_program_says_so_once_before_starting_ranks(tmp_path):
    # it said "needs permission 'python'", then each of the N ranks "cannot run 'nosuch.apsi'", then
    # "rank 0 exited with code 2; rank 1 …" (and needed PyTorch installed to get that far)
    (tmp_path / "train.apsi").write_text("print(1)\n")
    r = run(["launch", "--nproc", "2", "trian.apsi"], tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("apsi: cannot launch 'trian.apsi': it does not exist (did you mean train.apsi?). "
                        "Usage: apsi launch --nproc N [PERMISSIONS] FILE.apsi [ARGS]...\n")


def test_a_block_line_at_the_end_of_the_file_is_shown(tmp_path):
    # the error pointed at the empty line after it: "3:1: expected an indented block …", a blank line
    (tmp_path / "end.apsi").write_text("print(1)\nfn f(x):\n")
    r = run(["end.apsi"], tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("end.apsi:2:8: expected an indented block after the 'fn f' line, but the input ends "
                        "there\n    fn f(x):\n           ^\n")


def test_use_of_a_python_library_or_a_misspelt_module_says_what_apsi_has(tmp_path):
    # `use numpy` said "no installed package provides it (installed: layers, nn, …) and there is no
    # numpy.apsi beside the program"; `use layer` did not name layers
    for line, said in (
            ("use numpy", "use numpy: no module named 'numpy' in Apsi: Apsi's tensors come with 'use nn'"),
            ("use torch", "use torch: no module named 'torch' in Apsi: PyTorch is a backend of 'use layers' "
                          "(fit(…, backend=\"torch\") with --allow-python)"),
            ("use layer", "use layer: no module named 'layer' (did you mean 'use layers'?): no installed "
                          "package provides it")):
        r = run(["-e", line], tmp_path)
        assert (r.returncode, r.stdout) == (2, "") and f"<-e>:1:1: {said}" in r.stderr, r.stderr
    (tmp_path / "numpy.apsi").write_text("let answer = 42\n")       # a module of the project's own wins
    r = run(["-e", "use numpy\nprint(answer)"], tmp_path)
    assert (r.returncode, r.stdout) == (0, "42\n"), r.stderr


def test_a_scope_written_without_equals_is_explained(tmp_path):
    # `apsi --allow-env HOME prog.apsi` said only "cannot run 'HOME': it does not exist"
    (tmp_path / "prog.apsi").write_text("print(1)\n")
    for before, flag, scope in (([], "--allow-env", "HOME"), (["run"], "--allow-net", "example.com")):
        r = run([*before, flag, scope, "prog.apsi"], tmp_path)
        assert (r.returncode, r.stdout) == (2, "")
        assert (f"cannot run '{scope}': it does not exist (did you mean {flag}={scope}? A scope is written "
                f"with '=': the bare {flag} grants all, and {scope} was taken for the program)") in r.stderr


def test_a_snippet_asked_for_the_python_way_is_shown_the_apsi_way(tmp_path):
    # `apsi -c CODE` said only "No such option '-c'"; `apsi run -e CODE` "cannot run '-e'"
    r = run(["-c", "print(1)"], tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert "No such option '-c': Apsi runs a snippet with -e CODE, as in apsi -e 'print(1)'" in r.stderr
    r = run(["run", "-e", "print(1)"], tmp_path)
    assert r.returncode == 2 and "(a snippet runs with `apsi -e CODE`, without run)" in r.stderr


def test_a_package_index_that_is_not_a_url_is_named_before_pip_runs(tmp_path):
    # `--torch-index notaurl` reached pip, which ignored it, and the failure read "no torch wheel from
    # notaurl/cu126 matches Python 3.11 on linux-x86_64 … try another build"; the doctor said nothing
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    env.pop("APSI_DEBUG", None)
    env.pop("APSI_TORCH_INDEX", None)
    advice = ("is not the URL of a package index: give one that starts with https:// (or file:// for a "
              "folder on this machine), like https://download.pytorch.org/whl")
    for args, said in ((["--torch-index", "notaurl"], "--torch-index: 'notaurl' "),
                       (["--index-url", "/no/such/folder"], "--index-url: '/no/such/folder' ")):
        r = subprocess.run(APSI + ["pkg", "install", "torch-cuda", "--dry-run", *args], cwd=tmp_path,
                           capture_output=True, text=True, env=env, timeout=120)
        assert (r.returncode, r.stdout) == (2, "") and r.stderr == f"error: {said}{advice}\n", r.stderr
    r = subprocess.run(APSI + ["doctor", "--json"], cwd=tmp_path, capture_output=True, text=True,
                       env={**env, "APSI_TORCH_INDEX": "ftp://mirror"}, timeout=120)
    import json

    report = json.loads(r.stdout)
    assert r.returncode == 1 and not report["ok"]
    assert [(c["status"], c["detail"]) for c in report["checks"] if c["key"] == "index"] == [
        ("fail", f"APSI_TORCH_INDEX: 'ftp://mirror' {advice}")]


def test_apsi_serve_of_a_program_says_to_run_it(tmp_path):
    # it said "load_model: app.apsi is not a model file written by save_model, or it is damaged: File is
    # not a zip file"
    (tmp_path / "app.apsi").write_text("print(1)\n")
    r = run(["serve", "app.apsi", "--port", "8000"], tmp_path)
    assert (r.returncode, r.stdout) == (2, "")
    assert ("app.apsi is an Apsi program, and apsi serve takes a model file (what save_model writes, "
            "MODEL.apsim): run the program with `apsi app.apsi`") in r.stderr


def test_the_doctor_marks_a_permission_flag_a_run_would_refuse(tmp_path):
    # `apsi --allow-read= doctor` said "Nothing is broken." while every run with that flag stopped
    import json

    r = run(["--allow-net=https://example.com/", "doctor", "--json"], tmp_path)
    report = json.loads(r.stdout)
    assert r.returncode == 1 and not report["ok"]
    assert [(c["status"], c["detail"]) for c in report["checks"] if c["label"] == "Permission flags"] == [
        ("fail", "--allow-net: 'https://example.com/' is a URL, not a host: write example.com (a host, or "
                 "host:port)")]
    assert [c["detail"] for c in report["checks"] if c["label"] == "Permissions"] == [
        "granted by apsi.toml: none; by flags: net (for https://example.com/); not granted: python, read, "
        "write, env, run"]


def test_apsi_i_with_a_program_says_how_to_have_its_names_at_the_prompt(tmp_path):
    # as `python -i prog.py` a user expects the prompt after the program; -i was silently ignored
    (tmp_path / "prog.apsi").write_text('print("ran")\n')
    r = run(["-i", "prog.apsi"], tmp_path, stdin="")
    assert (r.returncode, r.stdout) == (2, "")
    assert ("-i starts the REPL and runs no program: run the program without -i, or start `apsi` in its "
            "folder and `use NAME` (its file name without .apsi)") in r.stderr
    r = run(["-i"], tmp_path, stdin="use prog\n")             # what the message offers
    assert r.returncode == 0 and "ran\n" in r.stdout
