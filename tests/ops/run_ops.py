#!/usr/bin/env python3
"""run_ops.py FAMILY...: runs the op cases of tests/ops/cases_<family>.py against PyTorch.

Each cases module defines `cases()` returning a list of harness.Case. Exits 77 (ctest: skipped)
when torch or numpy cannot be imported by this interpreter.
"""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy  # noqa: F401
    import torch  # noqa: F401
except ImportError as e:
    print("skipped: %s (install python3-torch, or run scripts/setup-venv.sh)" % e)
    sys.exit(77)

import harness  # noqa: E402


def main(families):
    status = 0
    for family in families:
        module = importlib.import_module("cases_" + family)
        torch.manual_seed(0)
        status |= harness.run_cases(module.cases(), family)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
