#!/usr/bin/env python3
"""Summarizes the --metrics JSON lines of mf / lda runs for bench/apps/run.sh.

    summarize.py mf LABEL FILE [TARGET_RMSE]     -> one markdown row
    summarize.py lda LABEL FILE [TARGET_LL]      -> one markdown row
    summarize.py curve FILE EVERY                -> elapsed_s and quality every EVERY epochs/iterations
Medians are over epochs/iterations 2..N (the first one builds blocks and tables).
"""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def med(values):
    return statistics.median(values) if values else float("nan")


def main():
    kind = sys.argv[1]
    if kind == "curve":
        rows = load(sys.argv[2])
        every = int(sys.argv[3])
        key = "test_rmse" if rows and rows[0]["app"] == "mf" else "loglik_per_token"
        step = "epoch" if key == "test_rmse" else "iteration"
        pts = [f"{r[step]}: {r['elapsed_s']:.2f}s {r[key]:.4f}" for r in rows
               if r[step] % every == 0 or r is rows[-1]]
        print("; ".join(pts))
        return
    label, path = sys.argv[2], sys.argv[3]
    target = float(sys.argv[4]) if len(sys.argv) > 4 else None
    rows = load(path)
    tail = rows[1:] if len(rows) > 1 else rows
    if kind == "mf":
        hit = next((r for r in rows if target is not None and r["test_rmse"] <= target), None)
        print(f"| {label} | {len(rows)} | {med([r['epoch_s'] for r in tail]):.3f} | "
              f"{med([r['updates_per_s'] for r in tail]):.3e} | "
              f"{med([r['updates_per_cpu_s'] for r in tail]):.3e} | {rows[-1]['test_rmse']:.4f} | "
              f"{rows[-1]['elapsed_s']:.2f} | "
              + (f"{hit['elapsed_s']:.2f} (epoch {hit['epoch']})" if hit else "not reached") + " |")
    else:
        hit = next((r for r in rows if target is not None and r["loglik_per_token"] >= target), None)
        print(f"| {label} | {len(rows)} | {med([r['iteration_s'] for r in tail]):.3f} | "
              f"{med([r['tokens_per_s'] for r in tail]):.3e} | "
              f"{med([r['tokens_per_cpu_s'] for r in tail]):.3e} | {rows[-1]['loglik_per_token']:.4f} | "
              f"{rows[-1]['elapsed_s']:.2f} | "
              + (f"{hit['elapsed_s']:.2f} (iter {hit['iteration']})" if hit else "not reached") + " |")


if __name__ == "__main__":
    main()
