#!/usr/bin/env python3
"""Compare the loss curves of two train_tiny_transformer.py --json summaries.

Passes when, at every step, |a - b| <= atol + rtol * |b|. Prints one line
with the largest difference; exits 1 when the curves differ beyond the
tolerance or have different lengths.

  python3 compare_runs.py unifuse.json reference.json --rtol 1e-3
"""

import argparse
import json
import sys


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-5)
    args = p.parse_args(argv)
    with open(args.a) as f:
        a = json.load(f)["losses"]
    with open(args.b) as f:
        b = json.load(f)["losses"]
    if len(a) != len(b) or not a:
        print("compare: %s has %d steps, %s has %d" % (args.a, len(a), args.b, len(b)))
        return 1
    diffs = [abs(x - y) for x, y in zip(a, b)]
    worst = max(range(len(a)), key=lambda i: diffs[i] / (args.atol + args.rtol * abs(b[i])))
    ok = all(d <= args.atol + args.rtol * abs(y) for d, y in zip(diffs, b))
    print("compare: %d steps, largest difference at step %d: %.6g vs %.6g (|diff| %.3g, rtol "
          "%g, atol %g): %s" % (len(a), worst + 1, a[worst], b[worst], diffs[worst], args.rtol,
                                 args.atol, "match" if ok else "DIFFER"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
