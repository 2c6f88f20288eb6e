#!/usr/bin/env python3
"""adapt-figures.py - figures of simulated schedules, side by side.

Usage: adapt-figures.py SCRIPT ZONE START DAYS NAME=RESULTS.jsonl...
       [--table] [--hours FILE]
       adapt-figures.py --summary LABEL=FIGURES.json...

SCRIPT is the LLM double's script.json whose "windows" are when real
events happen (local time in ZONE, as t/llm-double.py reads them: it is
the same code); START (Unix seconds) and DAYS bound the simulation;
each RESULTS file holds the wake results of one schedule
(t/adapt-sim.sh), the first being the reference (a fixed schedule).
Every minute inside a window is an event; it is reported by the first
request at or after it, and its detection delay is the wait until then.
Prints one JSON object: for each schedule and each week (and "all"):
requests, real, ghosts, requests inside the windows, and the mean and
worst detection delay in minutes; "days", the same per day (null
delays on a day without events); and for every schedule after the
first, "caught_up": the first day (0 is START's) of the last week from
which, on every day with events, the mean delay is at most the
reference's plus 10% and the worst at most its plus 50% (null: not
by the end).
--table prints a text table instead; --hours FILE writes the wakes per
hour of the week of the last week, one line per hour: the hour, one
column per schedule, and the minutes of events in it (for gnuplot).

--summary reads the JSON of several runs (each with a "fixed" and an
"adaptive" schedule) and prints one line per run, LABEL first: week
two's requests, real answers, mean and worst delay of each, whether
the adaptive one meets the goal (at most half the fixed requests, a
mean delay at most 10% and a worst at most 50% above the fixed), its
week one requests, and from which day of week two (day 0 its first)
every day with events kept within those delay bounds.
"""
import bisect
import datetime
import importlib.util
import json
import os
import sys
from zoneinfo import ZoneInfo

_spec = importlib.util.spec_from_file_location(
    "llm_double", os.path.join(os.path.dirname(__file__), "llm-double.py"))
double = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(double)


def windows(path):
    with open(path) as f:
        return json.load(f)["windows"]


def inside(ws, t, zone):
    local = datetime.datetime.fromtimestamp(t, zone).replace(tzinfo=None)
    return any(double.in_window(w, None, local) for w in ws)


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


def figures(reqs, events, ws, zone, lo, hi):
    sel = [r for r in reqs if lo <= r[0] < hi]
    ts = [r[0] for r in reqs]
    delays = []
    for e in events[bisect.bisect_left(events, lo):
                    bisect.bisect_left(events, hi)]:
        i = bisect.bisect_left(ts, e)
        if i < len(ts):
            delays.append((ts[i] - e) / 60)
    inw = sum(1 for r in sel if inside(ws, r[0], zone))
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


def per_hour(ts, zone, lo, hi):
    n = [0] * 168
    for t in ts:
        if lo <= t < hi:
            d = datetime.datetime.fromtimestamp(t, zone)
            n[d.weekday() * 24 + d.hour] += 1
    return n


def caught_up(days, ref, first):
    """The first day >= first from which every day with events keeps
    within the bounds of the reference's same day; None: never."""
    seen = [i for i in range(first, len(days))
            if days[i]["mean_delay_min"] is not None]
    bad = [i for i in seen
           if days[i]["mean_delay_min"] > ref[i]["mean_delay_min"] * 1.1
           or days[i]["worst_delay_min"] > ref[i]["worst_delay_min"] * 1.5]
    if not bad:
        return first
    later = [i for i in seen if i > bad[-1]]
    return later[0] if later else None


def table(out, names):
    rows = [("requests", "requests"), ("real answers", "real"),
            ("ghosts", "ghosts"), ("in the windows", "in_windows"),
            ("mean delay (min)", "mean_delay_min"),
            ("worst delay (min)", "worst_delay_min")]
    periods = [p for p in out[names[0]] if p.startswith("week") or
               p == "all"]
    w = 10 * len(names)
    lines = ["%-18s" % "" + " | ".join("%-*s" % (w, p) for p in periods),
             "%-18s" % "" + " | ".join("".join("%10s" % n for n in names)
                                       for p in periods)]
    for label, key in rows:
        lines.append("%-18s" % label + " | ".join(
            "".join("%10s" % out[n][p][key] for n in names)
            for p in periods))
    return "\n".join(l.rstrip() for l in lines)


def goal(f, a):
    if None in (f["mean_delay_min"], a["mean_delay_min"]):
        return False
    return (a["requests"] * 2 <= f["requests"] and
            a["mean_delay_min"] <= f["mean_delay_min"] * 1.1 and
            a["worst_delay_min"] <= f["worst_delay_min"] * 1.5)


def minutes(x):
    return "%5s" % "-" if x is None else "%5.1f" % x


def summary(runs):
    w = max([len(label) for label, _ in runs] + [8])
    lines = ["%-*s  %-22s  %-22s  %-4s  %5s  %s" % (
        w, "", "fixed", "adaptive", "", "week", "caught"),
        "%-*s  %s  %s  %-4s  %5s  %s" % (
            w, "week two", "  req real  mean worst", "  req real  mean worst",
            "goal", "one", "up on")]
    for label, path in runs:
        with open(path) as fp:
            o = json.load(fp)
        f, a = o["fixed"]["week2"], o["adaptive"]["week2"]
        c = o["adaptive"]["caught_up"]
        lines.append("%-*s  %5d %4d %s %s  %5d %4d %s %s  "
                     "%-4s  %5d  %s" % (
                         w, label, f["requests"], f["real"],
                         minutes(f["mean_delay_min"]),
                         minutes(f["worst_delay_min"]),
                         a["requests"], a["real"],
                         minutes(a["mean_delay_min"]),
                         minutes(a["worst_delay_min"]),
                         "met" if goal(f, a) else "no",
                         o["adaptive"]["week1"]["requests"],
                         "never" if c is None else "day %d" % (c - 7)))
    return "\n".join(l.rstrip() for l in lines)


def main():
    if sys.argv[1:2] == ["--summary"]:
        print(summary([a.split("=", 1) for a in sys.argv[2:]]))
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    hours = None
    if "--hours" in sys.argv:
        hours = sys.argv[sys.argv.index("--hours") + 1]
        args.remove(hours)
    ws = windows(args[0])
    zone = ZoneInfo(args[1])
    start, days = int(args[2]), int(args[3])
    runs = [a.split("=", 1) for a in args[4:]]
    end = start + days * 86400
    events = [e for e in range(start, end, 60) if inside(ws, e, zone)]
    out = {}
    for name, path in runs:
        reqs = requests(path)
        o = {}
        for w in range((days + 6) // 7):
            lo = start + w * 7 * 86400
            o["week%d" % (w + 1)] = figures(reqs, events, ws, zone, lo,
                                            min(lo + 7 * 86400, end))
        o["all"] = figures(reqs, events, ws, zone, start, end)
        o["days"] = [figures(reqs, events, ws, zone, start + d * 86400,
                             start + (d + 1) * 86400) for d in range(days)]
        lo = start + ((days - 1) // 7) * 7 * 86400
        o["per_hour"] = per_hour([r[0] for r in reqs], zone, lo,
                                 lo + 7 * 86400)
        out[name] = o
    ref = out[runs[0][0]]["days"]
    for name, _ in runs[1:]:
        out[name]["caught_up"] = caught_up(out[name]["days"], ref,
                                           (days - 1) // 7 * 7)
    if hours:
        ev = per_hour(events, zone, lo, lo + 7 * 86400)
        with open(hours, "w") as f:
            for h in range(168):
                f.write("%d %s %d\n" % (h, " ".join(
                    str(out[n]["per_hour"][h]) for n, _ in runs), ev[h]))
    if "--table" in sys.argv:
        print(table(out, [n for n, _ in runs]))
    else:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
