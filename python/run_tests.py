#!/usr/bin/env python3
"""Runs the unittest suite in tests/ and ends with one summary line,
'unittest: N passed, N failed, N skipped', after the reasons for skips.

Usage: python3 run_tests.py [-v] [pattern]   (pattern: a test file glob,
default test_*.py). The library is found as unifuse_torch finds it
($UNIFUSE_LIBRARY, $UNIFUSE_BUILD_DIR, ...).
"""

import collections
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    verbose = "-v" in argv
    patterns = [a for a in argv if a != "-v"]
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(os.path.join(HERE, "tests"),
                                                pattern=patterns[0] if patterns else "test_*.py",
                                                top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2 if verbose else 1).run(suite)
    reasons = collections.Counter(reason for _, reason in result.skipped)
    for reason, n in sorted(reasons.items()):
        print("skipped %d: %s" % (n, reason))
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("unittest: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
