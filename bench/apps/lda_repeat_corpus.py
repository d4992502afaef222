#!/usr/bin/env python3
"""Writes a docword corpus made of COPIES copies of another, one after the other: copy c's
document d becomes document c * D + d (same vocabulary), so the result has COPIES times the
documents, entries and tokens. Used to make an LDA corpus of 20M+ tokens from 20news for the
memory benchmark (bench/README.md, "Distributed memory and traffic").

  python3 bench/apps/lda_repeat_corpus.py --docword docword.20news.txt --copies 10 --out /tmp/tb/lda_22m.txt
"""
import argparse


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docword", required=True)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.docword) as f:
        docs, vocab, nnz = (int(f.readline()) for _ in range(3))
        body = f.read().split("\n")
    entries = [line.split() for line in body if line.strip()]
    if len(entries) != nnz:
        raise SystemExit(f"{args.docword}: header says {nnz} entries, found {len(entries)}")
    with open(args.out, "w") as out:
        out.write(f"{docs * args.copies}\n{vocab}\n{nnz * args.copies}\n")
        for c in range(args.copies):
            offset = c * docs
            out.write("".join(f"{int(d) + offset} {w} {n}\n" for d, w, n in entries))


if __name__ == "__main__":
    main()
