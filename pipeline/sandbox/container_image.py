"""The Docker backend's base image: an almost empty root filesystem, built here, with the host's system shown read-only.

The daemon may not pull images (none can be fetched on the machines this runs on), so the base image is made locally:
a root filesystem of a few kilobytes, generated in Python and brought in with `docker import` (no registry, no
network). It holds the sandbox user's passwd and group entries, an nsswitch.conf, the mount points, and the host's
merged-/usr symlinks (/bin -> usr/bin ...). Everything else a server runs on is the host's own Debian system, bind-mounted
read-only at run time at the same paths (`system_mounts`): /usr, the /lib* directories where they are not symlinks,
the CA certificates, the alternatives links, the loader cache, and the prefix of the Python that created the install
venvs when it lives outside /usr.

Why not an image built from Debian packages (debootstrap)? The servers were installed on the host, by the host's node
and Python, against the host's libraries: they must run on that same userland, or a compiled extension or a node
built for one libc would fail inside for reasons that say nothing about the server. Showing the host's system paths is
also what the bubblewrap backend does, so both backends run a server on the same files and their results compare.
Building a Debian root would take minutes and hundreds of megabytes, and would still need the host's interpreter.

The image's tag is a hash of its content, so it is built once and rebuilt only when the content changes (another
sandbox user, another host layout).
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path

from pipeline.sandbox import venv_home

REPOSITORY = "mcp-scoreboard-sandbox"
SANDBOX_UID = 65534  # "nobody": owns nothing on the host; no user namespace remap, so this uid IS the host's uid 65534
SANDBOX_GID = 65534
_ROOT_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_SHOWN = ("/etc/ssl", "/etc/ca-certificates", "/etc/alternatives", "/etc/ld.so.cache")
_EMPTY_DIRS = ("etc", "tmp", "work", "proc", "sys", "dev", "run")


def system_mounts(installs: list[Path]) -> list[str]:
    """Host paths shown read-only at the same path inside every container: the system, and the prefixes of the
    interpreters Python venvs link to (the pipeline's own, for the relay, and those named by the venvs among
    `installs`), when they are not under /usr already."""
    paths = [p for p in _ROOT_DIRS if os.path.isdir(p) and not os.path.islink(p)]
    paths += [p for p in _ETC_SHOWN if os.path.exists(p)]
    prefixes = [os.path.realpath(sys.base_prefix)]
    for install in installs:
        for cfg in (install / "pyvenv.cfg", *install.glob("*/pyvenv.cfg")):
            home = venv_home(cfg)
            if home:
                prefixes.append(os.path.dirname(os.path.realpath(home)))
    paths += [p for p in dict.fromkeys(prefixes) if p != "/usr" and not p.startswith("/usr/") and os.path.isdir(p)]
    return paths


def root_filesystem() -> bytes:
    """The base image's root filesystem as a tar archive, the same bytes for the same host layout (it is hashed)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in _EMPTY_DIRS:
            tar.addfile(_entry(name, tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755))
        for path in _ROOT_DIRS:
            if os.path.islink(path):
                tar.addfile(_entry(path.lstrip("/"), tarfile.SYMTYPE, 0o777, link=os.readlink(path)))
            elif os.path.isdir(path):
                tar.addfile(_entry(path.lstrip("/"), tarfile.DIRTYPE, 0o755))
        files = {
            "etc/passwd": f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/work:/usr/sbin/nologin\n",
            "etc/group": f"root:x:0:\nsandbox:x:{SANDBOX_GID}:\n",
            "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
        }
        for name, text in files.items():
            data = text.encode()
            tar.addfile(_entry(name, tarfile.REGTYPE, 0o644, size=len(data)), io.BytesIO(data))
    return buffer.getvalue()


def image_tag(rootfs: bytes) -> str:
    return f"{REPOSITORY}:{hashlib.sha256(rootfs).hexdigest()[:16]}"


def ensure_image(client) -> str:
    """The base image's tag, imported now unless the daemon has it already."""
    import docker.errors

    rootfs = root_filesystem()
    tag = image_tag(rootfs)
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        repository, version = tag.split(":")
        client.api.import_image_from_data(rootfs, repository=repository, tag=version)
        client.images.get(tag)  # raises when the import did not produce it
    return tag


def _entry(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, link
    info.mtime = 0
    return info

