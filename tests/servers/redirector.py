"""An HTTP 'MCP server' that answers every request with a redirect to TARGET: to another port of the host's loopback.

Usage: redirector.py PORT TARGET
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Redirect(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.send_response(307)
        self.send_header("Location", sys.argv[2])
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Redirect).serve_forever()
