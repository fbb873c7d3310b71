"""Which files a program may create, overwrite or delete inside its project without `write`: the one rule.

An allow-list, in two steps (docs/permissions.md explains each entry and cites the tools' documentation):
1. the file is of a kind Apsi's own functions produce, inert data no tool runs (`DATA_KINDS`); a folder
   has no suffix, a number after its last dot, or one of those kinds;
2. and its name and place are none that a common tool finds by itself and reads as code or settings:
   no part of the path starts with '.', no folder is one a tool reads code from (`TOOL_FOLDERS`), and
   the name is not one a tool discovers (`TOOL_NAMES`, `TOOL_PATTERNS`: `test_x.txt` is a doctest to
   pytest, `CMakeLists.txt` a program to cmake, `package.json` scripts to npm).
Everything else (apsi.toml, programs, scripts, a Makefile, a name without a suffix) needs `write` for
that path. A deny-list of dangerous names lost every round: each new tool added a name it lacked.
Here a name no entry mentions is refused unless it is plainly data.
"""

import fnmatch
import os

# suffix -> why a file of that kind runs nothing (shown in docs; the keys are the allow-list)
DATA_KINDS = {
    ".npz": "NumPy arrays in a zip (save_params); Apsi writes no pickles, np.load refuses them by default",
    ".npy": "one NumPy array (no pickles, as .npz)",
    ".ckpt": "fit's checkpoint: a zip of .npy arrays and JSON, as .npz",
    ".apsim": "a model file (save_model): a zip of JSON and .npy arrays; its Apsi functions are stored as "
              "source and compiled again in the sandbox, never run as Python",
    ".onnx": "an ONNX model (export_onnx): a protobuf graph of the standard's operators and their weights; "
             "ONNX Runtime computes it, nothing in it is run as code",
    ".csv": "comma-separated text (write_text of rows)",
    ".tsv": "tab-separated text",
    ".json": "JSON data (write_json)",
    ".jsonl": "JSON lines (append_text of records)",
    ".txt": "plain text",
    ".log": "plain text (logs)",
    ".png": "an image (a figure's save, plot_history)",
    ".svg": "a vector image (a figure's save); a browser shows it in a page of its own, without access to "
            "other files",
}

# Names (compared ignoring case) that a tool finds in a folder by itself and reads as code or settings:
# name -> the tool. Names that are not data kinds are refused by step 1 anyway; they are listed so a
# folder of that name is refused too and the message can name the tool.
TOOL_NAMES = {
    "apsi.toml": "Apsi (apsi.toml grants permissions)",
    **dict.fromkeys(("pytest.toml", "pytest.ini", "conftest.py"), "pytest"),
    **dict.fromkeys(("tox.ini", "tox.toml"), "tox"),
    "noxfile.py": "nox",
    **dict.fromkeys(("pyproject.toml", "setup.cfg", "setup.py", "manifest.in"),
                    "pip and Python's build tools"),
    **dict.fromkeys(("pip.conf", "pyvenv.cfg"), "pip and Python's venv"),
    **dict.fromkeys(("uv.toml", "uv.lock"), "uv"),
    **dict.fromkeys(("poetry.toml", "poetry.lock"), "Poetry"),
    **dict.fromkeys(("pdm.toml", "pdm.lock"), "PDM"),
    "hatch.toml": "Hatch",
    **dict.fromkeys(("sitecustomize.py", "usercustomize.py"), "Python's site module"),
    "entry_points.txt": "Python's import system (entry points)",
    **dict.fromkeys(("package.json", "package-lock.json", "npm-shrinkwrap.json"), "npm"),
    "yarn.lock": "Yarn",
    **dict.fromkeys(("pnpm-workspace.yaml", "pnpm-lock.yaml"), "pnpm"),
    **dict.fromkeys(("deno.json", "deno.jsonc", "deno.lock", "import_map.json"), "Deno"),
    **dict.fromkeys(("bunfig.toml", "bun.lock", "bun.lockb"), "Bun"),
    **dict.fromkeys(("composer.json", "composer.lock"), "Composer"),
    "nodemon.json": "nodemon (its exec command)",
    **dict.fromkeys(("project.json", "nx.json"), "Nx (run-commands targets)"),
    "firebase.json": "the Firebase CLI (predeploy hooks)",
    "app.json": "Heroku (scripts run on deploy)",
    "vercel.json": "the Vercel CLI (its buildCommand, devCommand and installCommand)",
    "wrangler.json": "Cloudflare's Wrangler (its build command, run by wrangler dev and deploy)",
    "devbox.json": "Devbox (its shell init_hook runs on devbox shell and devbox run)",
    "dprint.json": "dprint (process plugins are executables it downloads and runs)",
    "tauri.conf.json": "the Tauri CLI (beforeDevCommand, beforeBuildCommand)",
    **dict.fromkeys(("rush.json", "command-line.json"), "Rush (eventHooks and custom commands run a shell)"),
    **dict.fromkeys(("makefile", "gnumakefile"), "make"),
    **dict.fromkeys(("cmakelists.txt", "cmakepresets.json", "cmakeuserpresets.json", "cmakecache.txt"),
                    "CMake"),
    # their cache settings reach cmake's command line (-DCMAKE_PROJECT_INCLUDE=notes.txt runs that file)
    "cmake-variants.json": "VS Code's CMake Tools (variants: cache settings for cmake)",
    "cmakesettings.json": "Visual Studio (CMake command arguments and cache variables)",
    **dict.fromkeys(("conanfile.txt", "conanfile.py"), "Conan"),
    **dict.fromkeys(("vcpkg.json", "vcpkg-configuration.json"), "vcpkg"),
    **dict.fromkeys(("meson.build", "meson_options.txt", "meson.options"), "Meson"),
    **dict.fromkeys(("cargo.toml", "cargo.lock", "build.rs", "rust-toolchain", "rust-toolchain.toml"),
                    "Cargo"),
    **dict.fromkeys(("go.mod", "go.sum", "go.work", "go.work.sum"), "go"),
    **dict.fromkeys(("dockerfile", "containerfile", "compose.yaml", "compose.yml", "compose.override.yaml",
                     "compose.override.yml", "docker-compose.yml", "docker-compose.yaml",
                     "docker-compose.override.yml", "docker-compose.override.yaml", "docker-bake.json",
                     "docker-bake.hcl", "docker-bake.override.json", "docker-bake.override.hcl"),
                    "Docker, Podman and Compose"),
    "devcontainer.json": "VS Code's dev containers",
    **dict.fromkeys(("mise.toml", "mise.local.toml"), "mise"),
    **dict.fromkeys(("justfile",), "just"),
    **dict.fromkeys(("taskfile.yml", "taskfile.yaml", "taskfile.dist.yml", "taskfile.dist.yaml"), "Task"),
    **dict.fromkeys(("flake.nix", "flake.lock", "shell.nix", "default.nix"), "Nix"),
    # Bazel's BUILD and WORKSPACE are files without a suffix (step 1 refuses them); a folder named build
    # is everywhere, so they are not names here
    **dict.fromkeys(("build.bazel", "workspace.bazel", "module.bazel"), "Bazel"),
    **dict.fromkeys(("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
                     "gradle.properties", "gradlew", "gradlew.bat"), "Gradle"),
    **dict.fromkeys(("pom.xml", "mvnw", "mvnw.cmd"), "Maven"),
    "snakefile": "Snakemake",
    **dict.fromkeys(("lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook-local.yml"), "Lefthook"),
    **dict.fromkeys(("apt.txt", "runtime.txt", "postbuild", "environment.yml"), "repo2docker (Binder)"),
    "procfile": "Heroku-style platforms",
    "matplotlibrc": "matplotlib",
}
# Patterns on the name (compared ignoring case): pattern -> the tool. The first three are for files only:
# a folder named test/ (a data set's test split) is read by no tool.
FILE_PATTERNS = ("test*", "*_test*", "conftest*")
TOOL_PATTERNS = {
    "test*": "pytest (test*.txt is collected as a doctest) and other test runners",
    "*_test*": "pytest and go (*_test.py, *_test.go) and other test runners",
    "conftest*": "pytest",
    "*requirements*": "pip (pip install -r)",
    "constraints*": "pip (pip install -c)",
    "tsconfig*.json": "TypeScript (its plugins are code)",
    "jsconfig*.json": "TypeScript",
    "*.config.json": "JavaScript tools (babel.config.json, jest.config.json)",
    "dockerfile*": "Docker", "*.dockerfile": "Docker", "containerfile*": "Podman",
    "docker-bake*": "Docker Bake", "compose*.y*ml": "Compose", "docker-compose*": "Compose",
    "taskfile*": "Task", "lefthook*": "Lefthook",
    "activate": "a shell (a Python environment's activate script)", "activate.*": "a shell",
}
# Folders a tool reads code or settings from: name -> tool; and suffixes of such folders
TOOL_FOLDERS = {
    "__pycache__": "Python (compiled modules)",
    "site-packages": "Python (installed packages)", "dist-packages": "Python (installed packages)",
    "node_modules": "Node.js (installed packages)",
    "vendor": "go (vendored modules)",
    "requirements": "pip (requirements/*.txt files for pip install -r)",
    "mise": "mise (mise/config.toml, mise/tasks/)", "mise-tasks": "mise (file tasks)",
    "binder": "repo2docker (Binder)",
}
TOOL_FOLDER_SUFFIXES = {".dist-info": "Python's import system (installed distributions)",
                        ".egg-info": "Python's import system (installed distributions)",
                        ".egg": "Python's import system (installed distributions)"}


def kinds():
    """The allowed suffixes, for messages."""
    return ", ".join(DATA_KINDS)


# Code points HFS+ (macOS's file system before APFS, still on external disks) leaves out when it
# compares names, so "package\u200c.json" opens package.json there: git refuses ".git" spelled with them
# for that reason (CVE-2014-9390; git's utf8.c, next_hfs_char).
_HFS_IGNORED = dict.fromkeys([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070),
                              0xFEFF])


def _norm(part):
    """As case-insensitive file systems (macOS, Windows) compare names: case, trailing dots and
    spaces, and the code points HFS+ ignores, ignored."""
    return part.translate(_HFS_IGNORED).casefold().rstrip(" .")


def reason(parts, folder=False):
    """Why `parts` (a path relative to the project, as a tuple of names) may not be written without
    `write`, or None. folder=True: the last part is a folder (make_dir, deleting a folder)."""
    for i, part in enumerate(parts):
        why = _place(part, i == len(parts) - 1)
        if why:
            return why
    name = _norm(parts[-1])
    return _folder_name(name) if folder else _file_name(name)


def _place(part, last):
    name = _norm(part)
    if part.startswith(".") or name.startswith("."):
        return (f"'{part}' holds tools' settings or code (files named with a leading '.' and what is under "
                "such folders are protected)")
    if last:
        return None
    if name in TOOL_FOLDERS:
        return f"'{part}' is a folder {TOOL_FOLDERS[name]} reads code or settings from"
    for suffix, tool in TOOL_FOLDER_SUFFIXES.items():
        if name.endswith(suffix):
            return f"'{part}' is a folder {tool} reads code or settings from"
    return None


def _file_name(name):
    tool = _tool(name)
    if tool:
        return tool
    suffix = os.path.splitext(name)[1]
    if suffix not in DATA_KINDS:
        return _not_data(name)
    return None


def _folder_name(name):
    if name in TOOL_FOLDERS:
        return f"{TOOL_FOLDERS[name]} reads code or settings from a folder named so"
    tool = _tool(name, folder=True)
    if tool:
        return tool
    for suffix, tool in TOOL_FOLDER_SUFFIXES.items():
        if name.endswith(suffix):
            return f"{tool} reads code or settings from a folder named so"
    suffix = os.path.splitext(name)[1]
    if suffix and not suffix[1:].isdigit() and suffix not in DATA_KINDS:
        return (f"a folder named like a file of another kind than data ({suffix}) needs permission; "
                "name folders without a suffix")
    return None


def _tool(name, folder=False):
    if name in TOOL_NAMES:
        return "apsi.toml grants permissions" if name == "apsi.toml" else \
            f"a file of this name is found and read as code or settings by {TOOL_NAMES[name]}"
    for pattern, tool in TOOL_PATTERNS.items():
        if fnmatch.fnmatchcase(name, pattern) and not (folder and pattern in FILE_PATTERNS):
            return f"files named {pattern} are found and read as code or settings by {tool}"
    return None


def _not_data(name):
    if name.endswith(".apsi") or name.endswith(".py"):
        return "programs and Python files run code; only data files may be written without permission " \
               f"({kinds()})"
    return f"only data files may be written without permission ({kinds()}), and this is not one"


# What marks a folder as a Python environment: a virtual environment's pyvenv.cfg (PEP 405), a conda
# environment's conda-meta/ (`conda create -p ./env`: no pyvenv.cfg). Either holds more than packages
# that run code: share/jupyter/kernels/*/kernel.json is the command Jupyter runs for a kernel.
ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")


def environment(root, parts):
    """Why a path inside the project is part of a Python environment, or None: a virtual or conda
    environment anywhere on the way, the installation Apsi runs from when it lies inside the project
    (all of it), or the folders of that interpreter."""
    for i in range(len(parts) - 1):
        folder = root.joinpath(*parts[:i + 1])
        if any((folder / marker).exists() for marker in ENVIRONMENT_MARKERS):
            return f"'{'/'.join(parts[:i + 1])}' is a Python environment (its programs and packages run code)"
    target = str(root.joinpath(*parts))
    inside = [p for p in _prefixes() if _under(p, str(root)) and p != str(root)]
    for folder in environment_folders() + inside:
        if _under(target, folder):
            return "it is inside the Python environment Apsi runs in (its packages run code)"
    return None


def _under(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _prefixes():
    """The running Python's installation folders (resolved). Inside a project, each is protected
    whole; a project may also lie inside one (/usr/local/src/x), and then only its own folders are."""
    import sys

    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix,
                                                  sys.base_exec_prefix) if p})


_folders = None


def environment_folders():
    """The interpreter's own folders (standard library, site-packages, scripts). Issue 28 adds
    apsi_lang.installed.environment_folders(); until it is there, the prefixes and the install paths
    sysconfig names stand in (resolved, so a link does not hide them)."""
    global _folders
    if _folders is None:
        from . import installed

        hook = getattr(installed, "environment_folders", None)
        if hook is not None:
            found = list(hook())
        else:
            import sysconfig

            # not the prefixes themselves: /usr/local is a prefix, and a project may live under it
            paths = sysconfig.get_paths()
            found = [paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib", "scripts")]
        _folders = sorted({os.path.realpath(f) for f in found if f})
    return _folders
