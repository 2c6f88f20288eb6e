#!/usr/bin/env python3
"""adapt-figures.py - figures of simulated schedules, side by side.

Usage: adapt-figures.py SCRIPT ZONE START DAYS NAME=RESULTS.jsonl...
       [--table] [--hours FILE]

SCRIPT is the LLM double's script.json whose "windows" are when real
events happen (local time in ZONE; t/llm-double.py); START (Unix
seconds) and DAYS bound the simulation; each RESULTS file holds the wake
results of one schedule (t/adapt-sim.sh).  Every minute inside a window
is an event; it is reported by the first request at or after it, and
its detection delay is the wait until then.  Prints one JSON object:
for each schedule and each week (and "all"): requests, real, ghosts,
requests inside the windows, and the mean and worst detection delay in
minutes.  --table prints a text table instead; --hours FILE writes
the wakes per hour of the week of the last week, one line per hour,
one column per schedule (for gnuplot).
"""
import bisect
import datetime
import json
import sys
from zoneinfo import ZoneInfo


def windows(path):
    with open(path) as f:
        return json.load(f)["windows"]


def inside(ws, local):
    m = local.hour * 60 + local.minute
    for w in ws:
        fh, fm = map(int, w["from"].split(":"))
        th, tm = map(int, w["to"].split(":"))
        if (local.weekday() in w.get("weekday", range(7)) and
                fh * 60 + fm <= m < th * 60 + tm):
            return True
    return False


def requests(path):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("status") in ("ok", "idle"):
                t = datetime.datetime.strptime(r["at"], "%Y-%m-%dT%H:%M:%SZ")
                out.append((int(t.replace(tzinfo=datetime.timezone.utc)
                                .timestamp()), r["status"]))
    return sorted(out)


def figures(reqs, ws, zone, lo, hi):
    sel = [r for r in reqs if lo <= r[0] < hi]
    ts = [r[0] for r in reqs]
    delays = []
    for e in range(lo - lo % 60, hi, 60):
        if e < lo or not inside(ws, datetime.datetime.fromtimestamp(e, zone)):
            continue
        i = bisect.bisect_left(ts, e)
        if i < len(ts):
            delays.append((ts[i] - e) / 60)
    inw = sum(1 for r in sel
              if inside(ws, datetime.datetime.fromtimestamp(r[0], zone)))
    return {
        "requests": len(sel),
        "real": sum(1 for r in sel if r[1] == "ok"),
        "ghosts": sum(1 for r in sel if r[1] == "idle"),
        "in_windows": inw,
        "in_windows_share": round(inw / len(sel), 3) if sel else 0,
        "mean_delay_min": round(sum(delays) / len(delays), 2)
        if delays else None,
        "worst_delay_min": round(max(delays), 2) if delays else None,
    }


def per_hour(reqs, zone, lo, hi):
    n = [0] * 168
    for t, _ in reqs:
        if lo <= t < hi:
            d = datetime.datetime.fromtimestamp(t, zone)
            n[d.weekday() * 24 + d.hour] += 1
    return n


def table(out, names):
    rows = [("requests", "requests"), ("real answers", "real"),
            ("ghosts", "ghosts"), ("in market hours", "in_windows"),
            ("mean delay (min)", "mean_delay_min"),
            ("worst delay (min)", "worst_delay_min")]
    periods = [p for p in out[names[0]] if p != "per_hour"]
    w = 10 * len(names)
    lines = ["%-18s" % "" + " | ".join("%-*s" % (w, p) for p in periods),
             "%-18s" % "" + " | ".join("".join("%10s" % n for n in names)
                                       for p in periods)]
    for label, key in rows:
        lines.append("%-18s" % label + " | ".join(
            "".join("%10s" % out[n][p][key] for n in names)
            for p in periods))
    return "\n".join(l.rstrip() for l in lines)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    hours = None
    if "--hours" in sys.argv:
        hours = sys.argv[sys.argv.index("--hours") + 1]
        args.remove(hours)
    ws = windows(args[0])
    zone = ZoneInfo(args[1])
    start, days = int(args[2]), int(args[3])
    runs = [a.split("=", 1) for a in args[4:]]
    out = {}
    for name, path in runs:
        reqs = requests(path)
        o = {}
        for w in range((days + 6) // 7):
            lo = start + w * 7 * 86400
            hi = min(lo + 7 * 86400, start + days * 86400)
            o["week%d" % (w + 1)] = figures(reqs, ws, zone, lo, hi)
        o["all"] = figures(reqs, ws, zone, start, start + days * 86400)
        lo = start + ((days - 1) // 7) * 7 * 86400
        o["per_hour"] = per_hour(reqs, zone, lo, lo + 7 * 86400)
        out[name] = o
    if hours:
        with open(hours, "w") as f:
            for h in range(168):
                f.write("%d %s\n" % (h, " ".join(str(out[n]["per_hour"][h])
                                                 for n, _ in runs)))
    if "--table" in sys.argv:
        print(table(out, [n for n, _ in runs]))
    else:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
