#!/usr/bin/env python3
"""llm-double.py - the paid LLM's stand-in for tests and the demo.

Speaks two wire protocols for real over HTTP on a loopback port: OpenAI
Chat Completions (a path ending in /chat/completions) and Anthropic
Messages (a path ending in /messages), tool calls included in both.
Or, with --command, serves one request as heart-wake's command
provider: an OpenAI-form request on stdin, the reply on stdout.
Scripted per test through files in its directory:

  DIR/port            written at start: the port it listens on
  DIR/script.json     read on every request (may change between runs):
      {"replies": [R, ...]}   reply i to request i; the last one repeats
      {"replies": [...], "cycle": true}   reply i mod n: the same
                              exchange on every wake
      {"idle_ratio": 0.78, "seed": 1, "text": "..."}  [IDLE] with that
                              probability, else text (deterministic)
      {"windows": [W, ...], "span": false, "else": "[IDLE]"}
                              the answer depends on the faked time of the
                              request, read from heart's meta line in the
                              last user message ("local time: 2026-11-23
                              T09:30:00-05:00"): W's text inside a window,
                              else "else".  W is {"weekday": [0, 4] (0 is
                              Monday), "from": "09:30", "to": "16:00",
                              "text": "..."}, in the agent's local time;
                              a window whose "to" is not after its
                              "from" ends the next day (22:00 to 02:00),
                              and its weekday is the day it begins.
                              "since" and "until" ("2026-11-30") bound
                              the days on which it begins: since <=
                              day < until.
                              With "span": true a window answers when it
                              overlaps the stretch since the last wake
                              ("last schedule wake: ..."), so that the
                              first wake after an event reports it.
                              With "all": true every window that
                              answers is told, a line each (else the
                              first).
                              With "decide": true the answer is a
                              heartbeat call instead (a triage model):
                              action run with W's text as the reason
                              inside a window, else skip.
    where a reply R is an object with any of:
      "text"      the assistant's content (default "[IDLE]"; none when
                  tool_calls are given and text is not)
      "tool_calls" [{"name": N, "arguments": A, "id": I}, ...]: calls
                  the model makes; A is an object, or a string sent
                  verbatim (broken arguments); I defaults to call_N_K,
                  for the K-th call of request N
      "status"    HTTP status (default 200); an error body is sent, in
                  the protocol's form: OpenAI {"error": {"message",
                  "type", "param", "code"}}, Anthropic {"type": "error",
                  "error": {"type", "message"}}, with "text" as the
                  message
      "error_type", "error_code"   the error's type and code (OpenAI:
                  "insufficient_quota", "model_not_found"; Anthropic:
                  "authentication_error", "billing_error")
      "headers"   {NAME: VALUE}: headers sent with the reply (e.g.
                  Retry-After)
      "delay"     seconds to wait before answering
      "raw"       a body sent verbatim (e.g. malformed JSON)
      "latin1"    true: "raw" sent in Latin-1, a byte a character up to
                  U+00FF (bytes that are not UTF-8: "caf\u00e9")
      "endless"   true: a body that never ends
      "usage"     {"prompt_tokens": n, "completion_tokens": n}, in
                  either protocol (sent as input/output_tokens to
                  Anthropic clients); with "cached_tokens": n (of
                  prompt_tokens, read from the cache) and
                  "cache_write_tokens": n (written to it), sent as
                  OpenAI's usage.prompt_tokens_details.cached_tokens,
                  and as Anthropic's cache_read_input_tokens and
                  cache_creation_input_tokens (input_tokens being the
                  rest); a count not given is not sent
      "exit", "stderr"   --command only: exit status and a message
    In "text", "raw" and "stderr", {{NAME}} is replaced by the request's
    header NAME (lower case: {{authorization}}, {{x-api-key}}): a
    provider that echoes the key back; {{env:NAME}} by the variable
    NAME of the double's environment (--command runs in heart-wake's).
  DIR/script.json may also hold "max_context": N: a request body of
    more than N bytes is refused as a real server does (400, OpenAI
    code context_length_exceeded, Anthropic "prompt is too long").
    "delay": S there delays every reply that sets none of its own (a
    slow model).  "rate": {"requests": R, "window": 60, "clock": "real"}
    is a provider's rate limit: a request that finds R requests answered
    in the last window seconds gets 429 (OpenAI code rate_limit_exceeded,
    Retry-After: the seconds until one leaves the window); the clock is
    the real one, or with "clock": "meta" the faked time of heart's meta
    line (as "windows" reads it), for tests under libfaketime.
  DIR/requests.jsonl  one line per request: path, headers, body, raw
                      (the body's bytes as sent, a string), "t"
                      (when it came: the rate's clock, Unix seconds),
                      "limited" (true: refused by the rate),
                      "inflight" (requests being served, this one
                      counted, when it came) and "peer" (the client's
                      port: one per connection); its
                      lines are the count of requests (emptying it
                      starts the script again)

The double checks what a real server would refuse (400): a tool result
whose call is not in the assistant message before it; for Anthropic, a
missing anthropic-version header, a role other than user or assistant,
a first message that is not the user's, turns that do not alternate.

Usage: llm-double.py DIR              (stops on SIGTERM)
       llm-double.py --command DIR    (one request, stdin to stdout)
       llm-double.py --zygote DIR     (DIR/zygote.port: forks doubles)

With --zygote it starts no double but listens on a loopback port,
written to DIR/zygote.port, for lines naming a double's DIR: for each it
forks a double serving that DIR (its output in DIR/double.log) and
answers with the double's pid.  A test's double is then a fork of a
Python that has already loaded this file, not a new interpreter: less
than half the CPU (t/helpers.bash, llm_start).
"""
import datetime
import fcntl
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNT = [0]
INFLIGHT = [0]


def script(d):
    try:
        with open(os.path.join(d, "script.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def meta_time(req, what):
    """A local time from heart's meta line, as a naive datetime."""
    msgs = [m for m in (req or {}).get("messages", [])
            if m.get("role") == "user"]
    text = msgs[-1].get("content", "") if msgs else ""
    if not isinstance(text, str):
        text = " ".join(b.get("text", "") for b in text
                        if isinstance(b, dict))
    m = re.search(what + r": (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", text)
    return datetime.datetime.fromisoformat(m.group(1)) if m else None


def begins_on(w, day):
    """Does window w begin on day (a date)?"""
    return (day.weekday() in w.get("weekday", range(7)) and
            w.get("since", "0000") <= day.isoformat() < w.get("until", "A"))


def in_window(w, since, now):
    """Does window w hold a moment of (since, now]?  (since None: now)"""
    fh, fm = map(int, w["from"].split(":"))
    th, tm = map(int, w["to"].split(":"))
    sec = datetime.timedelta(seconds=1)
    one = datetime.timedelta(days=1)
    lo = since + sec if since is not None and since < now else now
    day = lo.date() - one
    while day <= now.date():
        if begins_on(w, day):
            ws = datetime.datetime.combine(day, datetime.time(fh, fm))
            we = datetime.datetime.combine(day, datetime.time(th, tm))
            if we <= ws:
                we += one
            if max(lo, ws) <= min(now, we - sec):
                return True
        day += one
    return False


def decision(action, reason):
    """A heartbeat call: heart's skip/run question answered."""
    return {"tool_calls": [{"name": "heartbeat", "arguments":
                            {"action": action, "reason": reason}}]}


def by_window(s, req):
    now = meta_time(req, "local time")
    since = meta_time(req, r"last \w+ wake") if s.get("span") else None
    hits = [w.get("text", "Something happened.") for w in s["windows"]
            if now is not None and in_window(w, since, now)]
    if hits:
        text = "\n".join(hits) if s.get("all") else hits[0]
        return decision("run", text) if s.get("decide") else {"text": text}
    if s.get("decide"):
        return decision("skip", "nothing new")
    return {"text": s.get("else", "[IDLE]")}


def pick(s, n, req=None):
    if "windows" in s:
        return by_window(s, req)
    if "idle_ratio" in s:
        rng = random.Random(s.get("seed", 1) * 1000003 + n)
        idle = rng.random() < s["idle_ratio"]
        return {"text": "[IDLE]" if idle else s.get("text", "Something "
                "happened that needs your attention.")}
    replies = s.get("replies") or [{}]
    if s.get("cycle"):
        return replies[n % len(replies)]
    return replies[min(n, len(replies) - 1)]


def fill(text, headers):
    """{{header}} and {{env:NAME}} in a scripted text."""
    def one(m):
        k = m.group(1)
        if k.startswith("env:"):
            return os.environ.get(k[4:], "")
        return headers.get(k, "")
    return re.sub(r"\{\{([A-Za-z0-9_:-]+)\}\}", one, text)


def raw_bytes(r, headers):
    """A scripted raw body's bytes: UTF-8, or Latin-1 with "latin1"."""
    return fill(r["raw"], headers).encode(
        "latin-1" if r.get("latin1") else "utf-8")


def error_body(path, status, r, headers):
    """An error reply as the protocol words it."""
    msg = fill(r.get("text", "scripted error"), headers)
    if path.endswith("/messages"):
        return {"type": "error", "error": {
            "type": r.get("error_type", "api_error"), "message": msg}}
    return {"error": {"message": msg, "type": r.get("error_type", "double"),
                      "param": None, "code": r.get("error_code")}}


def too_long(path, n, limit):
    """A real server's answer to a context past the model's window."""
    if path.endswith("/messages"):
        return {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: %d bytes > %d maximum"
            % (n, limit)}}
    return {"error": {"message": "This model's maximum context length is "
                      "%d bytes. However, your messages resulted in %d "
                      "bytes." % (limit, n), "type":
                      "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}


def calls(r, n):
    """The scripted calls of reply n: (id, name, arguments)."""
    out = []
    for k, c in enumerate(r.get("tool_calls") or [], 1):
        out.append((c.get("id", "call_%d_%d" % (n + 1, k)), c["name"],
                    c.get("arguments", {})))
    return out


def usage(r, req):
    text = r.get("text", "")
    u = {"prompt_tokens": 40 + len(json.dumps(req)) // 40,
         "completion_tokens": max(1, len(text) // 4)}
    u.update(r.get("usage", {}))
    return u


def openai_usage(u):
    out = {"prompt_tokens": u["prompt_tokens"],
           "completion_tokens": u["completion_tokens"],
           "total_tokens": u["prompt_tokens"] + u["completion_tokens"]}
    if "cached_tokens" in u:
        out["prompt_tokens_details"] = {"cached_tokens": u["cached_tokens"]}
    return out


def anthropic_usage(u):
    read, write = u.get("cached_tokens"), u.get("cache_write_tokens")
    out = {"input_tokens": u["prompt_tokens"] - (read or 0) - (write or 0),
           "output_tokens": u["completion_tokens"]}
    if read is not None:
        out["cache_read_input_tokens"] = read
    if write is not None:
        out["cache_creation_input_tokens"] = write
    return out


def openai_reply(r, req, n):
    tc = calls(r, n)
    msg = {"role": "assistant",
           "content": r.get("text", None if tc else "[IDLE]")}
    if tc:
        msg["tool_calls"] = [
            {"id": i, "type": "function",
             "function": {"name": n, "arguments": a if isinstance(a, str)
                          else json.dumps(a)}} for i, n, a in tc]
    u = usage(r, req)
    return {
        "id": "chatcmpl-double", "object": "chat.completion",
        "created": int(time.time()), "model": req.get("model", "double"),
        "choices": [{"index": 0, "message": msg,
                     "finish_reason": "tool_calls" if tc else "stop"}],
        "usage": openai_usage(u),
    }


def anthropic_reply(r, req, n):
    tc = calls(r, n)
    content = []
    text = r.get("text", None if tc else "[IDLE]")
    if text:
        content.append({"type": "text", "text": text})
    for i, n, a in tc:
        if isinstance(a, str):
            try:
                a = json.loads(a)
            except ValueError:
                pass        # sent as it is: what a broken server does
        content.append({"type": "tool_use", "id": i, "name": n,
                        "input": a})
    u = usage(r, req)
    return {
        "id": "msg_double", "type": "message", "role": "assistant",
        "model": req.get("model", "double"), "content": content,
        "stop_reason": "tool_use" if tc else "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(u),
    }


def openai_check(req):
    ids = set()
    for m in req.get("messages", []):
        if m.get("role") == "assistant":
            ids = {c["id"] for c in m.get("tool_calls") or []}
        elif m.get("role") == "tool":
            if m.get("tool_call_id") not in ids:
                return "tool message without its tool call"
        else:
            ids = set()
    return None


def anthropic_check(req, headers):
    if headers.get("anthropic-version") != "2023-06-01":
        return "anthropic-version header missing"
    msgs = req.get("messages", [])
    if not msgs or msgs[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    prev, ids = None, set()
    for m in msgs:
        role = m.get("role")
        if role not in ("user", "assistant"):
            return "messages: unexpected role %r" % role
        if role == prev:
            return "messages: roles must alternate"
        prev = role
        blocks = m["content"] if isinstance(m["content"], list) else []
        if role == "assistant":
            ids = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            continue
        for b in blocks:
            if b.get("type") == "tool_result" and \
                    b.get("tool_use_id") not in ids:
                return "tool_result without its tool_use"
        ids = set()
    return None


RATE = []


def clock(rt, req):
    """Now, by the rate's clock: real, or heart's meta line's."""
    if rt.get("clock") == "meta":
        t = meta_time(req, "local time")
        if t is not None:
            return t.replace(tzinfo=datetime.timezone.utc).timestamp()
    return time.time()


def limited(s, req):
    """The rate limit's verdict: None, or the seconds to wait."""
    rt = s.get("rate")
    if not rt:
        return None, time.time()
    now, w = clock(rt, req), rt.get("window", 60)
    RATE[:] = [t for t in RATE if t > now - w]
    if len(RATE) >= rt["requests"]:
        return max(1, int(RATE[0] + w - now + 0.999)), now
    RATE.append(now)
    return None, now


# requests.jsonl: (dev, inode, offset, lines) where the last count stopped
SEEN = {}


def log(d, path, headers, req, raw=b"", extra=None):
    """Append the request; returns its index (0 for the first).  The
    lines before it are counted on from where the last count stopped
    (a benchmark's file holds a hundred thousand), from the start again
    when the file is another or was cut (a test's `: > requests.jsonl`)."""
    p = os.path.join(d, "requests.jsonl")
    with open(p, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        st = os.fstat(f.fileno())
        dev, ino, off, n = SEEN.get(p, (None, None, 0, 0))
        if (dev, ino) != (st.st_dev, st.st_ino) or st.st_size < off:
            off, n = 0, 0
        f.seek(off)
        n += sum(1 for _ in f)
        line = {"path": path, "headers": headers, "body": req,
                "raw": raw.decode("utf-8", "replace")}
        line.update(extra or {})
        f.write((json.dumps(line) + "\n").encode())
        f.flush()
        SEEN[p] = (st.st_dev, st.st_ino, f.tell(), n + 1)
    return n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # a reply is two writes, head and body: without TCP_NODELAY the
    # body waits for the client's delayed ACK of the head, 40 ms a
    # request, which no real provider's server makes a client wait
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def send(self, status, body, extra=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def endless(self):
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

    def do_POST(self):
        with LOCK:
            INFLIGHT[0] += 1
        try:
            self.serve()
        finally:
            with LOCK:
                INFLIGHT[0] -= 1

    def serve(self):
        d = self.server.dir
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            req = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        s = script(d)
        with LOCK:
            wait, now = limited(s, req)
            i = log(d, self.path, dict(self.headers), req, raw,
                    {"t": now, "limited": wait is not None,
                     "inflight": INFLIGHT[0],
                     "peer": self.client_address[1]})
        if wait is not None:
            return self.send(429, json.dumps({"error": {
                "message": "Rate limit reached: %d requests a minute" %
                s["rate"]["requests"], "type": "requests",
                "param": None, "code": "rate_limit_exceeded"}}),
                {"Retry-After": wait})
        r = pick(s, i, req)
        time.sleep(r.get("delay", s.get("delay", 0)))
        extra = r.get("headers")
        if r.get("endless"):
            return self.endless()
        if "raw" in r:
            return self.send(r.get("status", 200), raw_bytes(r, headers),
                             extra)
        status = r.get("status", 200)
        if status != 200:
            return self.send(status, json.dumps(
                error_body(self.path, status, r, headers)), extra)
        if s.get("max_context") and n > s["max_context"]:
            return self.send(400, json.dumps(
                too_long(self.path, n, s["max_context"])))
        if req is None:
            return self.send(400, '{"error":{"message":"not JSON"}}')
        if self.path.endswith("/chat/completions"):
            bad, reply = openai_check(req), openai_reply
        elif self.path.endswith("/messages"):
            bad, reply = anthropic_check(req, headers), anthropic_reply
        else:
            bad = "no such endpoint"
        if bad:
            return self.send(400, json.dumps({"error": {"message": bad}}))
        self.send(200, json.dumps(reply(r, req, i)), extra)


def command(d):
    """One request as the command provider: stdin to stdout."""
    raw = sys.stdin.read()
    try:
        req = json.loads(raw)
    except ValueError:
        req = None
    i = log(d, "command", {"argv": sys.argv[1:]}, req, raw.encode())
    r = pick(script(d), i, req)
    time.sleep(r.get("delay", 0))
    if "stderr" in r:
        sys.stderr.write(fill(r["stderr"], {}) + "\n")
    if r.get("exit"):
        sys.exit(r["exit"])
    if r.get("endless"):
        chunk = '{"choices":[' + " " * 65536
        try:
            for _ in range(200 * 16):
                sys.stdout.write(chunk)
        except OSError:
            pass
        return
    if "raw" in r:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw_bytes(r, {}))
        return
    bad = openai_check(req) if req is not None else "not JSON"
    if bad:
        sys.stderr.write("double: %s\n" % bad)
        sys.exit(2)
    sys.stdout.write(json.dumps(openai_reply(r, req, i)) + "\n")


def zygote(d):
    """Fork a double for each DIR asked for, answer with its pid."""
    z = socket.socket()
    z.bind(("127.0.0.1", 0))
    z.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # no zombies
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    tmp = os.path.join(d, "zygote.port.tmp")
    with open(tmp, "w") as f:
        f.write(str(z.getsockname()[1]))
    os.rename(tmp, os.path.join(d, "zygote.port"))
    while True:
        c, _ = z.accept()
        with c, c.makefile("rw") as f:
            dirname = f.readline().rstrip("\n")
            if not os.path.isdir(dirname):
                f.write("no such directory\n")
                continue
            pid = os.fork()
            if pid == 0:
                z.close()
                f.close()
                c.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                out = os.open(os.path.join(dirname, "double.log"),
                              os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                os.dup2(out, 1)
                os.dup2(out, 2)
                os.close(out)
                code = 0
                try:
                    serve(dirname)
                except SystemExit as e:
                    code = e.code or 0
                except BaseException:
                    traceback.print_exc()
                    code = 1
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            f.write("%d\n" % pid)


def main():
    if sys.argv[1] == "--command":
        return command(sys.argv[2])
    if sys.argv[1] == "--zygote":
        return zygote(sys.argv[2])
    serve(sys.argv[1])


def serve(d):
    """Serve DIR's script on a loopback port until SIGTERM."""
    # a real server's backlog: a fleet's round connects 32 at once
    ThreadingHTTPServer.request_queue_size = 256
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.dir = d
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    tmp = os.path.join(srv.dir, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(srv.dir, "port"))
    srv.serve_forever()


if __name__ == "__main__":
    main()
