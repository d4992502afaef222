#!/usr/bin/env python3
"""Counts the include arrows between the folders of runtime/src/ that point upward.

    scripts/runtime_layers.py [--root DIR] [--best] [-v]

A file's folder is its directory under runtime/src/ ("." for the top level). Only quoted includes
that name a file of runtime/src/ count (the public headers, runtime/include/, are below every
folder). A private header is counted with the .cc that implements it (same name), wherever the
header lies, so that a folder of headers only (the old runtime/src/internal/) does not hide whose
code they are.

Default: checks the layering of docs/architecture.md (LAYERS below, lowest first): an arrow from a
folder to one of a higher layer, or to a folder of the same layer, points upward (or sideways,
which is not allowed either). --best instead finds the order of the folders with the fewest
upward arrows (for any tree, the old one included) and reports that minimum and the arrows that
run inside a cycle of folders.

Exit 0: no upward arrow; 1: some, each listed; 2: bad usage or a folder LAYERS does not place.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# Lowest first; a folder may include only folders of lower layers. Mirrors docs/architecture.md.
LAYERS = [
    ["schedule", "exchange", "storage"],
    ["execution", "permute", "input"],
    ["distributed"],
    ["checkpoint"],
    ["."],
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def arrows(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if name.endswith((".cc", ".h")):
                rel = os.path.relpath(os.path.join(dirpath, name), src)
                files[rel] = os.path.dirname(rel) or "."
    impl = {}
    for rel, folder in files.items():
        if rel.endswith(".cc"):
            impl.setdefault(os.path.basename(rel)[:-3], folder)
    def folder_of(rel):
        if rel.endswith(".h"):
            return impl.get(os.path.basename(rel)[:-2], files[rel])
        return files[rel]
    out = []
    for rel in sorted(files):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            text = f.read()
        for target in INCLUDE.findall(text):
            if target in files:
                out.append((rel, target, folder_of(rel), folder_of(target)))
    return out


def best_order(folders, weight):
    # Fewest upward arrows over all orders: f(S) = min over v in S (v the highest of S) of
    # f(S - v) + arrows from S - v up to v. Exact; fine for the dozen folders this sees.
    n = len(folders)
    cost = [0] * (1 << n)
    pick = [0] * (1 << n)
    for s in range(1, 1 << n):
        cost[s] = None
        for v in range(n):
            if s >> v & 1:
                rest = s & ~(1 << v)
                c = cost[rest] + sum(weight[(folders[u], folders[v])]
                                     for u in range(n) if rest >> u & 1)
                if cost[s] is None or c < cost[s]:
                    cost[s], pick[s] = c, v
    order, s = [], (1 << n) - 1
    while s:
        order.append(folders[pick[s]])
        s &= ~(1 << pick[s])
    return cost[-1], order[::-1]


def cycles(folders, edges):
    # Folders that reach each other (Tarjan's components are overkill at this size).
    reach = {f: {f} for f in folders}
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            new = reach[b] - reach[a]
            if new:
                reach[a] |= new
                changed = True
    return lambda a, b: a in reach[b] and b in reach[a]


def main():
    parser = argparse.ArgumentParser(usage=__doc__.splitlines()[2].strip())
    parser.add_argument("--root", default=None)
    parser.add_argument("--best", action="store_true")
    parser.add_argument("-v", action="store_true", help="list every arrow between folders")
    args = parser.parse_args()
    root = args.root or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], check=True,
                          capture_output=True, text=True).stdout.strip()
    src = os.path.join(root, "runtime", "src")
    all_arrows = arrows(src)
    across = [a for a in all_arrows if a[2] != a[3]]
    folders = sorted({a[2] for a in all_arrows} | {a[3] for a in all_arrows})
    weight = collections.Counter((a[2], a[3]) for a in across)
    print(f"{len(all_arrows)} include arrows inside runtime/src/, {len(across)} between folders "
          f"({', '.join(folders)})")
    if args.v:
        for (a, b), w in sorted(weight.items()):
            print(f"  {a} -> {b}: {w}")
    if args.best:
        upward, order = best_order(folders, weight)
        in_cycle = cycles(folders, weight)
        cyclic = [a for a in across if in_cycle(a[2], a[3])]
        print(f"best layering, lowest first: {' < '.join(order)}")
        print(f"upward arrows under it: {upward}; arrows inside a cycle of folders: {len(cyclic)}")
        rank = {f: i for i, f in enumerate(order)}
        for a in across:
            if rank[a[2]] < rank[a[3]]:
                print(f"  up: {a[0]} -> {a[1]}")
        return 1 if upward else 0
    rank = {f: i for i, layer in enumerate(LAYERS) for f in layer}
    unplaced = [f for f in folders if f not in rank]
    if unplaced:
        print(f"runtime_layers: folders not in LAYERS: {', '.join(unplaced)}", file=sys.stderr)
        return 2
    up = [a for a in across if rank[a[2]] <= rank[a[3]]]
    for a in up:
        print(f"  up: {a[0]} ({a[2]}) -> {a[1]} ({a[3]})")
    print(f"upward arrows: {len(up)}")
    return 1 if up else 0


if __name__ == "__main__":
    sys.exit(main())
