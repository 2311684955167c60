#!/usr/bin/env python3
"""The GPU tests a run left unfinished: the tests of the (filtered) list that
no process's log shows passed, failed or skipped, because the process that
had them (gtest sharding) reached its time limit first. Prints them one per
line, for the next call's GTEST_FILTER_FILE (bench/device_run.sh).

    attnjit_gpu_tests --gtest_list_tests [--gtest_filter=F] |
        python3 bench/gpu_unfinished.py LOG ...

--self-test checks the listing and log parsing on made-up input.
"""

import argparse
import re
import sys

DONE = re.compile(r"^\[ {7}OK \] (\S+)|^\[  FAILED  \] (\S+) \(|^\[  SKIPPED \] (\S+)")


def listed_tests(lines):
    """Full test names, in order, from --gtest_list_tests output."""
    names, suite = [], None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("Running main()") or line.startswith("Note:"):
            continue
        if not line.startswith(" "):
            suite = line.split()[0]
        elif suite is not None:
            names.append(suite + line.split()[0])
    return names


def finished(lines):
    """Names a log shows ended (passed, failed or skipped)."""
    out = set()
    for line in lines:
        m = DONE.match(line)
        if m:
            out.add(next(g for g in m.groups() if g))
    return out


def unfinished(names, logs):
    done = set()
    for log in logs:
        done |= finished(log)
    return [n for n in names if n not in done]


def self_test():
    listing = ["Running main() from gtest_main.cc", "Soak/Parts.", "  Run/0  # GetParam() = 0",
               "  Run/1  # GetParam() = 1", "Plain.", "  A", "  B"]
    names = listed_tests(listing)
    assert names == ["Soak/Parts.Run/0", "Soak/Parts.Run/1", "Plain.A", "Plain.B"], names
    logs = [["[       OK ] Soak/Parts.Run/0 (3 ms)", "[ RUN      ] Plain.A"],
            ["[  FAILED  ] Soak/Parts.Run/1 (9 ms)", "[  SKIPPED ] Plain.B (0 ms)"]]
    assert unfinished(names, logs) == ["Plain.A"], unfinished(names, logs)
    # A summary line naming a failed test is not the test's own end.
    assert finished(["[  FAILED  ] 1 test, listed below:"]) == set()
    print("gpu_unfinished self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("logs", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    logs = []
    for path in args.logs:
        with open(path, errors="replace") as f:
            logs.append(f.read().splitlines())
    for name in unfinished(listed_tests(sys.stdin), logs):
        print(name)


if __name__ == "__main__":
    main()
