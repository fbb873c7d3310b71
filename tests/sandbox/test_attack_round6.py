"""Round 6 of the red team (the data features and the permission checks they rely on): each test is
one finding, reproduced through `apsi` as a program meets it; each fails on the code before its fix."""

import os
import subprocess
import sys

import pytest

from .helpers import ROOT


def apsi(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APSI_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "apsi", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


# --- a net denial is a denial of the host however its name is spelled ------------------------------
@pytest.mark.parametrize(("deny", "url"), [
    ("example.com", "http://example.com./x"),           # the fully qualified name: the same host
    ("example.com", "http://Example.COM.:80/"),
    ("example.com.", "http://example.com/"),
    ("example.com:443", "https://example.com.:443/"),
    ("[::1]", "http://[::1]:9/"),                       # an IPv6 address as URLs and grants write it
    ("[::1]:9", "http://[::1]:9/"),
    ("::1", "http://[::1]:9/"),
])
def test_a_net_denial_is_not_passed_by_another_spelling_of_the_host(tmp_path, deny, url):
    """`--allow-net --deny-net=example.com` let fetch_text("http://example.com./x") through: DNS
    resolves the trailing-dot name to the same host, but the names were compared as strings; and
    `--deny-net=[::1]` let http://[::1]/ through (the URL's host is ::1, without the brackets). The
    denial now answers before any connection is tried (no network is needed to see it)."""
    r = apsi(["--allow-net", f"--deny-net={deny}", "-e", f'fetch_text("{url}")'], tmp_path)
    assert r.returncode != 0
    assert f'fetch_text("{url}") is denied by --deny-net' in r.stderr, r.stderr


def test_a_net_grant_names_the_host_as_dns_does(tmp_path):
    """The other side: a grant for a host covers its fully qualified spelling, and only that host
    and port (localhost.:10 is not localhost:9)."""
    r = apsi(["--allow-net=localhost:9", "-e", 'fetch_text("http://localhost.:10/")'], tmp_path)
    assert "needs permission 'net'" in r.stderr, r.stderr
    r = apsi(["--allow-net=localhost:9", "-e", 'fetch_text("http://LOCALHOST.:9/")'], tmp_path)
    assert "needs permission 'net'" not in r.stderr, r.stderr


@pytest.mark.parametrize("grant", ["[::1]", "[::1]:9", "::1"])
def test_an_ipv6_grant_lets_the_program_connect_there(tmp_path, grant):
    """A grant of [::1] or [::1]:9 was never matched ('[::1]:9 is not among the granted [::1]'), and
    a bare ::1 was read by the kernel's wall as port 1 only (the connect then failed with 'Permission
    denied'). What follows the permission check is the connection itself: refused, nothing listens."""
    r = apsi([f"--allow-net={grant}", "-e", 'fetch_text("http://[::1]:9/")'], tmp_path)
    assert "needs permission" not in r.stderr and "Errno 13" not in r.stderr, r.stderr
    assert 'fetch_text("http://[::1]:9/"): <urlopen error' in r.stderr, r.stderr


# --- a link that leads out: the refusal's advice must be one that works, and tell nothing outside ---
def test_a_link_out_of_the_project_is_refused_with_advice_that_works(tmp_path):
    """A link in the project to a file outside was refused with 'run with --allow-read (or
    --allow-read=.)': granting the project's own folder changes nothing for a file outside it, so
    the user who followed the advice met the same refusal. The message says a link leads out, and
    still names nothing outside the project (the program reads what it is refused)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").symlink_to(outside / "secret.txt")
    (proj / "data").symlink_to(outside)
    for call in ('read_text("notes.txt")', 'read_text("data/secret.txt")', 'write_text("notes.txt", "x")'):
        r = apsi(["-e", f"try:\n    {call}\ncatch e:\n    print(e)"], proj)
        perm = "write" if call.startswith("write") else "read"
        assert "outside the project folder: a link in the path leads there" in r.stdout, r.stdout
        assert f"--allow-{perm}=FOLDER, the folder the link leads to" in r.stdout, r.stdout
        assert f"--allow-{perm}=." not in r.stdout and str(outside) not in r.stdout, r.stdout
    r = apsi([f"--allow-read={outside}", "-e", 'print(read_text("notes.txt"))'], proj)
    assert r.stdout == "secret\n\n", (r.stdout, r.stderr)       # (the file's line, and print's)
