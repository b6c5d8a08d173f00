"""The stdio bridge to a sandbox container: `python -m pipeline.sandbox.attach CONTAINER`.

The probe speaks to a stdio server by spawning a command and using its stdin and stdout. For a container that command
is this bridge: it attaches to the created container's stdin, stdout and stderr (the Docker SDK's attach socket),
starts it (after attaching, so no early output is lost), then copies its own stdin to the container's and the
container's stdout and stderr to its own, until the container's output ends; it exits with the container's exit code
(so the probe sees the server's own status). When its stdin ends (the probe is done) the bridge exits at once, and the
container's stdin stays open (it is created without StdinOnce): the server runs until the backend removes it, so what
it did is still there to be read (which limit it reached) when the probe asks.

The bridge runs on the host, with an environment of its own making (the backend gives it PYTHONPATH and LANG): nothing of
the pipeline's environment reaches it but where the daemon is (DOCKER_HOST and its TLS settings, when set), and
nothing reaches the container but the job's. The container is removed by
the backend when the probe ends, not by the bridge: killing the bridge stops nothing but the copying.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import threading

import docker

WAIT_SECONDS = 5  # after its output ended, how long to wait for the container's exit status
STDERR_CAP = 16 * 1024 * 1024  # what of a server's stderr reaches our log, which is on the host's disk; the rest is dropped


def main(container_id: str) -> int:
    client = docker.from_env(timeout=30)
    container_id = _fresh(client, container_id)
    attached = client.api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
    sock: socket.socket = getattr(attached, "_sock", attached)
    sock.settimeout(None)  # the client's API timeout is no bound on how long a server may stay quiet
    client.api.start(container_id)
    threading.Thread(target=_copy_stdin, args=(sock,), daemon=True).start()
    try:
        _copy_output(sock)
    except BrokenPipeError:
        return 1  # the probe stopped reading: it is done with the server
    try:
        return int(client.api.wait(container_id, timeout=WAIT_SECONDS).get("StatusCode", 1))
    except Exception:
        return 1


def _fresh(client, container_id: str) -> str:
    """The container to start: the one given, the first time; a new one made like it each later time (a probe may
    start a stdio server more than once, each time afresh). The backend removes them all, by their session label."""
    found = client.api.inspect_container(container_id)
    if found["State"]["Status"] == "created":
        return container_id
    config = {**found["Config"], "HostConfig": found["HostConfig"]}
    return client.api.create_container_from_config(config)["Id"]


def _copy_stdin(sock: socket.socket) -> None:
    try:
        while chunk := os.read(0, 65536):
            sock.sendall(chunk)
    except OSError:
        return  # the container's side closed: its output loop ends the bridge
    os._exit(0)


def _copy_output(sock: socket.socket) -> None:
    """The attach stream without a terminal: frames of an 8-byte header (stream 1 stdout, 2 stderr; big-endian size)."""
    logged = 0
    while header := _read(sock, 8):
        kind, size = struct.unpack(">BxxxL", header)
        payload = _read(sock, size)
        if kind != 2:
            _write(1, payload)
        elif logged < STDERR_CAP:  # past the cap a flood of stderr is read and dropped: the server still answers on stdout
            _write(2, payload[: STDERR_CAP - logged])
            logged += len(payload)
        if len(payload) < size:
            return


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
