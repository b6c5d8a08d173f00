"""Start bubblewrap as a uid that owns nothing on the host, from a clean environment (run as a script: `python -I -S`).

Run as root (by the probe's guardian, or the backend itself), with one argument: the path of a spec written by
`bubblewrap.py` in the backend's scratch directory (out of the sandbox's sight; a spec can outgrow one argument).
Standard library only, and nothing of the pipeline imported: this process starts many times per run and must not
read the pipeline's environment or files. In order, it

- joins the sandbox's cgroups (memory, pids) and sets its rlimits (inherited by everything the server starts);
- makes a mount namespace of its own and mounts a fresh tmpfs on /tmp (the stage): the host paths the sandbox needs
  (an install prefix under a 0700 home, the relay's socket directory, ...) are opened first, then bind-mounted onto
  the stage, whose parents the unprivileged uid can traverse. bubblewrap resolves its sources by path, so an open
  directory fd alone (`--ro-bind-fd`) would not get it through a directory it may not enter. Small files (a fake
  passwd, files placed inside before the start) are written to the stage too;
- drops every group and becomes the sandbox's uid and gid (one per concurrent sandbox, so RLIMIT_NPROC bounds each);
- execs bubblewrap with an empty environment: bubblewrap's helper is pid 1 inside, and its /proc/1/environ is
  readable there.

In bubblewrap's argument list, an argument "@stage:NAME" becomes the staged path of NAME and "@fd:NAME" an open fd
of the staged file NAME (for `--file`, which copies it into a writable tmpfs).
"""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
STAGE = "/tmp"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)), f"mount {target}")


def _stage(sources: dict[str, str], files: dict[str, str]) -> None:
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the host
    # Opened in this namespace (a bind mount's source must be), before the stage hides /tmp.
    opened = {name: os.open(path, os.O_PATH | os.O_CLOEXEC) for name, path in sources.items()}
    _mount("stage", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for name, fd in opened.items():
        target = os.path.join(STAGE, name)
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
        os.close(fd)
    os.mkdir(os.path.join(STAGE, "files"))
    for name, text in files.items():
        with open(os.path.join(STAGE, "files", name), "wb") as fh:
            fh.write(bytes.fromhex(text))


def _argument(arg: str) -> str:
    if arg.startswith("@stage:"):
        return os.path.join(STAGE, arg[7:])
    if arg.startswith("@fd:"):
        fd = os.open(os.path.join(STAGE, "files", arg[4:]), os.O_RDONLY)
        os.set_inheritable(fd, True)
        return str(fd)
    return arg


def main(spec: dict) -> None:
    for procs in spec["cgroups"]:
        with open(procs, "w") as fh:
            fh.write(str(os.getpid()))
    for name, (soft, hard) in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    _stage(spec["stage"], spec["files"])
    argv = [_argument(arg) for arg in spec["bwrap"]]
    os.setgroups([])
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.chdir("/")
    os.execve(argv[0], argv, {})


if __name__ == "__main__":
    try:
        with open(sys.argv[1], "rb") as spec:
            main(marshal.load(spec))  # written by the backend itself; marshal, as json would double the start time
    except OSError as exc:
        os.write(2, f"sandbox launcher: {exc}\n".encode())
        os._exit(125)
