#!/usr/bin/env python3
# deliver-receiver.py DIR - the far end of a delivery recipe in the
# tests (t/deliver.bats) and the outbox benchmark (bench/outbox.sh): an
# HTTP server on a free loopback port that takes any request and keeps
# it whole, as a service would see it.
#
# It writes its port to DIR/port once it listens, and appends each
# request to DIR/log as one JSON object: method, path (with its query),
# headers (name in lower case: value), body (as text), code (the
# status it answered) and, when DIR/key exists, sig: the HMAC-SHA256
# of the body under the bytes of DIR/key, in hex.
#
# What it answers is steered by files in DIR, looked at per request:
#   down     answer 503 (the request is logged, code 503)
#   slow     take the request, then wait as many seconds as the file
#            says before answering 200 (a client that gives up sooner
#            has delivered all the same: a duplicate to come)
#   hold     write DIR/holding, then wait until hold is removed, then
#            answer 200 (for looking at the client while it waits)
# else 200 with {"ok":true,"result":{}} (what Telegram wants; the others
# look at the status only).
import hashlib
import hmac
import http.server
import json
import os
import socketserver
import sys
import threading
import time

D = sys.argv[1]
LOCK = threading.Lock()


def have(name):
    return os.path.exists(os.path.join(D, name))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        code = 503 if have("down") else 200
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()},
               "body": body.decode("utf-8", "replace"), "code": code}
        if have("key"):
            with open(os.path.join(D, "key"), "rb") as f:
                rec["sig"] = hmac.new(f.read(), body,
                                      hashlib.sha256).hexdigest()
        with LOCK, open(os.path.join(D, "log"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        if code == 200 and have("slow"):
            try:
                with open(os.path.join(D, "slow")) as f:
                    time.sleep(float(f.read().strip() or "1"))
            except (OSError, ValueError):
                pass
        if code == 200 and have("hold"):
            open(os.path.join(D, "holding"), "w").close()
            while have("hold"):
                time.sleep(0.05)
        out = b'{"ok":true,"result":{}}'
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except OSError:
            pass    # the client gave up

    do_POST = do_PUT = do_GET = handle_any

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass    # a client that went away (it gave up on slow)


s = Server(("127.0.0.1", 0), Handler)
with open(os.path.join(D, "port.tmp"), "w") as f:
    f.write(str(s.server_port))
os.rename(os.path.join(D, "port.tmp"), os.path.join(D, "port"))
s.serve_forever()
