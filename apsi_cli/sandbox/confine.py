"""The second wall: before a program without `python` runs, the apsi process gives up, at the kernel,
what the program's permissions do not grant.

The language's checks (apsi_lang) are the first wall. If a hole in them is ever found, Python code
could run inside the apsi process; this confinement makes the kernel refuse that code what the
permissions refuse the program:
- reads: Python's installation and the installed packages (what lazy imports of numpy and Apsi's own
  modules need), a few system files, the project folder and the `read` paths;
- writes: the project folder and the `write` paths (which names inside the project are protected is the
  language wall's job: Landlock grants whole folders, see docs/permissions.md);
- no program execution without `run`, no TCP connect or listening without `net` (its ports only, when
  it names them);
- no sockets at all without `net`, and never Unix sockets; no typing into the terminal; no files made
  in memory (memfd_create, whose files Landlock cannot stop from being executed) without `run`
  (apsi_cli/sandbox/seccomp.py);
- environment variables removed unless `env` grants them.
On Linux this is Landlock (sandbox/landlock.py) and a seccomp filter; where the kernel lacks them, only
the environment is cleaned and nothing is said. APSI_NO_CONFINE=1 turns the whole second wall off,
for debugging.
"""

import os
import sys

from apsi_lang.records import record

from . import landlock, seccomp

SWITCH = "APSI_NO_CONFINE"

READ = ("read_file", "read_dir")
# What writing data files needs: atomic writes create a temporary file beside the target (write-only:
# apsi_lang/files.py) and rename it over; REFER lets files move between folders. A folder granted
# for writing only is not readable: reading needs `read` (the project folder is in both lists).
WRITE = ("write_file", "truncate", "make_reg", "make_dir", "remove_file", "remove_dir", "refer")
# Symlinks, fifos and sockets: no Apsi function makes them, programs started with `run` may.
SPECIAL = ("make_sym", "make_fifo", "make_sock")
# Device nodes and device ioctls: never (stdin/stdout, opened before, keep their rights).
HANDLED = READ + WRITE + SPECIAL + ("execute", "make_char", "make_block", "ioctl_dev")

# System files every Python process may need after start-up: shared libraries (numpy's extension
# modules are loaded lazily), the loader's cache, time zones, locale data, CPU counts (BLAS thread
# pools), and harmless devices. Not /etc, /home, /tmp or /proc: they hold other people's files and
# secrets (/etc/passwd, ~/.ssh, the shared temporary folder, /proc/self/environ).
SYSTEM_READ = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib",
               "/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo", "/usr/share/locale",
               "/usr/share/i18n", "/sys/devices/system/cpu", "/dev/null", "/dev/urandom", "/dev/random",
               "/dev/zero")
SYSTEM_WRITE = ("/dev/null",)
# `net`: name resolution and TLS certificates. `run`: the programs and their data.
NET_READ = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
            "/etc/services", "/etc/protocols", "/etc/ssl", "/etc/pki", "/etc/ca-certificates",
            "/usr/share/ca-certificates")
RUN_READ = ("/usr", "/bin", "/sbin", "/opt")

# Environment variables kept without `env`: they configure how Python, NumPy's BLAS and the terminal
# behave and carry no secrets. Everything else (tokens, HOME, PATH, …) goes.
KEEP_ENV = {"LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR", "APSI_DEBUG", "APSI_READ_AHEAD"}
KEEP_ENV_PREFIXES = ("LC_", "OMP_", "OPENBLAS_", "MKL_", "BLIS_", "NPY_", "NUMPY_")
# What torchrun (`apsi launch`) tells each worker: its place in the job and where the ranks meet. The
# process group reads them from the environment when fit(distributed=…) joins; they are no secret, and
# a program still needs `env` to read them itself (rank() and world_size() say the same).
LAUNCH_ENV = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
              "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT"}
LAUNCH_ENV_PREFIXES = ("TORCHELASTIC_",)
NET_ENV = {"http_proxy", "https_proxy", "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"}
RUN_ENV = {"PATH"}
# socket() families with `net`: IPv4, IPv6, and netlink (name resolution lists the addresses with it).
# Without it none; Unix sockets never (a Docker or D-Bus socket is a way out of any sandbox).
NET_SOCKETS = (seccomp.AF_INET, seccomp.AF_INET6, seccomp.AF_NETLINK)


@record(frozen=True)
class Policy:
    """What the confined process may touch: plain paths and switches."""

    read: tuple = ()              # readable beneath these paths (None: anywhere)
    write: tuple = ()             # writable beneath these paths (None: anywhere)
    execute: bool = False         # may run programs
    net: bool = False             # may open internet sockets and connect over TCP …
    ports: tuple | None = None    # … to these ports only (None: any)
    env: bool | tuple = ()        # True: keeps the whole environment; else the names granted


def disabled():
    return os.environ.get(SWITCH, "") not in ("", "0")


def needed(grants):
    """Programs with `python` may run any Python code: no second wall can hold them without breaking
    what `python` is for, so they are not confined."""
    return not _whole(grants, "python") and not disabled()


def _whole(grants, permission):
    return permission in grants.granted and permission not in grants.denied


def _some(grants, permission):
    """Granted whole or for some names (env, run, net), and not denied whole."""
    return _whole(grants, permission) or (permission not in grants.denied and bool(grants.scoped(permission)))


def policy(grants):
    """The kernel's share of `grants`. The kernel knows paths and ports, not names: a program granted by
    name (--allow-run=git) may start others, a host (--allow-net=example.com) is any host on its ports;
    denials inside what is granted (--deny-read=PATH) are the language's checks alone."""
    read = None if _whole(grants, "read") else (
        _project(grants) + python_paths() + SYSTEM_READ
        + (NET_READ + _certificates() if _some(grants, "net") else ())
        + (RUN_READ if _some(grants, "run") else ())
        + (tuple(grants.read_paths) if "read" not in grants.denied else ()))
    write = None if _whole(grants, "write") else (
        _project(grants) + SYSTEM_WRITE
        + (tuple(_writable(p) for p in grants.write_paths) if "write" not in grants.denied else ()))
    return Policy(read=read, write=write, execute=_some(grants, "run"), net=_some(grants, "net"),
                  ports=None if _whole(grants, "net") else _ports(grants.scoped("net")),
                  env=True if _whole(grants, "env") else tuple(
                      n for n in (grants.scoped("env") if "env" not in grants.denied else ())
                      if not grants.denies("env", name=n)))


def _project(grants):
    """The project folder, which the program reads and writes freely; / is never one (apsi_lang's
    permissions give nothing free there either)."""
    root = str(grants.project_root)
    return () if os.path.realpath(root) == "/" else (root,)


def _ports(hosts):
    """The TCP ports that `host:port` grants name; None when a bare host grants every port."""
    from apsi_lang.permissions import host_form

    ports = []
    for host in hosts:
        port = host_form(host)[1]       # (a bare IPv6 address, ::1, names no port: every port)
        if not port.isdigit():
            return None
        ports.append(int(port))
    return tuple(sorted(set(ports)))


def python_paths():
    """Where Python and the installed packages load modules from: numpy, nn and Apsi's own modules are
    imported only when a program uses them, after the confinement."""
    # the current folder is not Python's own, unless Apsi itself runs from there (a source checkout);
    # `python -m apsi` has already taken it off sys.path (apsi/__main__.py), the console script never
    # had it (its sys.path[0] is the script's folder, where Python's own programs are)
    here = os.path.realpath(os.getcwd())
    entries = [os.path.abspath(p) for p in sys.path
               if os.path.realpath(p or ".") != here or _under(os.path.abspath(__file__), here)]
    entries.append(os.path.dirname(os.__file__))                   # the standard library
    # editable installs (pip install -e) map packages to source folders outside sys.path
    for name, module in list(sys.modules.items()):
        if name.startswith("__editable__"):
            entries += [str(p) for p in getattr(module, "MAPPING", {}).values()]
            entries += [str(p) for paths in getattr(module, "NAMESPACES", {}).values() for p in paths]
    return tuple(dict.fromkeys(entries))


def _certificates():
    import ssl

    v = ssl.get_default_verify_paths()
    return tuple(p for p in (v.cafile, v.capath, v.openssl_cafile, v.openssl_capath,
                             os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")) if p)


def _writable(path):
    """A folder stays itself; a file (or a path not made yet) needs its folder, where atomic writes make
    their temporary file. The language wall still limits the program to the file it was granted."""
    return path if os.path.isdir(path) else os.path.dirname(path)


def _under(path, folder):
    return os.path.commonpath([path, folder]) == folder


def clean_environment(p):
    """Remove what `env` does not grant from os.environ, the C environment (what child processes get)
    and the memory block the kernel filled at start (/proc/self/environ)."""
    if p.env is True:
        return
    keep = KEEP_ENV | LAUNCH_ENV | set(p.env) | \
        (NET_ENV | {k.upper() for k in NET_ENV} if p.net else set()) | (RUN_ENV if p.execute else set())
    kept = {k: v for k, v in os.environ.items()
            if k in keep or k.startswith(KEEP_ENV_PREFIXES + LAUNCH_ENV_PREFIXES)}
    import posix

    for name in list(os.environ):
        if name not in kept:
            del os.environ[name]                  # also unsetenv()
    for name in list(posix.environ):              # os.environ was copied from it at start
        if os.fsdecode(name) not in kept:
            del posix.environ[name]
    for name, value in kept.items():
        os.putenv(name, value)                    # a fresh copy, so nothing points into the old block
    _wipe_initial_environment()


PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4


def drop_capabilities():
    """Empty the capability bounding set and the ambient set (prctl(2)), so nothing the program starts
    gains a capability, even when apsi runs as root (CI does). Without CAP_SETPCAP (an ordinary user)
    the bounding set cannot change, and holds nothing the user could use anyway."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        return
    ulong = ctypes.c_ulong
    libc.prctl(ulong(PR_CAP_AMBIENT), ulong(PR_CAP_AMBIENT_CLEAR_ALL), ulong(0), ulong(0), ulong(0))
    for cap in range(last + 1):
        libc.prctl(ulong(PR_CAPBSET_DROP), ulong(cap), ulong(0), ulong(0), ulong(0))


def remove_denied_environment(grants):
    """Variables a --deny-env flag (or deny key) names leave the environment before the program runs,
    so programs it starts do not inherit them even where `env` is granted whole (clean_environment
    keeps everything then), and with the kernel's wall switched off."""
    denied = [k for k in os.environ if grants.denies("env", name=k) and not _launch_variable(k)]
    if not denied:
        return
    import posix

    for name in denied:
        del os.environ[name]                      # also unsetenv(): the C environment children get
        posix.environ.pop(os.fsencode(name), None)
    for name, value in os.environ.items():        # fresh copies, so nothing points into the old block
        os.putenv(name, value)
    _wipe_initial_environment()


def _launch_variable(name):
    """torchrun's variables stay in the process even under --deny-env: without them a worker would not
    find the others (the language still refuses the program reading them)."""
    return name in LAUNCH_ENV or name.startswith(LAUNCH_ENV_PREFIXES)


def _wipe_initial_environment():
    """Zero the strings the kernel placed at start (env_start..env_end of /proc/self/stat): without
    this, the removed variables would stay readable in this process's memory."""
    try:
        with open("/proc/self/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        start, end = int(fields[47]), int(fields[48])        # fields 50 and 51: env_start, env_end
    except (OSError, ValueError, IndexError):
        return
    if 0 < start < end and end - start < (1 << 24):
        import ctypes

        ctypes.memset(start, 0, end - start)


def apply(grants):
    """Confine this process for the program about to run under `grants`. Returns the Landlock ABI
    version enforced, or 0 (not needed, switched off, or the kernel has no Landlock)."""
    remove_denied_environment(grants)
    if not needed(grants):
        return 0
    p = policy(grants)
    clean_environment(p)
    version = landlock.abi()
    if not (version or seccomp.supported()):
        return 0
    _only_thread()
    drop_capabilities()
    try:
        if version:
            ruleset(p, version).restrict_self()
        seccomp.install(NET_SOCKETS if p.net else (), memfd=p.execute)
    except OSError as e:
        from apsi_lang.errors import ApsiError

        raise ApsiError(f"apsi could not confine this program ({e.strerror}); set "
                        f"{SWITCH}=1 to run it without the kernel's sandbox (the language's checks "
                        "still apply)") from None
    return version


def ruleset(p, version):
    """The Landlock ruleset for policy `p` on a kernel with this ABI version."""
    def rights(*names):
        return landlock.mask(landlock.FS, names, version)

    fs = rights(*HANDLED)
    if p.read is None:
        fs &= ~rights(*READ)
    if p.write is None:       # but REFER stays handled: see below
        fs &= ~rights(*WRITE, *SPECIAL, "make_char", "make_block")
        fs |= rights("refer")
    if p.execute:
        fs &= ~rights("execute")
    # TCP only with `net`: connecting and listening (use web's servers), on its ports when it names them
    any_port = p.net and p.ports is None
    net = 0 if any_port else landlock.mask(landlock.NET, ("bind_tcp", "connect_tcp"), version)
    # no signals to processes outside this one and its children, no abstract unix sockets (X11, D-Bus)
    scoped = landlock.mask(landlock.SCOPE, ("abstract_unix_socket", "signal"), version)
    rules = landlock.Ruleset(fs, net, scoped)
    for path in p.read or ():
        rules.allow_path(path, rights(*READ))
    for path in p.write or ():
        rules.allow_path(path, rights(*WRITE, *(SPECIAL if p.execute else ())))
    for port in (p.ports or ()) if p.net else ():
        rules.allow_port(port, landlock.mask(landlock.NET, ("bind_tcp", "connect_tcp"), version))
    if p.write is None and version >= 2:
        # REFER is refused by every ruleset unless a rule grants it, handled or not (landlock.h)
        rules.allow_path("/", rights("refer"))
    return rules


def _only_thread():
    """Landlock restricts the calling thread and what it starts later: apsi must confine itself before
    any other thread exists, or an unconfined thread could run code for a confined one."""
    try:
        tasks = len(os.listdir("/proc/self/task"))
    except OSError:
        tasks = 1
    import threading

    if tasks != 1 or threading.current_thread() is not threading.main_thread():
        raise RuntimeError(f"confine.apply must run on the only thread ({tasks} threads are running)")


def describe():
    """(status, text) for `apsi doctor`: whether programs without `python` run confined here."""
    version = landlock.abi()
    if disabled():
        return "off", f"switched off by {SWITCH}=1: only the language's checks protect you"
    sockets = " and a socket filter" if seccomp.supported() else ""
    if version:
        return "on", (f"Landlock ABI {version}{sockets}: programs without `python` run confined (files, "
                      f"{'TCP, ' if version >= 4 else ''}sockets, programs, environment)")
    if sockets:
        return "none", ("this kernel has no Landlock: programs without `python` are kept from sockets, "
                        "for files only the language's checks protect you")
    return "none", "this kernel has no Landlock: only the language's checks protect you"
