#!/usr/bin/env python3
"""specs/README.md lists the args a spec inherits through `extends:
attention`: the list between its inherited-args markers must name exactly
the args of specs/attention.yaml, in order."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
lines = (root / "specs" / "attention.yaml").read_text().split("\n")
start = next(n for n, line in enumerate(lines) if line.startswith("args:"))
spec_args = []
for line in lines[start + 1:]:
    if line and not line.startswith((" ", "#")):
        break
    m = re.match(r"\s*- \{name: ([A-Za-z_0-9]+)", line)
    if m:
        spec_args.append(m.group(1))
readme = (root / "specs" / "README.md").read_text()
block = readme.split("<!-- inherited-args -->")[1].split("<!-- /inherited-args -->")[0]
listed = re.findall(r"`([A-Za-z_0-9]+)`", block)
if listed != spec_args:
    missing = [a for a in spec_args if a not in listed]
    extra = [a for a in listed if a not in spec_args]
    print(f"specs/README.md's inherited args differ from specs/attention.yaml's: "
          f"missing {missing}, not args {extra}" + ("" if missing or extra else ", order differs"))
    sys.exit(1)
print(f"ok: specs/README.md lists the {len(spec_args)} inherited args")
