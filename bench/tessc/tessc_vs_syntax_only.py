#!/usr/bin/env python3
"""tessc wall time per translation unit against `clang-16 -fsyntax-only` on the same file.

For each source (default: every apps/**/*.cc in the compilation database) both commands get the
file's own compile command from compile_commands.json, run REPEAT times alternately, and the
median wall and CPU (user + system) times are compared. Prints a Markdown table (the one in bench/README.md).

  python3 bench/tessc/tessc_vs_syntax_only.py --build build [--repeat 7] [files...]
"""
import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time


def clang_args(entry):
    """The compile command's flags, without compiler, output and the source itself."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a == entry["file"] or a.endswith(os.path.basename(entry["file"])):
            continue
        out.append(a)
    return out


def timed(cmd, cwd):
    """(wall seconds, CPU seconds of the child): CPU time is what to compare on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build", default="build", help="build dir with compile_commands.json and bin/tessc")
    p.add_argument("--clang", default="clang-16")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("files", nargs="*")
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    db = json.load(open(os.path.join(a.build, "compile_commands.json")))
    by_file = {os.path.realpath(e["file"]): e for e in db}
    files = [os.path.realpath(f) for f in a.files] or sorted(
        f for f in by_file
        if "/apps/" in f and "/tests/" not in f and not f.startswith(a.build + os.sep))
    tessc = os.path.join(a.build, "bin", "tessc")
    print("| translation unit | parallel_for sites | clang -fsyntax-only wall / CPU (s) "
          "| tessc wall / CPU (s) | ratio wall / CPU |")
    print("|---|---|---|---|---|")
    for f in files:
        e = by_file[f]
        flags = clang_args(e)
        syntax = [a.clang, "-fsyntax-only", "-Wno-unknown-warning-option", "-Qunused-arguments"] + flags + [f]
        tool = [tessc, "-p", a.build, f]
        timed(syntax, e["directory"])  # warm the page cache
        timed(tool, e["directory"])
        ts, tt = [], []
        for _ in range(a.repeat):
            ts.append(timed(syntax, e["directory"]))
            tt.append(timed(tool, e["directory"]))
        sites = subprocess.run([tessc, "-p", a.build, "--emit=json", f], capture_output=True,
                               text=True, cwd=e["directory"])
        n = len(json.loads(sites.stdout)["sites"]) if sites.returncode == 0 else "error"
        ms = statistics.median(t[0] for t in ts)
        mt = statistics.median(t[0] for t in tt)
        cs = statistics.median(t[1] for t in ts)
        ct = statistics.median(t[1] for t in tt)
        rel = os.path.relpath(f, os.path.dirname(os.path.abspath(a.build)))
        print(f"| {rel} | {n} | {ms:.2f} / {cs:.2f} | {mt:.2f} / {ct:.2f} | "
              f"{mt / ms:.2f}x / {ct / cs:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
