"""A server that starts processes meant to outlive it: python spawner.py MODE MARKER [PORT].

It starts three sleepers, each with MARKER on its command line: a child in its own process group, a child that
left for a session of its own, and a daemon (forked twice, the middle process gone, so it is nobody's child).
Then, by MODE: `silent` reads stdin and never answers (a stdio server), `exit` exits with code 3 at once, `http`
listens on PORT and never answers (an HTTP server).
"""

import os
import socket
import subprocess
import sys
import time

MODE, MARKER = sys.argv[1], sys.argv[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)", MARKER]

subprocess.Popen([*SLEEPER, "child"])
subprocess.Popen([*SLEEPER, "session"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [*SLEEPER, "daemon"])
    os._exit(0)
os.wait()

if MODE == "exit":
    sys.exit(3)
if MODE == "http":
    listener = socket.create_server(("127.0.0.1", int(sys.argv[3])))
    held = []
    while True:
        held.append(listener.accept()[0])  # the connection is kept open and never answered
for _ in sys.stdin:
    time.sleep(0)
time.sleep(600)
