"""Issue 29: without a write permission a program may write inside its project only data files whose
name and place no common tool reads as code or settings (apsi_lang/writable.py, an allow-list).

CORPUS holds the names the tools' own documentation says they find in a folder by themselves (the
sources are cited in docs/permissions.md): every one must be refused, at the project's top and in a
subfolder. OUTPUTS holds names a program normally writes: every one must be allowed."""

import os

import pytest

from apsi_lang import permissions, writable
from apsi_lang.errors import PermissionDenied

from .helpers import caught_but_the_last, cli, refused, run, said_by_each

CORPUS = {
    "pytest": ["test_results.txt", "tests.txt", "test.json", "TEST_x.csv", "my_test.csv", "x_test.txt",
               "conftest.py", "conftest.json", "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini",
               "pyproject.toml", "tox.ini", "setup.cfg", "test_x.py", "x_test.py"],
    "tox": ["tox.ini", "tox.toml", "setup.cfg", "pyproject.toml"],
    "nox": ["noxfile.py"],
    "pip": ["requirements.txt", "requirements-dev.txt", "dev-requirements.txt",
            "requirements_test.txt", "requirements/base.txt", "constraints.txt", "setup.py", "pip.conf",
            "MANIFEST.in"],
    "uv": ["uv.toml", "uv.lock", ".python-version"],
    "poetry": ["poetry.toml", "poetry.lock"],
    "pdm": ["pdm.toml", "pdm.lock", ".pdm-python", ".pdm.toml"],
    "hatch": ["hatch.toml"],
    "python": ["sitecustomize.py", "usercustomize.py", "x.pth", "x.so", "x.pyc", "__pycache__/x.txt",
               "zzz-1.0.dist-info/entry_points.txt", "zzz.egg-info/top_level.txt", "zzz.egg/x.json",
               "zzz.egg-link", "entry_points.txt", "site-packages/x.json", "__init__.py"],
    "npm": ["package.json", "package-lock.json", "npm-shrinkwrap.json", ".npmrc",
            "node_modules/x/index.json"],
    "yarn": ["yarn.lock", ".yarnrc", ".yarnrc.yml", ".pnp.cjs"],
    "pnpm": ["pnpm-workspace.yaml", "pnpm-lock.yaml", ".pnpmfile.cjs"],
    "deno": ["deno.json", "deno.jsonc", "deno.lock", "import_map.json"],
    "bun": ["bunfig.toml", "bun.lock", "bun.lockb"],
    "typescript": ["tsconfig.json", "tsconfig.build.json", "jsconfig.json"],
    "js tools": ["babel.config.json", "jest.config.json", "nodemon.json", "project.json", "nx.json",
                 "firebase.json", "app.json"],
    "composer": ["composer.json", "composer.lock"],
    "make": ["Makefile", "makefile", "GNUmakefile", "rules.mk"],
    "cmake": ["CMakeLists.txt", "cmakelists.txt", "CMakePresets.json", "CMakeUserPresets.json",
              "CMakeCache.txt", "toolchain.cmake"],
    "conan": ["conanfile.txt", "conanfile.py"],
    "vcpkg": ["vcpkg.json", "vcpkg-configuration.json"],
    "meson": ["meson.build", "meson_options.txt", "meson.options"],
    "cargo": ["Cargo.toml", "Cargo.lock", "build.rs", ".cargo/config.toml", ".cargo/config",
              "rust-toolchain", "rust-toolchain.toml"],
    "go": ["go.mod", "go.sum", "go.work", "go.work.sum", "x_test.go", "main.go", "vendor/modules.txt"],
    "docker": ["Dockerfile", "dockerfile", "Dockerfile.dev", "app.Dockerfile", "Containerfile",
               ".dockerignore", ".containerignore", "compose.yaml", "compose.yml", "compose.override.yaml",
               "docker-compose.yml", "docker-compose.yaml", "docker-compose.override.yml",
               "docker-bake.json", "docker-bake.hcl", "docker-bake.override.json",
               "docker-bake.override.hcl", ".env"],
    "pre-commit": [".pre-commit-config.yaml", ".pre-commit-hooks.yaml"],
    "direnv": [".envrc", ".env"],
    "mise": ["mise.toml", "mise.local.toml", ".mise.toml", "mise/config.toml", "mise/tasks/build.txt",
             ".mise/config.toml", ".config/mise.toml", ".config/mise/config.toml", "mise-tasks/build.txt",
             ".mise-tasks/build", ".tool-versions", ".rtx.toml", ".nvmrc", ".node-version"],
    "asdf": [".tool-versions"],
    "vscode": [".vscode/settings.json", ".vscode/tasks.json", ".vscode/launch.json", "x.code-workspace",
               ".devcontainer/devcontainer.json", ".devcontainer.json", "devcontainer.json"],
    "jetbrains": [".idea/workspace.xml", ".idea/runConfigurations/x.xml", "x.iml", ".run/x.run.xml"],
    "git": [".git/config", ".git/hooks/pre-commit", ".gitattributes", ".gitmodules", ".gitignore",
            ".github/workflows/ci.yml", ".gitlab-ci.yml", ".husky/pre-commit"],
    "lefthook": ["lefthook.yml", "lefthook.json", ".lefthook.json", "lefthook-local.yml"],
    "just": ["justfile", "Justfile", ".justfile", "x.just"],
    "task": ["Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "Taskfile.dist.yml", "Taskfile.json"],
    "nix": ["flake.nix", "flake.lock", "shell.nix", "default.nix", "x.nix", ".envrc"],
    "bazel": ["BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", ".bazelrc",
              ".bazelversion", "defs.bzl", "tools/bazel"],
    "gradle": ["build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts",
               "gradle.properties", "gradlew", "gradlew.bat", "gradle/wrapper/gradle-wrapper.properties"],
    "maven": ["pom.xml", ".mvn/maven.config", ".mvn/jvm.config", ".mvn/extensions.xml", "mvnw", "mvnw.cmd"],
    "snakemake": ["Snakefile", "snakefile", "workflow/Snakefile", "rules.smk"],
    "repo2docker": ["apt.txt", "runtime.txt", "postBuild", "environment.yml", "binder/requirements.txt",
                    "binder/apt.txt", "start"],
    "shells and programs": ["x.sh", "x.bash", "activate", "activate.fish", "activate.txt", "configure",
                            "x.ps1", "x.bat", "x.cmd", "x.ipynb", "x.html", "x.js", "x.md", "x.rst",
                            "x.yaml", "x.toml", "x.pdf", "x.pkl", "x.pt", "x.pth", "x.exe", "x"],
    "apsi": ["apsi.toml", "x.apsi", "APSI.TOML", "apsi.toml.", "X.APSI"],
}
NAMES = sorted({name for names in CORPUS.values() for name in names})

OUTPUTS = ["out.txt", "results.csv", "model.npz", "run.ckpt", "history.json", "metrics.jsonl", "loss.png",
           "figure.svg", "train.log", "preds.tsv", "embeddings.npy", "RESULTS.CSV", "data/x.npy",
           "runs/2024.01/summary.json", "runs/v1.2/out.csv", "data/test/x.npy", "data/train/labels.csv",
           "latest.txt", "notes.txt", "bin/data.txt", "build/out.csv",
           "config.json", "report.txt", "contest.csv"]


def _check(project, name, folder=False):
    permissions.set_current(permissions.Grants(frozenset(), (), (), project.resolve()))
    return permissions.check_path("write", name, "t", folder=folder)


@pytest.mark.parametrize("where", ["", "sub/"])
def test_every_name_a_tool_reads_is_refused(project, where):
    missed = []
    for name in NAMES:
        try:
            _check(project, where + name)
            missed.append(where + name)
        except PermissionDenied as e:
            assert "--allow-write=" in e.message and "protected" in e.message, e.message
    assert missed == [], f"written without permission: {missed}"


@pytest.mark.parametrize("name", OUTPUTS)
def test_ordinary_outputs_are_allowed(project, name):
    assert _check(project, name) == str(project.resolve() / name)


def test_folders_are_judged_as_folders(project):
    for name in ("runs", "test", "tests", "data/train", "v1.2", "model.ckpt", "build", "Makefile-notes"):
        _check(project, name, folder=True)
    for name in (".git", "zzz-1.0.dist-info", "x.egg-info", "node_modules", "__pycache__", "mise-tasks",
                 "requirements", "lib.apsi", "apsi.toml", "Makefile", "requirements.txt", "x.py", "exp.v2"):
        with pytest.raises(PermissionDenied):
            _check(project, name, folder=True)


def test_the_refusal_names_the_rule_and_the_grant(project):
    message = refused('write_text("test_results.txt", ">>> 1")', "write", match="pytest")
    assert "test*" in message and "--allow-write=test_results.txt" in message
    message = refused('write_text("Makefile", "x")', "write", match="by make")
    assert "--allow-write=Makefile" in message
    message = refused('write_text("notes.md", "x")', "write", match="only data files")
    assert ".csv" in message and "--allow-write=notes.md" in message
    refused('write_text("node_modules/x/index.json", "{}")', "write", match="node_modules")
    run('write_text("test_results.txt", "granted")', write=[project / "test_results.txt"])
    assert (project / "test_results.txt").read_text() == "granted"


DOCTEST = ">>> import os; open('pwned', 'w').write('x')\\n"


PLANTS = [
    ("test_results.txt", DOCTEST),                                       # pytest's default doctest glob
    ("pytest.toml", '[pytest]\\naddopts = [\\"--basetemp=/tmp/x\\"]\\n'),   # pytest >= 9 reads it first
    ("tox.toml", 'env_list = [\\"x\\"]\\n'),
    ("requirements-dev.txt", "evil-package\\n"),
    ("package.json", '{\\"scripts\\": {\\"test\\": \\"sh -c id\\"}}'),
    ("rules.mk", "all:\\n\\tid\\n"),
    ("Dockerfile.dev", "FROM x\\n"),
    ("compose.yaml", "services: {}\\n"),
    (".pre-commit-config.yaml", "repos: []\\n"),
    ("CMakeLists.txt", "execute_process(COMMAND id)\\n"),
    ("build.rs", "fn main() {}\\n"),
    ("Snakefile", "rule x:\\n"),
    ("pylintrc", "[MAIN]\\nload-plugins=evil\\n"),
]


@pytest.fixture(scope="module")
def plants(tmp_path_factory):
    """Every plant in one program (helpers.caught_but_the_last) through the real command, with the
    kernel's wall and without (cli runs both): ({name: what was said}, exit code, project folder)."""
    project = tmp_path_factory.mktemp("plants")
    writes = [f'write_text("{n}", "{t}")' for n, t in PLANTS]
    code, out, err = cli(["-e", caught_but_the_last(writes)], project)
    return said_by_each([n for n, _ in PLANTS], out, err), code, project


@pytest.mark.parametrize("name, text", PLANTS)
def test_the_plants_of_issue_29_are_refused(plants, name, text):
    said, code, project = plants
    assert code == 1 and "protected file" in said[name] and f"--allow-write={name}" in said[name], said[name]
    assert not (project / name).exists()


def test_a_planted_doctest_is_what_pytest_would_run(project):
    """Why test*.txt matters: pytest, with no configuration at all, collects it as a doctest."""
    import subprocess
    import sys

    (project / "test_results.txt").write_text(">>> 1 + 1\n2\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                       cwd=project, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTEST_ADDOPTS": ""})
    assert "test_results.txt" in p.stdout, p.stdout + p.stderr


def test_a_virtual_environment_inside_the_project_is_protected_whole(project):
    env = project / "venv"
    (env / "lib" / "python3" / "site-packages").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in ("venv/lib/python3/x.json", "venv/bin/data.txt", "venv/notes.txt"):
        message = refused(f'write_text("{name}", "x")', "write", match="Python environment")
        assert f"--allow-write={name}" in message


def test_the_interpreters_own_folders_are_protected(project, monkeypatch):
    fake = project / "interpreter" / "lib"
    fake.mkdir(parents=True)
    monkeypatch.setattr(writable, "_folders", [str(fake.resolve())])
    refused('write_text("interpreter/lib/x.json", "x")', "write", match="Python environment")
    run('write_text("interpreter/x.json", "x")')
