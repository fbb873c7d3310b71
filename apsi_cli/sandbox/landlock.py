"""Linux Landlock through ctypes: ask the kernel's ABI version, build a ruleset, restrict this thread.

Landlock (Linux >= 5.13) lets an unprivileged process give up access rights for good: it names the
rights it *handles*, then allows some of them beneath listed paths (and TCP ports); everything else in
the handled set is refused with EACCES from then on, for this thread, the threads it starts later and
every process it executes. The kernel's own description: Documentation/userspace-api/landlock.rst
(https://docs.kernel.org/userspace-api/landlock.html); constants from include/uapi/linux/landlock.h.

This module is only the system interface; apsi_cli/sandbox/confine.py decides what a program may touch.
"""

import ctypes
import os
import sys

# Syscall numbers: the same on every architecture that uses the generic table (they were added after
# the tables were unified); alpha, mips and ia64 differ and are not supported here.
_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
_MACHINES = {"x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv8l", "riscv64",
             "ppc64le", "ppc64", "s390x", "loongarch64"}

CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, with the ABI version that introduced each.
FS = {
    "execute": (1 << 0, 1), "write_file": (1 << 1, 1), "read_file": (1 << 2, 1), "read_dir": (1 << 3, 1),
    "remove_dir": (1 << 4, 1), "remove_file": (1 << 5, 1), "make_char": (1 << 6, 1),
    "make_dir": (1 << 7, 1), "make_reg": (1 << 8, 1), "make_sock": (1 << 9, 1), "make_fifo": (1 << 10, 1),
    "make_block": (1 << 11, 1), "make_sym": (1 << 12, 1), "refer": (1 << 13, 2), "truncate": (1 << 14, 3),
    "ioctl_dev": (1 << 15, 5),
}
# The rights that mean something on a file (not a folder): a rule on a file may grant only these.
FILE_RIGHTS = ("execute", "write_file", "read_file", "truncate", "ioctl_dev")
NET = {"bind_tcp": (1 << 0, 4), "connect_tcp": (1 << 1, 4)}
SCOPE = {"abstract_unix_socket": (1 << 0, 6), "signal": (1 << 1, 6)}


class LandlockError(OSError):
    """A Landlock call failed where the kernel said it supports Landlock."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1            # the kernel's struct is __attribute__((packed)): 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = None


def _syscall(name, *args):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    # syscall() reads every argument as a long: pass them so, never as a narrower C int
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = _libc.syscall(ctypes.c_long(_SYSCALLS[name]), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock_{name}: {os.strerror(err)}")
    return result


def abi():
    """The kernel's Landlock ABI version (1, 2, …), or 0 where there is none: not Linux, an
    unsupported architecture, a kernel without Landlock, Landlock not enabled at boot, or a
    seccomp filter (some containers) that refuses the call."""
    if not sys.platform.startswith("linux") or os.uname().machine.lower() not in _MACHINES:
        return 0
    try:
        return int(_syscall("create_ruleset", None, 0, CREATE_RULESET_VERSION))
    except (LandlockError, OSError, AttributeError):
        return 0


def mask(table, names, version):
    """The bit mask of `names` from `table`, keeping only the rights this ABI version knows."""
    bits = 0
    for name in names:
        bit, since = table[name]
        if version >= since:
            bits |= bit
    return bits


class Ruleset:
    """An open Landlock ruleset: add rules, then `restrict_self()` (which closes it)."""

    def __init__(self, handled_fs, handled_net=0, scoped=0):
        attr = _RulesetAttr(handled_fs, handled_net, scoped)
        self.handled_fs = handled_fs
        self.handled_net = handled_net
        self.fd = _syscall("create_ruleset", ctypes.byref(attr), ctypes.sizeof(attr), 0)

    def allow_path(self, path, rights):
        """Allow `rights` (a mask) beneath `path`; on a file, only the file rights are kept.
        Returns False (and adds nothing) when the path does not exist or cannot be opened."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not _is_dir(fd):
                rights &= mask(FS, FILE_RIGHTS, 99)
            rights &= self.handled_fs
            if not rights:
                return False
            attr = _PathBeneathAttr(rights, fd)
            _syscall("add_rule", self.fd, RULE_PATH_BENEATH, ctypes.byref(attr), 0)
            return True
        finally:
            os.close(fd)

    def allow_port(self, port, rights):
        attr = _NetPortAttr(rights & self.handled_net, port)
        _syscall("add_rule", self.fd, RULE_NET_PORT, ctypes.byref(attr), 0)

    def restrict_self(self):
        """Enforce the ruleset on the calling thread (and what it starts later), for good.
        no_new_privs first: Landlock requires it of unprivileged processes, and it means no set-user-ID
        program run later can gain privileges."""
        try:
            if _libc.prctl(*[ctypes.c_ulong(a) for a in (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)]) != 0:
                err = ctypes.get_errno()
                raise LandlockError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
            _syscall("restrict_self", self.fd, 0)
        finally:
            os.close(self.fd)


def _is_dir(fd):
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)
