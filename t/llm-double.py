#!/usr/bin/env python3
"""llm-double.py - the paid LLM's stand-in for tests and the demo.

Speaks the OpenAI Chat Completions wire protocol for real over HTTP on a
loopback port, scripted per test through files in its directory:

  DIR/port            written at start: the port it listens on
  DIR/script.json     read on every request (may change between runs):
      {"replies": [R, ...]}   reply i to request i; the last one repeats
      {"idle_ratio": 0.78, "seed": 1, "text": "..."}  [IDLE] with that
                              probability, else text (deterministic)
      {"windows": [W, ...], "span": false, "else": "[IDLE]"}
                              the answer depends on the faked time of the
                              request, read from heart's meta line in the
                              last user message ("local time: 2026-11-23
                              T09:30:00-05:00"): W's text inside a window,
                              else "else".  W is {"weekday": [0, 4] (0 is
                              Monday), "from": "09:30", "to": "16:00",
                              "text": "..."}, in the agent's local time.
                              With "span": true a window answers when it
                              overlaps the stretch since the last wake
                              ("last schedule wake: ..."), so that the
                              first wake after an event reports it.
    where a reply R is an object with any of:
      "text"      the assistant's content (default "[IDLE]")
      "status"    HTTP status (default 200); an error body is sent
      "delay"     seconds to wait before answering
      "raw"       a body sent verbatim (e.g. malformed JSON)
      "endless"   true: a body that never ends
      "usage"     {"prompt_tokens": n, "completion_tokens": n}
  DIR/requests.jsonl  one line per request: path, headers, body

Usage: llm-double.py DIR   (stops on SIGTERM)
"""
import datetime
import json
import os
import random
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
LOCK = threading.Lock()
COUNT = [0]


def script():
    try:
        with open(os.path.join(DIR, "script.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def meta_time(req, what):
    """A local time from heart's meta line, as a naive datetime."""
    msgs = [m for m in (req or {}).get("messages", [])
            if m.get("role") == "user"]
    text = msgs[-1].get("content", "") if msgs else ""
    m = re.search(what + r": (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", text)
    return datetime.datetime.fromisoformat(m.group(1)) if m else None


def in_window(w, since, now):
    """Does window w hold a moment of (since, now]?"""
    fh, fm = map(int, w["from"].split(":"))
    th, tm = map(int, w["to"].split(":"))
    sec = datetime.timedelta(seconds=1)
    lo = since + sec if since is not None and since < now else now
    day = lo.date()
    while day <= now.date():
        if day.weekday() in w.get("weekday", range(7)):
            ws = datetime.datetime.combine(day, datetime.time(fh, fm))
            we = datetime.datetime.combine(day, datetime.time(th, tm))
            if max(lo, ws) <= min(now, we - sec):
                return True
        day += datetime.timedelta(days=1)
    return False


def by_window(s, req):
    now = meta_time(req, "local time")
    since = meta_time(req, r"last \w+ wake") if s.get("span") else None
    for w in s["windows"]:
        if now is not None and in_window(w, since, now):
            return {"text": w.get("text", "Something happened.")}
    return {"text": s.get("else", "[IDLE]")}


def pick(s, n, req):
    if "windows" in s:
        return by_window(s, req)
    if "idle_ratio" in s:
        rng = random.Random(s.get("seed", 1) * 1000003 + n)
        idle = rng.random() < s["idle_ratio"]
        return {"text": "[IDLE]" if idle else s.get("text", "Something "
                "happened that needs your attention.")}
    replies = s.get("replies") or [{}]
    return replies[min(n, len(replies) - 1)]


def openai_reply(r, req):
    text = r.get("text", "[IDLE]")
    usage = r.get("usage", {"prompt_tokens": 40 + len(json.dumps(req)) // 40,
                            "completion_tokens": max(1, len(text) // 4)})
    return {
        "id": "chatcmpl-double", "object": "chat.completion",
        "created": int(time.time()), "model": req.get("model", "double"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": dict(usage, total_tokens=sum(usage.values())),
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            req = None
        with LOCK:
            i = COUNT[0]
            COUNT[0] += 1
            with open(os.path.join(DIR, "requests.jsonl"), "a") as f:
                f.write(json.dumps({"path": self.path,
                                    "headers": dict(self.headers),
                                    "body": req}) + "\n")
        r = pick(script(), i, req)
        time.sleep(r.get("delay", 0))
        if r.get("endless"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            chunk = b'{"choices":[' + b" " * 65536
            try:
                for _ in range(200 * 16):  # bounded: 200 MiB at most
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
            return
        if "raw" in r:
            return self.send(r.get("status", 200), r["raw"])
        status = r.get("status", 200)
        if status != 200:
            return self.send(status, json.dumps(
                {"error": {"message": r.get("text", "scripted error"),
                           "type": "double"}}))
        if req is None or not self.path.endswith("/chat/completions"):
            return self.send(400, '{"error":{"message":"bad request"}}')
        self.send(200, json.dumps(openai_reply(r, req)))


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    tmp = os.path.join(DIR, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(DIR, "port"))
    srv.serve_forever()


if __name__ == "__main__":
    main()
