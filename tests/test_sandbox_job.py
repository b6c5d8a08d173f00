"""The job the probe hands a sandbox backend for a launch: what runs inside, on which port, at which path."""

from __future__ import annotations

import pytest

from pipeline.models import LaunchSpec
from pipeline.probe.sandbox import IsolatedSandbox
from pipeline.sandbox import ResourceLimits
from pipeline.sandbox.install import Installed

LIMITS = ResourceLimits(memory_mb=256, pids=32, cpu_seconds=10, disk_mb=16)


@pytest.mark.parametrize(("url", "port", "path"), [
    ("http://127.0.0.1:3000/mcp", 3000, "/mcp"),  # a server that always listens on its own port
    ("http://127.0.0.1:{port}/sse", 8000, "/sse"),  # ours, handed to it through {port}
])
def test_an_http_launch_listens_inside_on_the_port_its_url_names(tmp_path, url, port, path):
    spec = LaunchSpec(registry="npm", package="x", command="x", transport="streamable-http", url=url, args=["--port", "{port}"])
    installed = Installed(ok=True, executable=tmp_path / "bin" / "x", prefix=tmp_path)
    job = IsolatedSandbox(backend=None, start_timeout=1.0, limits=LIMITS).job(spec, installed, tmp_path)  # type: ignore[arg-type]
    assert (job.port, job.url_path, job.argv[-1]) == (port, path, "8000")
