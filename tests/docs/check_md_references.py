#!/usr/bin/env python3
"""Fails when a tracked file mentions a markdown file the repository lacks.

Every name ending in .md written in a tracked text file (bench/results/
excepted: its logs are records of their day) must name a file of the tree:
a reference with a folder (`docs/semantics.md`, or one starting with ../)
must resolve from the repository root or from the referring file's folder,
a bare name must be the name of some file of the tree. Prints each dangling reference as
`file:line: 'reference'` and exits 1; exits 0 when there are none.

    check_md_references.py REPO_ROOT
"""

import os
import re
import subprocess
import sys

REFERENCE = re.compile(r"(?<![A-Za-z0-9_./-])((?:\.{1,2}/|[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\.md)\b")
EXCLUDED_PREFIXES = ("bench/results/",)


def tracked_files(root):
    try:
        # Tracked files and new ones not yet added (but not ignored ones).
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"skipped: {root} is not a git checkout ({e})")
        sys.exit(0)
    return sorted({p for p in out.decode().split("\0") if p})


def resolves(reference, referrer, files, names):
    if "/" not in reference:
        return reference in names
    candidates = (reference, os.path.join(os.path.dirname(referrer), reference))
    return any(os.path.normpath(c) in files for c in candidates)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = tracked_files(root)
    file_set = set(files)
    names = {os.path.basename(f) for f in files}
    dangling = []
    for path in files:
        if path.startswith(EXCLUDED_PREFIXES):
            continue
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue  # binary (images, corpus files) or not checked out
        for number, line in enumerate(lines, 1):
            for reference in REFERENCE.findall(line):
                if not resolves(reference, path, file_set, names):
                    dangling.append(f"{path}:{number}: '{reference}'")
    for entry in dangling:
        print(entry)
    if dangling:
        print(f"{len(dangling)} reference(s) to markdown files that are not in the repository")
        return 1
    print(f"ok: every markdown file named in {len(files)} tracked files exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
