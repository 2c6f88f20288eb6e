#!/usr/bin/env python3
"""mcp-bad.py - a tiny MCP server over stdio, for what real servers
rarely do.  Usage: mcp-bad.py MODE [DIR]

It offers two tools, "hello" (answers "hello, NAME") and "fail" (a
result with isError), one per page of tools/list (so that a client must
follow nextCursor).  With DIR, it appends its pid and group to DIR/pids
at start, copies its own /proc/self/environ to DIR/environ.PID, and
logs every message it reads to DIR/log.  It writes "mcp-bad: MODE
started" to its standard error.

MODE says how it misbehaves:
  good      it does not
  old       answers initialize with protocol version 2024-11-05
  future    answers initialize with protocol version 2099-01-01
  silent    never answers initialize
  garbage   answers tools/call with a line that is not JSON
  exit      exits with status 3 in the middle of tools/call, after a
            word on its standard error
  flood     answers tools/call with notifications, without end
  stubborn  ignores SIGTERM, starts a child that ignores it too, and
            never answers tools/call
  slow      answers initialize after 3 seconds (a server slow to start)
  tidy      does not misbehave; at SIGTERM, it appends "term" to
            DIR/marks and exits (a server that tidies up when asked)
"""
import json
import os
import signal
import sys
import time

mode = sys.argv[1]
d = sys.argv[2] if len(sys.argv) > 2 else None
TOOLS = [
    {"name": "hello", "description": "Says hello.",
     "inputSchema": {"type": "object",
                     "properties": {"name": {"type": "string"}},
                     "required": ["name"]}},
    {"name": "fail", "description": "Always fails.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def note(what):
    if d:
        with open(os.path.join(d, "log"), "a") as f:
            f.write(what + "\n")


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def answer(i, result):
    send({"jsonrpc": "2.0", "id": i, "result": result})


if d:
    with open(os.path.join(d, "pids"), "a") as f:
        f.write("%d %d\n" % (os.getpid(), os.getpgrp()))
    with open("/proc/self/environ", "rb") as src, \
            open(os.path.join(d, "environ.%d" % os.getpid()), "wb") as dst:
        dst.write(src.read())
sys.stderr.write("mcp-bad: %s started\n" % mode)
sys.stderr.flush()
if mode == "tidy":
    def tidy(sig, frame):
        with open(os.path.join(d, "marks"), "a") as f:
            f.write("term\n")
        os._exit(0)
    signal.signal(signal.SIGTERM, tidy)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "300"])

for line in sys.stdin:
    msg = json.loads(line)
    note(line.strip())
    method, i = msg.get("method"), msg.get("id")
    if i is None:
        continue
    if method == "initialize":
        if mode == "silent":
            continue
        if mode == "slow":
            time.sleep(3)
        ver = {"old": "2024-11-05", "future": "2099-01-01"}.get(
            mode, msg["params"]["protocolVersion"])
        answer(i, {"protocolVersion": ver, "capabilities": {"tools": {}},
                   "serverInfo": {"name": "mcp-bad", "version": "1"}})
    elif method == "tools/list":
        n = int(msg.get("params", {}).get("cursor", "0"))
        page = {"tools": TOOLS[n:n + 1]}
        if n + 1 < len(TOOLS):
            page["nextCursor"] = str(n + 1)
        answer(i, page)
    elif method == "tools/call":
        if mode == "garbage":
            sys.stdout.write("Listening on stdio... this is not JSON\n")
            sys.stdout.flush()
        elif mode == "exit":
            sys.stderr.write("mcp-bad: crashed on purpose\n")
            sys.exit(3)
        elif mode == "flood":
            while True:
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "x" * 4000}})
        elif mode == "stubborn":
            continue
        elif msg["params"]["name"] == "fail":
            answer(i, {"content": [{"type": "text", "text": "no luck"}],
                       "isError": True})
        else:
            who = msg["params"].get("arguments", {}).get("name", "?")
            answer(i, {"content": [{"type": "text",
                                    "text": "hello, %s" % who}]})
    else:
        send({"jsonrpc": "2.0", "id": i,
              "error": {"code": -32601, "message": "no such method"}})
if mode == "stubborn":
    while True:
        signal.pause()
