"""Failure classification of sandboxed starts, from realistic stderr tails of Node and Python servers."""

from __future__ import annotations

import pytest

from pipeline.models import ProbeOutcome
from pipeline.outcomes import sandbox_caused
from pipeline.sandbox.failures import StartAttempt, classify

NODE_PG = """\
node:internal/process/promises:289
            triggerUncaughtException(err, true /* fromPromise */);
            ^

Error: connect ECONNREFUSED 127.0.0.1:5432
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {
  errno: -111,
  code: 'ECONNREFUSED',
  syscall: 'connect',
  address: '127.0.0.1',
  port: 5432
}

Node.js v20.11.1
"""
NODE_DNS = """\
TypeError: fetch failed
    at node:internal/deps/undici/undici:12345:11
    at async GitHubClient.getUser (file:///app/dist/github.js:41:17) {
  [cause]: Error: getaddrinfo ENOTFOUND api.github.com
      at GetAddrInfoReqWrap.onlookup [as oncomplete] (node:dns:107:26) {
    errno: -3008,
    code: 'ENOTFOUND',
    syscall: 'getaddrinfo',
    hostname: 'api.github.com'
  }
}
"""
PY_DNS = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/httpx/_transports/default.py", line 69, in map_httpcore_exceptions
    yield
httpx.ConnectError: [Errno -3] Temporary failure in name resolution
"""
PY_PSYCOPG = """\
Traceback (most recent call last):
  File "/opt/venv/bin/postgres-mcp", line 8, in <module>
    sys.exit(main())
psycopg2.OperationalError: connection to server at "127.0.0.1", port 5432 failed: Connection refused
\tIs the server running on that host and accepting TCP/IP connections?
"""
PY_MONGO = "pymongo.errors.ServerSelectionTimeoutError: 127.0.0.1:27017: [Errno 111] Connection refused, Timeout: 30s\n"
PY_REDIS = "redis.exceptions.ConnectionError: Error 111 connecting to 127.0.0.1:6379. Connection refused.\n"
PY_MYSQL = "pymysql.err.OperationalError: (2003, \"Can't connect to MySQL server on '127.0.0.1' ([Errno 111] Connection refused)\")\n"
NODE_MISSING_ENV = "Error: BRAVE_API_KEY environment variable is required\n"
NODE_MISSING_TOKEN = "GITHUB_PERSONAL_ACCESS_TOKEN not set\nUsage: github-mcp-server stdio\n"
PY_KEYERROR = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/weather_mcp/server.py", line 12, in <module>
    API_KEY = os.environ["OPENWEATHER_API_KEY"]
  File "<frozen os>", line 679, in __getitem__
KeyError: 'OPENWEATHER_API_KEY'
"""
PY_SETTINGS = """\
pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings
notion_token
  Field required [type=missing, input_value={}, input_type=dict]
"""
PY_OPENAI_401 = ("openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-mock****. "
                 "You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error'}}\n")
NODE_SLACK = "Error: An API error occurred: invalid_auth\n    at platformErrorFromResult (/app/node_modules/@slack/web-api/dist/errors.js:62:33)\n"
NODE_EACCES = """\
Error: EACCES: permission denied, mkdir '/opt/install/node_modules/some-mcp/.cache'
    at Object.mkdirSync (node:fs:1379:3) {
  errno: -13,
  code: 'EACCES',
  syscall: 'mkdir',
  path: '/opt/install/node_modules/some-mcp/.cache'
}
"""
PY_EROFS = "OSError: [Errno 30] Read-only file system: '/opt/venv/lib/python3.11/site-packages/foo/cache.sqlite'\n"
PY_EPERM = "PermissionError: [Errno 1] Operation not permitted: '/sys/fs/cgroup/cpu'\n"
NODE_HEAP = """\
<--- Last few GCs --->
[27:0x6b1e000]    21023 ms: Mark-Compact 507.9 (520.2) -> 506.8 (521.0) MB
FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory
 1: 0xb85bc0 node::Abort() [node]
"""
PY_ENOSPC = "OSError: [Errno 28] No space left on device: '/work/model.bin'\n"
NODE_EAGAIN = "Error: spawn EAGAIN\n    at ChildProcess._handle.onexit (node:internal/child_process:286:19)\n"
NODE_SYNTAX = """\
file:///opt/install/node_modules/some-mcp/dist/index.js:3
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
SyntaxError: Unexpected token '??='
    at internalCompileFunction (node:internal/vm:76:18)

Node.js v14.21.3
"""
PY_IMPORT = "Traceback (most recent call last):\n  File \"/opt/venv/bin/x\", line 5, in <module>\nModuleNotFoundError: No module named 'fastmcp'\n"
NODE_STACK_LINE_401 = "Error: boom\n    at Object.<anonymous> (/app/dist/index.js:401:15)\n"


@pytest.mark.parametrize("attempt, kind, evidence", [
    (StartAttempt(exit_code=1, stderr_tail=NODE_PG), "needs_external_service", "ECONNREFUSED 127.0.0.1:5432"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_DNS), "needs_external_service", "ENOTFOUND api.github.com"),
    (StartAttempt(exit_code=1, stderr_tail=PY_DNS), "needs_external_service", "Temporary failure in name resolution"),
    (StartAttempt(exit_code=1, stderr_tail=PY_PSYCOPG), "needs_external_service", "Connection refused"),
    (StartAttempt(timed_out=True, stderr_tail=PY_MONGO), "needs_external_service", "27017"),
    (StartAttempt(exit_code=1, stderr_tail=PY_REDIS), "needs_external_service", "6379"),
    (StartAttempt(exit_code=1, stderr_tail=PY_MYSQL), "needs_external_service", "MySQL"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_MISSING_ENV), "needs_external_service", "BRAVE_API_KEY"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_MISSING_TOKEN), "needs_external_service", "GITHUB_PERSONAL_ACCESS_TOKEN"),
    (StartAttempt(exit_code=1, stderr_tail=PY_KEYERROR), "needs_external_service", "OPENWEATHER_API_KEY"),
    (StartAttempt(exit_code=1, stderr_tail=PY_SETTINGS), "needs_external_service", "validation error for Settings"),
    (StartAttempt(exit_code=1, stderr_tail=PY_OPENAI_401), "needs_external_service", "401"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_SLACK), "needs_external_service", "invalid_auth"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_EACCES), "blocked", "EACCES"),
    (StartAttempt(exit_code=1, stderr_tail=PY_EROFS), "blocked", "Read-only file system"),
    (StartAttempt(exit_code=1, stderr_tail=PY_EPERM), "blocked", "Operation not permitted"),
    (StartAttempt(exit_code=134, stderr_tail=NODE_HEAP), "resource_limit", "memory"),
    (StartAttempt(exit_code=1, stderr_tail=PY_ENOSPC), "resource_limit", "disk"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_EAGAIN), "resource_limit", "pids"),
    (StartAttempt(exit_code=-9, limit_hit="memory"), "resource_limit", "memory limit"),
    (StartAttempt(exit_code=-9, limit_hit="pids", stderr_tail=NODE_PG), "resource_limit", "pids"),  # the backend's word wins
    (StartAttempt(exit_code=1, blocked="write to /proc/1/environ", stderr_tail=NODE_PG), "blocked", "/proc/1/environ"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_SYNTAX), "crashed_on_start", "exited with code 1"),
    (StartAttempt(exit_code=1, stderr_tail=PY_IMPORT), "crashed_on_start", "No module named 'fastmcp'"),
    (StartAttempt(exit_code=1, stderr_tail=NODE_STACK_LINE_401), "crashed_on_start", "code 1"),  # a line number is not a 401
    (StartAttempt(exit_code=-11), "crashed_on_start", "signal 11"),
    (StartAttempt(), "crashed_on_start", "closed its pipes"),
    (StartAttempt(timed_out=True), "timeout", "never answered"),
    (StartAttempt(timed_out=True, stderr_tail="Server listening on stdio... waiting\n"), "timeout", "waiting"),
    (StartAttempt(install_error="npm install some-mcp@1.2.3: exit 1: npm ERR! 404 Not Found - GET some-mcp"), "install_failed", "404 Not Found"),
    (StartAttempt(install_error="some-mcp installed no command named 'some-mcp'"), "no_entry_point", "installed no command"),
    (StartAttempt(entry_point=False), "no_entry_point", "no npm bin"),
    (StartAttempt(exit_code=1, stderr_tail="bwrap: execvp some-mcp: No such file or directory\n"), "no_entry_point", "execvp"),
    (StartAttempt(stderr_tail="relay: cannot execute /opt/x/bin/srv: [Errno 2] No such file or directory: '/opt/x/bin/srv'"), "no_entry_point",
     "cannot execute"),
    (StartAttempt(exit_code=3, stderr_tail="fatal: missing configuration FOO_API_KEY\n"), "needs_external_service", "FOO_API_KEY"),
    (StartAttempt(stderr_tail="exited with code 1 before listening: Error: listen EADDRINUSE (simulated)"), "crashed_on_start", "EADDRINUSE"),
])
def test_realistic_failures_are_classified_with_their_evidence(attempt, kind, evidence):
    failure = classify(attempt)
    assert failure is not None and failure.kind == kind, failure
    assert evidence in failure.detail
    assert failure.outcome == ProbeOutcome(kind)
    if attempt.stderr_tail:
        assert failure.tail and attempt.stderr_tail.strip()[-40:] in failure.tail


def test_an_answered_start_is_no_failure_and_tails_are_bounded():
    assert classify(StartAttempt(answered=True, stderr_tail=NODE_PG)) is None
    failure = classify(StartAttempt(exit_code=1, stderr_tail="x" * 100_000 + "\nError: connect ECONNREFUSED 127.0.0.1:5432\n"))
    assert failure.kind == "needs_external_service" and len(failure.tail) <= 2000 and len(failure.detail) < 400


def test_which_runs_our_sandbox_may_have_caused():
    for outcome in ("no_entry_point", "crashed_on_start", "needs_external_service", "resource_limit", "blocked"):
        assert sandbox_caused("sandbox", outcome) and sandbox_caused("deep", outcome)
    for outcome in ("install_failed", "start_failed", "timeout", "unreachable"):
        assert sandbox_caused("sandbox", outcome) and not sandbox_caused("deep", outcome) and not sandbox_caused("fast", outcome)
    for outcome in ("ok", "protocol_error", "crashed", "http_error", "auth_required"):
        assert not sandbox_caused("sandbox", outcome)
