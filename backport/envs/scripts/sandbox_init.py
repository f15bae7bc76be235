"""Start a command in a sandbox: user, PID and mount namespaces of its own.

Run by ``backport`` with its own interpreter (``python -I -S``); standard library only.

    sandbox_init.py [OPTION PATH]... [--lifeline FD] -- COMMAND...
    sandbox_init.py [OPTION PATH]... --check

OPTION is ``--writable``, ``--private``, ``--cover``, ``--visible`` or ``--hide``. The init
mounts its own ``/proc``, lays out the mounts (:func:`lay_out`), covers the hidden places and
block devices, drops every capability, runs COMMAND and exits with it. It dies with this process
and when the ``--lifeline`` pipe reads EOF. A test forked from a warm worker gets its own view
in :func:`confine`. ``--check`` exits 0 when all of that works, else 1 with the reason on stderr
(``BACKPORT_SANDBOX_REFUSE=1`` makes it refuse, for tests).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import signal
import stat
import sys
import threading

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG = 1
START_FAILED = 125  # the sandbox could not be made (the reason is on stderr)
CANNOT_RUN = 127  # COMMAND could not be started
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
               "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME,
               "strictatime": MS_STRICTATIME}
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
DEV_MOUNTS = ("/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/hugepages")
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (Linux 5.12)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
PRIVATE, COVER, WRITABLE, VISIBLE, HIDE = "--private", "--cover", "--writable", "--visible", "--hide"
USERNS_VAR = "BACKPORT_SANDBOX_USERNS"  # the descriptor of the tests' user namespace
REFUSE_VAR = "BACKPORT_SANDBOX_REFUSE"
NO_SETATTR_VAR = "BACKPORT_SANDBOX_NO_SETATTR"  # take the older kernels' path (for tests)

_libc = ctypes.CDLL(None, use_errno=True)


def _fail(message: str, code: int = START_FAILED) -> None:
    os.write(2, f"backport sandbox: {message}\n".encode("utf-8", "replace"))
    os._exit(code)


def _call(what: str, result: int) -> None:
    if result != 0:
        err = ctypes.get_errno()
        _fail(f"{what}: {os.strerror(err)}")


def _map_user(proc: str, uid: int, gid: int) -> None:
    """Map ``uid`` and ``gid`` to themselves in the user namespace of ``proc``."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        fd = os.open(f"{proc}/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def enter() -> None:
    """Unshare the user, PID and mount namespaces; the caller keeps its uid and gid."""
    uid, gid = os.getuid(), os.getgid()  # before the namespace, where they are not mapped yet
    _call("unshare", _libc.unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS))
    try:
        _map_user("/proc/self", uid, gid)
    except OSError as exc:
        _fail(f"cannot map the user into the namespace: {exc.strerror}")


def tests_user_namespace() -> None:
    """A mapped user namespace for forked tests to enter, held by ``$BACKPORT_SANDBOX_USERNS``."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        _call("unshare", _libc.unshare(CLONE_NEWUSER))
        os.write(ready_w, b"x")
        os.read(go_r, 1)
        os._exit(0)
    try:
        if os.read(ready_r, 1) != b"x":
            _fail("cannot make the tests' user namespace")
        _map_user(f"/proc/{helper}", os.getuid(), os.getgid())
        held = os.open(f"/proc/{helper}/ns/user", os.O_RDONLY)
    except OSError as exc:
        _fail(f"cannot make the tests' user namespace: {exc.strerror}")
    os.write(go_w, b"x")
    os.waitpid(helper, 0)
    for fd in (ready_r, ready_w, go_r, go_w):
        os.close(fd)
    os.set_inheritable(held, True)
    os.environ[USERNS_VAR] = str(held)


def hide(places: list[str]) -> None:
    """Cover each place and every block device: an empty read-only tmpfs over a folder, the
    null device over anything else."""
    blocks = []
    for root, dirs, files in os.walk("/dev"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in DEV_MOUNTS]
        for name in files:
            path = os.path.join(root, name)
            try:
                if stat.S_ISBLK(os.lstat(path).st_mode):
                    blocks.append(path)
            except OSError:
                continue
    for place in [*places, *blocks]:
        try:
            mode = os.stat(place).st_mode
        except OSError:
            continue
        target = place.encode("utf-8", "surrogateescape")
        if stat.S_ISDIR(mode):
            _call(f"hide {place}", _libc.mount(b"tmpfs", target, b"tmpfs",
                                               MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                               b"size=4k,mode=0700"))
        else:
            _call(f"hide {place}", _libc.mount(b"/dev/null", target, None, MS_BIND, None))


def drop_privileges() -> None:
    """Give up every capability for good, so no command can make the mounts writable again."""
    _call("no_new_privs", _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # past this kernel's last capability
                break
            _fail(f"drop capability {cap}: {os.strerror(ctypes.get_errno())}")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # none before Linux 4.3
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    _call("capset", _libc.capset(header, (ctypes.c_uint32 * 6)()))


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _setattr(path: str, attr_set: int, attr_clr: int) -> bool:
    """``mount_setattr(2)`` on ``path`` and the mounts below it; False where the kernel lacks it."""
    if os.environ.get(NO_SETATTR_VAR) == "1":
        return False
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    result = _libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE,
                           ctypes.byref(attr), ctypes.sizeof(attr))
    if result != 0:
        err = ctypes.get_errno()
        if err == errno.ENOSYS:
            return False
        _fail(f"mount_setattr {path}: {os.strerror(err)}")
    return True


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts() -> list[tuple[str, int]]:
    """Every mount point of this namespace with the flags a remount must keep."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            fields = line.split()
            flags = 0
            for option in fields[5].split(","):
                flags |= MOUNT_FLAGS.get(option, 0)
            found.append((_unescape(fields[4]), flags))
    return found


def _remount_each(read_only: bool, under: str | None = None) -> None:
    """Remount every mount (below ``under``, when given) read-only or writable, one by one."""
    for point, flags in _mounts():
        if under is not None and point != under and not point.startswith(under.rstrip("/") + "/"):
            continue
        extra = MS_RDONLY if read_only else 0
        if _libc.mount(None, point.encode("utf-8", "surrogateescape"), None,
                       MS_REMOUNT | MS_BIND | flags | extra, None) != 0:
            err = ctypes.get_errno()
            if err == errno.ENOENT:
                continue  # under a mount laid over it: out of reach
            if err in (errno.EACCES, errno.EPERM) and point.startswith(("/proc", "/sys")):
                continue  # a kernel file system the namespace may not touch: not a file store
            _fail(f"remount {point}: {os.strerror(err)}")


def _under(path: str, folders: list[str]) -> bool:
    return any(path != f and path.startswith(f.rstrip("/") + "/") for f in folders)


def _depth(op: tuple[str, str]) -> tuple[int, str]:
    return len([part for part in op[1].split("/") if part]), op[1]


def lay_out(ops: list[tuple[str, str]]) -> None:
    """Mount as ``ops`` say: a tmpfs on each private or covered folder, writable and visible
    paths inside brought back; then all read-only but private and writable places."""
    try:
        here = os.getcwd()
    except OSError:
        here = ""
    hiding = [p for kind, p in ops if kind in (PRIVATE, COVER)]
    held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for kind, p in ops  # before any covering
            if kind in (WRITABLE, VISIBLE) and _under(p, hiding) and os.path.lexists(p)}
    opened = [p for kind, p in ops if kind in (PRIVATE, WRITABLE)]
    made: dict[str, bool] = {}  # each mount made so far: whether a tmpfs of ours
    mounted = [op for op in sorted(ops, key=_depth) if _mount(*op, held, opened, made)]
    for fd in held.values():
        os.close(fd)
    _set_read_only(mounted)
    try:
        os.chdir(here or "/")
    except OSError:
        os.chdir("/")  # covered: nothing of it is seen here


def _mount(kind: str, path: str, held: dict[str, int], opened: list[str],
           made: dict[str, bool]) -> bool:
    """Mount one place of :func:`lay_out`; False where nothing needs mounting."""
    target = path.encode("utf-8", "surrogateescape")
    if kind in (PRIVATE, COVER):
        if not os.path.isdir(path) and not _mount_point(path, None, made):
            return False  # a temporary folder this host does not have
        options = b"mode=1777" if kind == PRIVATE else b"mode=0755,size=64k"
        _call(f"mount {path}", _libc.mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV,
                                           options))
        made[path] = True
        return True
    if path in held:
        if not _mount_point(path, held[path], made):
            return False
        source = f"/proc/self/fd/{held[path]}".encode()
    elif kind == WRITABLE or _under(path, opened):
        source = target  # set apart where it is
    else:
        return False  # read-only already, where it is
    _call(f"bind {path}", _libc.mount(source, target, None, MS_BIND | MS_REC, None))
    made[path] = False
    return True


def _mount_point(path: str, fd: int | None, made: dict[str, bool]) -> bool:
    """An empty folder or file to mount on at ``path``, made only in a tmpfs of ours."""
    if os.path.lexists(path):
        return True
    inside = [m for m in made if _under(path, [m])]
    if not inside or not made[max(inside, key=len)]:
        return False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if fd is None or stat.S_ISDIR(os.fstat(fd).st_mode):
        os.mkdir(path, 0o755)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return True


def _set_read_only(mounted: list[tuple[str, str]]) -> None:
    """Every mount read-only, then each of ``mounted`` (outermost first) as its option says."""
    if _setattr("/", MOUNT_ATTR_RDONLY, 0):
        for kind, path in mounted:
            if kind in (PRIVATE, WRITABLE):
                _setattr(path, 0, MOUNT_ATTR_RDONLY)
            else:
                _setattr(path, MOUNT_ATTR_RDONLY, 0)
        return
    _remount_each(read_only=True)
    for kind, path in mounted:
        _remount_each(read_only=kind not in (PRIVATE, WRITABLE), under=path)


def _watch_lifeline(fd: int) -> None:
    """End the namespace (this init) when the lifeline's writer, backport, is gone."""
    def watch() -> None:
        try:
            while os.read(fd, 512):
                pass
        finally:
            os._exit(137)
    threading.Thread(target=watch, daemon=True).start()


_null = -1  # the null device, opened before the namespace exists (see main)


def _devnull_stdio() -> None:
    """Let go of the command's stdin and stdout, so its reader sees EOF when it ends."""
    os.dup2(_null, 0)
    os.dup2(_null, 1)


def set_up(ops: list[tuple[str, str]], hidden: list[str]) -> None:
    """In the init: mounts stay in this namespace, ``/proc`` becomes its own, then the view."""
    _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)  # best effort: already private
    _call("mount /proc", _libc.mount(b"proc", b"/proc", b"proc",
                                     MS_NOSUID | MS_NODEV | MS_NOEXEC, None))
    tests_user_namespace()
    lay_out(ops)
    hide(hidden)
    drop_privileges()


def init(command: list[str], ops: list[tuple[str, str]], hidden: list[str], lifeline: int,
         report: int) -> None:
    """The namespace's pid 1: start ``command``, reap, exit with its status (never returns)."""
    set_up(ops, hidden)
    child = os.fork()
    if child == 0:
        if lifeline >= 0:
            os.close(lifeline)
        os.close(report)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; COMMAND must not
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            _fail(f"cannot run {command[0]}: {exc.strerror}", CANNOT_RUN)
    _devnull_stdio()
    if lifeline >= 0:
        _watch_lifeline(lifeline)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            status = CANNOT_RUN << 8
            break
        if pid == child:
            break
    os.write(report, f"{status}\n".encode())
    os._exit(0)


def check(ops: list[tuple[str, str]], hidden: list[str]) -> None:
    """In the init: pid 1, own /proc, only the writable folders writable, tests confinable."""
    set_up(ops, hidden)
    if os.getpid() != 1 or os.readlink("/proc/self") != "1":
        _fail("the namespace's /proc is not its own")
    writable = [path for kind, path in ops if kind in (WRITABLE, PRIVATE) and os.path.isdir(path)]
    if "/" not in writable and (_can_create("/") or _libc.mount(
            None, b"/", None, MS_REMOUNT | MS_BIND, None) == 0):
        _fail("/ is still writable")
    for path in writable:
        if not _can_create(path):
            _fail(f"{path} is not writable")
    child = os.fork()
    if child == 0:
        confine([PRIVATE, "/tmp"] if os.path.isdir("/tmp") else [])
        os._exit(0)
    if os.waitpid(child, 0)[1] != 0:
        _fail("a test cannot be given a mount namespace of its own")
    os._exit(0)


def confine(args: list[str]) -> None:
    """In a forked test, before its code: its own mounts laid out by ``args``, no capability."""
    ops, hidden, _ = parse(args)
    held = int(os.environ.pop(USERNS_VAR, "") or -1)
    if held < 0:
        _fail(f"no {USERNS_VAR}: not started in a sandbox")
    _call("enter the tests' user namespace", _libc.setns(held, CLONE_NEWUSER))
    os.close(held)
    _call("unshare", _libc.unshare(CLONE_NEWNS))
    _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)  # best effort: already private
    lay_out(ops)
    if hidden:
        hide(hidden)
    drop_privileges()


def _can_create(folder: str) -> bool:
    # a name of its own: every check's init is pid 1, and /dev/shm is shared with the host
    probe = os.path.join(folder, f".backport-sandbox-check-{os.urandom(8).hex()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return False
        raise
    os.close(fd)
    os.unlink(probe)
    return True


def parse(args: list[str]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """The places to lay out (option, real path), those to hide, and the rest of ``args``."""
    ops: list[tuple[str, str]] = []
    hidden: list[str] = []
    while args[:1] and args[0] in (PRIVATE, COVER, WRITABLE, VISIBLE, HIDE) and len(args) > 1:
        path = os.path.realpath(args[1])
        if args[0] == HIDE:
            hidden.append(path)
        else:
            ops.append((args[0], path))
        args = args[2:]
    return ops, hidden, args


def main(args: list[str]) -> None:
    ops, hidden, args = parse(args)
    checking = args[:1] == ["--check"]
    lifeline = -1
    if args[:1] == ["--lifeline"]:
        lifeline, args = int(args[1]), args[2:]
    command = args[1:] if args[:1] == ["--"] else []
    if not checking and not command:
        _fail("usage: sandbox_init.py [OPTION PATH]... [--lifeline FD] -- COMMAND... | "
              "[OPTION PATH]... --check", 2)
    if checking and os.environ.get(REFUSE_VAR) == "1":
        _fail(f"{REFUSE_VAR}=1")
    # Opened before the namespace: later it would race the init's read-only remount (where
    # /dev/null is a plain file, the open is a writer and mount_setattr fails with EBUSY).
    global _null
    _null = os.open(os.devnull, os.O_RDWR)
    enter()
    read_end, report = os.pipe()
    init_pid = os.fork()
    if init_pid == 0:
        os.close(read_end)
        _call("prctl", _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))
        if checking:
            check(ops, hidden)
        init(command, ops, hidden, lifeline, report)
    os.close(report)
    if lifeline >= 0:
        os.close(lifeline)
    if not checking:
        _devnull_stdio()
    _, status = os.waitpid(init_pid, 0)
    reported = b"".join(iter(lambda: os.read(read_end, 64), b""))
    if checking:
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    if not reported:  # the init was killed: the lifeline ended, or someone killed it
        os._exit(128 + (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1))
    code = int(reported)
    if os.WIFSIGNALED(code):
        signal.signal(os.WTERMSIG(code), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(code))
    os._exit(os.WEXITSTATUS(code))


if __name__ == "__main__":
    main(sys.argv[1:])
