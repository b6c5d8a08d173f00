"""Nothing the pipeline starts outlives it: every process it starts dies with it, even when it is killed with SIGKILL.

Python's own children (render and score workers, forked) call `die_with_parent` first thing: Linux's PR_SET_PDEATHSIG
has the kernel kill them when the process that started them dies, however it dies.

Other programs (the servers a probe starts, installers, the build's snapshot copy, Datasette) are started through
`guarded`, which runs them under a guardian: this file, run as a script, with the standard library only. A death signal
on the program itself would not be enough: a server started by `npx` is node, a grandchild, and a server may start
daemons of its own that leave its process group or are orphaned on purpose. (The snapshot copy is Python, but a spawned
multiprocessing child imports the whole CLI before it could ask for a death signal: a build killed in that second
would leave it running.) The guardian

- asks for END_SIGNAL when the pipeline dies (PR_SET_PDEATHSIG; then checks that its parent is still the pipeline, so
  no start is left unguarded), and is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the program starts and
  then abandons becomes the guardian's child instead of init's;
- forks, and the child (with a death signal of its own, SIGKILL, should the guardian be killed outright) execs the
  program, with the file-size limit the sandbox asks for (`max_file_bytes`, RLIMIT_FSIZE, inherited by everything it
  starts);
- on END_SIGNAL, or once the program exits, kills every process descended from it (found through /proc's parent
  links, round after round until none is left alive), and exits as the program did (its code, or its signal), so the
  caller sees the program's own exit status.

The guardian ignores SIGTERM, SIGINT and SIGHUP: the program shares its process group, and a group's SIGTERM is the
program's to answer; the guardian ends the rest when it exits. A caller that gives up on a program sends END_SIGNAL
to the guardian (`end`) before it falls back to SIGKILL for the whole group.

The guardian costs one small Python process per program (about 11 MB resident, 30 ms to start). Its death signal is
tied to the thread that started it (so is every PR_SET_PDEATHSIG): the probe starts servers from the event loop's
thread, the installer from threads that wait for them, and render and score workers are started by the main thread.
Linux only, as the rest of the sandbox: prctl and /proc.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

END_SIGNAL = signal.SIGUSR1
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GUARDIAN = os.path.abspath(__file__)
_IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_RESET = (END_SIGNAL, *_IGNORED, signal.SIGPIPE, signal.SIGXFSZ)  # Python ignores the last two, and exec would pass that on


def guarded(argv: Sequence[str], max_file_bytes: int | None = None) -> list[str]:
    """The command line that runs `argv` under a guardian tied to this process (and, given `max_file_bytes`, with no
    file it writes larger than that). Python runs the guardian isolated (-I) and without site (-S), so nothing in the
    program's working directory (a `resource.py` planted by an earlier start) is imported, and it starts fast."""
    return [sys.executable, "-I", "-S", GUARDIAN, str(os.getpid()), str(max_file_bytes or 0), *argv]


def die_with_parent(parent: int) -> None:
    """In a child process of ours: be killed when `parent` (the process that started this one) dies."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # it died before the death signal was asked for


def end(pid: int) -> None:
    """Ask the guardian `pid` to kill its program and everything the program started."""
    try:
        os.kill(pid, END_SIGNAL)
    except (ProcessLookupError, PermissionError):
        pass


def _prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value}) failed")


def descendants(root: int) -> list[int]:
    """Every live (not yet exited) process descended from `root`, from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, frontier = [], [root]
    while frontier:
        frontier = [child for pid in frontier for child in children.get(pid, [])]
        found += frontier
    return found


def _kill_descendants() -> None:
    """SIGKILL everything below the guardian. A killed process's children come to the guardian (the subreaper) as it
    exits, so the rounds go on until none is left alive; a process stuck in the kernel ends them after two seconds."""
    deadline = time.monotonic() + 2
    while (found := descendants(os.getpid())) and time.monotonic() < deadline:
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)


def _guard(parent: int, max_file_bytes: int, argv: list[str]) -> NoReturn:
    signal.signal(END_SIGNAL, lambda *_: _kill_descendants())
    for sig in _IGNORED:
        signal.signal(sig, signal.SIG_IGN)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, END_SIGNAL)
    if os.getppid() != parent:
        os._exit(1)  # the pipeline died before the death signal was asked for: start nothing
    program = os.fork()
    if program == 0:
        for sig in _RESET:
            signal.signal(sig, signal.SIG_DFL)
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if max_file_bytes:
                resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"cannot execute {argv[0]}: {exc}\n".encode())
        os._exit(127)
    if os.getppid() != parent:
        _kill_descendants()  # the pipeline died between the check above and the fork
    # The program's stdin and stdout are pipes its caller reads to the end: only the program may hold them open.
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    status = _reap_until(program)
    _kill_descendants()
    _exit_as(status)


def _reap_until(program: int) -> int:
    """Reap children (the program, and orphans the guardian inherits) until the program has exited; its wait status."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program:
            return status


def _exit_as(status: int) -> NoReturn:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program's core, if any, was its own to leave
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal whose default is not to end a process cannot have ended it; should it have, say so
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    _guard(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
