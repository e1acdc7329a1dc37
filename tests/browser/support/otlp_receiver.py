"""A test receiver for OTLP/HTTP JSON metrics that answers as a Collector's OTLP receiver does.

POST /v1/metrics: the body (chunked or not, gzip or not, as the Collector takes it) is parsed strictly as an ExportMetricsServiceRequest with the
generated protobuf types of PyPI's `opentelemetry-proto` (`json_format.Parse`, unknown fields
refused); a body that does not parse is a 400 and is kept as an error. CORS as the Collector's
`cors` settings: only `--origin` is allowed, preflights answer with `Access-Control-Max-Age`.

Control (for tests): POST /control {"status": 429, "count": 2, "retry_after": "0"} makes the
next `count` exports answer `status`; GET /received gives every parsed request (as protobuf's
own JSON form), the errors and the number of preflights. Prints `listening PORT` when ready.

Usage: python3 otlp_receiver.py --origin http://127.0.0.1:PORT [--port 0]
"""

import argparse
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

MAX_BODY = 4 * 1024 * 1024

state = {"received": [], "errors": [], "preflights": 0, "fail": None, "lock": threading.Lock()}


class Handler(BaseHTTPRequestHandler):
    origin = ""

    def log_message(self, *args):
        pass

    def cors(self):
        if self.headers.get("Origin") == self.origin:
            self.send_header("Access-Control-Allow-Origin", self.origin)
            self.send_header("Vary", "Origin")

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.cors()
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_OPTIONS(self):
        with state["lock"]:
            state["preflights"] += 1
        allowed = self.headers.get("Origin") == self.origin
        self.send_response(204 if allowed else 403)
        if allowed:
            self.cors()
            self.send_header("Access-Control-Allow-Methods", "POST")
            self.send_header(
                "Access-Control-Allow-Headers",
                self.headers.get("Access-Control-Request-Headers", ""),
            )
            self.send_header("Access-Control-Max-Age", "7200")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def read_body(self):
        """The body, de-chunked and gunzipped as a Collector takes it; None when too large."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
                if len(body) > MAX_BODY:
                    return None
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return None
            body = self.rfile.read(length)
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        return body

    def do_GET(self):
        if self.path == "/received":
            with state["lock"]:
                body = {k: state[k] for k in ("received", "errors", "preflights")}
            self.reply(200, body)
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        body = self.read_body()
        if body is None:
            self.reply(413, {"error": "too large"})
            return
        if self.path == "/control":
            with state["lock"]:
                state["fail"] = json.loads(body)
            self.reply(200, {})
            return
        if self.path != "/v1/metrics":
            self.reply(404, {"error": "not found"})
            return
        with state["lock"]:
            fail = state["fail"]
            if fail and fail.get("count", 0) > 0:
                fail["count"] -= 1
                headers = [("Retry-After", fail["retry_after"])] if "retry_after" in fail else []
                self.reply(fail["status"], {"error": "told to fail"}, headers)
                return
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            self.reply(415, {"error": "want application/json"})
            return
        try:
            message = json_format.Parse(body.decode("utf-8"), ExportMetricsServiceRequest())
        except (json_format.ParseError, UnicodeDecodeError) as e:
            with state["lock"]:
                state["errors"].append(str(e))
            self.reply(400, {"error": str(e)})
            return
        with state["lock"]:
            state["received"].append(
                {
                    "bytes": len(body),
                    "request": json_format.MessageToDict(message),
                }
            )
        self.reply(200, {"partialSuccess": {}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--origin", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.origin = args.origin
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
