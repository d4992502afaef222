#!/usr/bin/env python3
"""A synthetic low-rank rating matrix for the MF benchmark: `user item rating` lines.

rating(u, i) = 3 + <a_u, b_i> + noise, with a_u, b_i ~ N(0, rank^-1/4) per component (so the
signal <a_u, b_i> has variance 1) and noise ~ N(0, --noise); every user rates about nnz/users
distinct items, chosen uniformly. Ids are 1-based. The best achievable test RMSE is about --noise
(mf -k 40 --lambda 0.02 reaches 0.335 after 10 epochs with the defaults).

    python3 bench/apps/gen_lowrank.py --out /tmp/tessera-bench/lowrank.txt   # 5M ratings
"""
import argparse
import os
import random


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output file (put it under /tmp, not in the repo)")
    p.add_argument("--users", type=int, default=50000)
    p.add_argument("--items", type=int, default=10000)
    p.add_argument("--nnz", type=int, default=5000000)
    p.add_argument("--rank", type=int, default=8, help="rank of the true matrix")
    p.add_argument("--noise", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    s = a.rank ** -0.25
    A = [[rng.gauss(0, s) for _ in range(a.rank)] for _ in range(a.users)]
    B = [[rng.gauss(0, s) for _ in range(a.rank)] for _ in range(a.items)]
    per_user, extra = divmod(a.nnz, a.users)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        for u in range(a.users):
            n = per_user + (1 if u < extra else 0)
            au = A[u]
            lines = []
            for i in rng.sample(range(a.items), n):
                bi = B[i]
                r = 3.0 + sum(x * y for x, y in zip(au, bi)) + rng.gauss(0, a.noise)
                lines.append(f"{u + 1} {i + 1} {r:.3f}\n")
            f.writelines(lines)
    os.replace(tmp, a.out)
    print(f"{a.out}: {a.users} users, {a.items} items, {a.nnz} ratings, rank {a.rank}, noise {a.noise}")


if __name__ == "__main__":
    main()
