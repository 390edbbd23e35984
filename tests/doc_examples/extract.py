#!/usr/bin/env python3
"""Writes the fenced code blocks of a markdown file that are marked for
testing, so that CI compiles and runs the documentation's examples as
written (.ci/steps/consumers.sh for C, .ci/steps/python.sh for PyTorch).

A block is marked by an HTML comment on the line before its opening fence
(blank lines between are allowed):

    <!-- tested: example.c -->
    ```c
    ...
    ```

Usage: extract.py DOC.md --out DIR NAME...   writes DIR/NAME for each NAME
       extract.py DOC.md --list               prints every marked name

Exits 1 when a NAME is not marked, is marked twice, or its marker is not
followed by a fence that closes: a renamed or removed example fails the
check rather than leaving nothing to test.
"""

import argparse
import os
import re
import sys

MARKER = re.compile(r"^<!--\s*tested:\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})")


def marked_blocks(lines, doc):
    """{name: text} of every marked block; raises ValueError on a malformed one."""
    blocks = {}
    i = 0
    while i < len(lines):
        match = MARKER.match(lines[i])
        i += 1
        if not match:
            continue
        name, where = match.group(1), "%s:%d" % (doc, i)
        while i < len(lines) and not lines[i].strip():
            i += 1
        opening = FENCE.match(lines[i]) if i < len(lines) else None
        if not opening:
            raise ValueError("%s: marker '%s' is not followed by a fenced block" % (where, name))
        # The block closes at a line of the same fence character, at least as long.
        closing = re.compile(r"^%s{%d,}\s*$" % (re.escape(opening.group(1)[0]),
                                                 len(opening.group(1))))
        start = i = i + 1
        while i < len(lines) and not closing.match(lines[i]):
            i += 1
        if i == len(lines):
            raise ValueError("%s: the block of '%s' never closes" % (where, name))
        if os.path.basename(name) != name:
            raise ValueError("%s: '%s' is not a plain file name" % (where, name))
        if name in blocks:
            raise ValueError("%s: '%s' is marked twice" % (where, name))
        blocks[name] = "".join(lines[start:i])
        i += 1
    return blocks


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("doc")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--out", help="folder to write the blocks into")
    parser.add_argument("--list", action="store_true", help="print the marked names")
    args = parser.parse_intermixed_args(argv)
    with open(args.doc, encoding="utf-8") as f:
        lines = f.readlines()
    try:
        blocks = marked_blocks(lines, args.doc)
    except ValueError as e:
        print("extract.py: %s" % e, file=sys.stderr)
        return 1
    if args.list:
        print("\n".join(blocks))
        return 0
    if not args.out or not args.names:
        parser.error("give --out DIR and the names to extract, or --list")
    missing = [n for n in args.names if n not in blocks]
    for name in missing:
        print("extract.py: %s: no block marked '<!-- tested: %s -->'" % (args.doc, name),
              file=sys.stderr)
    if missing:
        return 1
    for name in args.names:
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(blocks[name])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
