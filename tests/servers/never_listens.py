"""An 'HTTP server' that starts and never opens its port (or exits at once with `exit`)."""

import sys
import time

if len(sys.argv) > 1 and sys.argv[1] == "exit":
    sys.stderr.write("Error: listen EADDRINUSE (simulated)\n")
    sys.exit(1)
time.sleep(3600)
