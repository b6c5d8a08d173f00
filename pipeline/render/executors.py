"""Executors the render step runs its tasks through: here, in order, or in forked worker processes.

`map(fn, tasks)` starts the work and returns its results, to iterate over and then close. A ForkPool's
workers inherit `fn` (and the object it is bound to, with all the build's rows) and the tasks through fork:
neither is pickled, only each task's result is, on its way back. The workers die with the process that forked them,
however it ends (pipeline.lifetime).
"""

from __future__ import annotations

import gc
import os
import queue
import traceback
from collections.abc import Callable, Iterable, Iterator
from multiprocessing import get_context
from typing import Any, Protocol

from pipeline.lifetime import die_with_parent


class Results(Protocol):
    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Results: ...


class Serial:
    """Runs each task in this process, as its result is asked for."""

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Results:
        return (fn(task) for task in tasks)


class WorkerFailed(RuntimeError):
    pass


class ForkPool:
    """Runs tasks in `workers` forked processes, which take the next task as they finish one; results come in completion order."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Running:
        context = get_context("fork")
        tasks = list(tasks)  # inherited by the workers, as `fn` is: only each task's number goes between processes
        taken, done = context.Value("i", 0), context.Queue()
        processes = [context.Process(target=_serve, args=(fn, tasks, taken, done, os.getpid()), daemon=True)
                     for _ in range(min(self.workers, len(tasks)))]
        for process in processes:
            process.start()
        return Running(processes, done, len(tasks))


class Running:
    """The results of tasks running in worker processes; closing it stops the workers."""

    def __init__(self, processes: list, done: Any, count: int) -> None:
        self.processes, self.done, self.count = processes, done, count

    def __iter__(self) -> Iterator[Any]:
        for _ in range(self.count):
            failed, value = self._next()
            if failed:
                raise WorkerFailed(value)
            yield value

    def _next(self) -> tuple[bool, Any]:
        while True:
            try:
                return self.done.get(timeout=1)
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in self.processes):
                    raise WorkerFailed("a render worker died") from None

    def close(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()


def _serve(fn: Callable[[Any], Any], tasks: list[Any], taken: Any, done: Any, parent: int) -> None:
    die_with_parent(parent)
    # What the worker inherited (every row of the build) stays put: the collector no longer walks it, and walking
    # it would copy every page of it out of the shared memory. The collector itself is back on (the parent may
    # have paused it): rendering makes reference cycles.
    gc.freeze()
    gc.enable()
    while True:
        with taken.get_lock():
            number = taken.value
            taken.value += 1
        if number >= len(tasks):
            return
        try:
            done.put((False, fn(tasks[number])))
        except BaseException:  # noqa: BLE001 - any failure is the parent's to raise
            done.put((True, traceback.format_exc()))
            return
