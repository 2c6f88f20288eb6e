#!/usr/bin/env python3
"""gen-wakes.py - hand-written wake results (heart-wake(1), "THE WAKE
RESULT") for the heart-ghost tests and benchmark, one JSON object per
line.

  gen-wakes.py [-n N] [--ok PERCENT] [--agents a,b,c] [--id PREFIX]
               [--pad BYTES] [--tools] [--status S] [--response TEXT]

Result i (0-based) is for agent i mod len(agents); it is "ok" when
(i * 7) mod 100 < PERCENT (so exactly PERCENT of every 100 are ok),
else --status (default idle).  Its wake_id is PREFIX-i.  An idle
result's prompt contains "ghost-prompt-PREFIX-i", which must never be
found anywhere after heart-ghost.  --pad adds BYTES of text to every
message; --tools makes every ok wake four messages (a tool call and its
result between prompt and answer).
"""
import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("-n", type=int, default=100)
p.add_argument("--ok", type=int, default=22)
p.add_argument("--agents", default="alpha,bravo,charlie")
p.add_argument("--id", default="w")
p.add_argument("--pad", type=int, default=0)
p.add_argument("--tools", action="store_true")
p.add_argument("--status", default="idle")
p.add_argument("--response", default=None)
a = p.parse_args()
agents = a.agents.split(",")
pad = "x" * a.pad
out = sys.stdout

for i in range(a.n):
    wid = "%s-%d" % (a.id, i)
    ok = (i * 7) % 100 < a.ok
    if ok:
        prompt = "check the world, %s%s" % (wid, pad)
        answer = a.response if a.response is not None else \
            "answer %s%s" % (wid, pad)
        msgs = [{"role": "user", "content": prompt}]
        if a.tools:
            msgs.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": "c-" + wid,
                                         "type": "function",
                                         "function": {"name": "look",
                                                      "arguments": "{}"}}]})
            msgs.append({"role": "tool", "tool_call_id": "c-" + wid,
                         "content": "seen %s%s" % (wid, pad)})
        msgs.append({"role": "assistant", "content": answer})
        status = "ok"
    else:
        prompt = "ghost-prompt-%s%s: if nothing, say [IDLE]" % (wid, pad)
        answer = "[IDLE]"
        msgs = [{"role": "user", "content": prompt},
                {"role": "assistant", "content": answer}]
        status = a.status
    r = {"v": 1, "agent": agents[i % len(agents)], "chamber": "schedule",
         "wake_id": wid, "at": "2026-11-21T12:00:00Z", "status": status,
         "reason": None, "response": answer, "idle_level": None,
         "messages": msgs,
         "usage": {"prompt_tokens": 120, "completion_tokens": 3},
         "cap": {"used": 12, "cap": 48, "day": "2026-11-21"},
         "breaker": "closed", "tools": {"calls": 0, "failed": 0},
         "error": None, "duration_ms": 812}
    out.write(json.dumps(r, separators=(",", ":")) + "\n")
