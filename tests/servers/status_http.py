"""An HTTP endpoint that answers every request with one status: python status_http.py PORT 401|429|500.

401 comes with a Bearer challenge, 429 with Retry-After: 30; the body is a short JSON error.
"""

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATUS = int(sys.argv[2])
HEADERS = {401: ("WWW-Authenticate", 'Bearer realm="mcp"'), 429: ("Retry-After", "30")}


class Handler(BaseHTTPRequestHandler):
    def answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"error": "no"}'
        self.send_response(STATUS)
        if STATUS in HEADERS:
            self.send_header(*HEADERS[STATUS])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = answer

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
