"""A small seccomp-BPF filter through ctypes: which sockets the confined process may open.

Landlock (landlock.py) governs files and TCP ports, but not UDP, nor connecting to a Unix socket
by its path (a Docker socket is a way out of any sandbox). This filter answers `socket()` for the address
families it is given and refuses every other with EACCES; io_uring, which can open sockets without the
`socket` system call, is refused outright. It also refuses the two terminal ioctls that type into a
terminal (TIOCSTI, TIOCLINUX): standard input, opened before the confinement, keeps its rights, and
characters pushed into it would run as commands in the user's shell once apsi exits. Unless programs
may be started, memfd_create is refused too: Landlock checks the right to execute files beneath folders,
and a file made in memory is beneath none, so `execve` of one would start any program copied there.
Reference: the kernel's Documentation/userspace-api/seccomp_filter.rst (https://docs.kernel.org/userspace-api/seccomp_filter.html).
"""

import ctypes
import errno
import os
import sys

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16

# architecture -> (AUDIT_ARCH_*, socket's number, io_uring_setup/enter/register, has the x32 ABI, ioctl's,
# memfd_create's)
_ARCHES = {
    "x86_64": (0xC000003E, 41, (425, 426, 427), True, 16, 319),
    "aarch64": (0xC00000B7, 198, (425, 426, 427), False, 29, 279),
}
# Refused with EPERM whatever the grants: System V IPC (another process's shared memory, message queues
# and semaphores; Python, NumPy and PyTorch use POSIX shared memory, files under /dev/shm), the user's
# kernel keyring, and new namespaces and mounts (a process with capabilities in a new user namespace may
# sethostname, mount, and more). Numbers from the kernel's syscall tables: arch/x86/entry/syscalls/
# syscall_64.tbl and include/uapi/asm-generic/unistd.h (aarch64).
DENIED = {
    "x86_64": {"shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65,
               "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
               "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "setns": 308,
               "mount": 165, "umount2": 166, "pivot_root": 155},
    "aarch64": {"msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191,
                "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197,
                "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97, "setns": 268,
                "mount": 40, "umount2": 39, "pivot_root": 41},
}
DENIED["amd64"], DENIED["arm64"] = DENIED["x86_64"], DENIED["aarch64"]
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
_ARCHES["amd64"], _ARCHES["arm64"] = _ARCHES["x86_64"], _ARCHES["aarch64"]

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06      # BPF_LD|W|ABS, BPF_JMP|JEQ|K, …|JGE|K, BPF_RET|K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_X32_BIT = 0x40000000
# offsets in struct seccomp_data: nr, arch, args[0] and args[1] (low halves on these little-endian
# machines; ioctl's request is an unsigned int, so its low half is all the kernel reads)
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24


class _Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Instruction))]


def _machine():
    # os.uname, not the platform module: importing platform costs a few ms of every start-up
    return os.uname().machine if hasattr(os, "uname") else ""


def supported():
    return sys.platform.startswith("linux") and _machine().lower() in _ARCHES


def program(families, machine=None, memfd=False):
    """The filter as (code, jt, jf, k) tuples: a list small enough to read."""
    name = (machine or _machine()).lower()
    arch, socket_nr, uring, x32, ioctl_nr, memfd_nr = _ARCHES[name]
    code = [("ld", _ARCH), ("jeq", arch, None, "enosys"), ("ld", _NR)]
    if x32:
        code.append(("jge", _X32_BIT, "enosys", None))        # x32 numbers would slip past the checks
    code += [("jeq", nr, "eperm", None) for nr in sorted(DENIED[name].values())]
    code.append(("jeq", socket_nr, "socket", None))
    code.append(("jeq", ioctl_nr, "ioctl", None))
    if not memfd:
        code.append(("jeq", memfd_nr, "eperm", None))
    code += [("jeq", nr, "enosys", None) for nr in uring]
    code.append(("ret", _ALLOW))
    code += [("label", "ioctl"), ("ld", _ARG1), ("jeq", TIOCSTI, "eperm", None),
             ("jeq", TIOCLINUX, "eperm", None), ("ret", _ALLOW), ("label", "eperm"),
             ("ret", _ERRNO | errno.EPERM)]
    code += [("label", "socket"), ("ld", _ARG0)]
    code += [("jeq", family, "allow", None) for family in sorted(families)]
    code += [("ret", _ERRNO | errno.EACCES), ("label", "allow"), ("ret", _ALLOW),
             ("label", "enosys"), ("ret", _ERRNO | errno.ENOSYS)]
    return _assemble(code)


def _assemble(code):
    labels, out = {}, []
    for op in code:
        if op[0] == "label":
            labels[op[1]] = len(out)
        else:
            out.append(op)

    def offset(target, here):
        return 0 if target is None else labels[target] - here - 1

    result = []
    for i, op in enumerate(out):
        if op[0] == "ld":
            result.append((_LD_W_ABS, 0, 0, op[1]))
        elif op[0] == "ret":
            result.append((_RET, 0, 0, op[1]))
        else:
            result.append((_JEQ if op[0] == "jeq" else _JGE, offset(op[2], i), offset(op[3], i), op[1]))
    return result


def install(families, memfd=False):
    """Install the filter on the calling thread (inherited by what it starts). Returns False where the
    machine has no seccomp filters (or this architecture is not known here). memfd: allow memfd_create
    (a process that may start programs anyway)."""
    if not supported():
        return False
    code = program(families, memfd=memfd)
    instructions = (_Instruction * len(code))(*[_Instruction(*c) for c in code])
    prog = _Program(len(code), instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong          # prctl reads its arguments as unsigned longs
    if libc.prctl(ulong(PR_SET_NO_NEW_PRIVS), ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        return False
    if libc.prctl(ulong(PR_SET_SECCOMP), ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), ulong(0),
                  ulong(0)) != 0:
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS):      # a kernel built without seccomp filters
            return False
        raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")
    return True
