#!/usr/bin/env python3
"""libattnjit.so exports the C API and the public C++ API, nothing else, and
carries its SONAME.

usage: check_shared_library.py LIBRARY HEADER SONAME

Every ATTNJIT_API declaration of HEADER (attnjit.h) must be defined and no
other C symbol; the C++ symbols must all be in namespace attnjit (or its
classes' type information and vtables), none from a source file's own
helpers (attnjit::detail::, anonymous namespaces), yaml-cpp, fmt or std::;
and the entry points a C++ caller needs must be there. `readelf -d` must
show SONAME, and libcuda must not be a dependency (the driver is opened at
run time)."""
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    library, header, soname = sys.argv[1:]
    text = open(header, encoding="utf-8").read()
    api = set(re.findall(r"^ATTNJIT_API\b[^(;]*?\b(attnjit_\w+)\s*\(", text, re.M))
    if len(api) < 10:
        print(f"{header}: found only {len(api)} ATTNJIT_API functions", file=sys.stderr)
        return 1

    nm = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                        capture_output=True, text=True).stdout
    exported = set()
    for line in nm.splitlines():
        fields = line.split()
        if len(fields) == 3:
            exported.add(fields[2])
        elif len(fields) == 2:
            exported.add(fields[1])
    failed = False
    missing = sorted(api - exported)
    mangled = sorted(name for name in exported if name.startswith("_Z"))
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), check=True,
                               capture_output=True, text=True).stdout.splitlines()
    cxx = dict(zip(mangled, demangled))
    allowed = ("attnjit::", "typeinfo for attnjit::", "typeinfo name for attnjit::",
               "vtable for attnjit::")
    extra = sorted(name for name in exported - api
                   if not (name in cxx and cxx[name].startswith(allowed)
                           and "(anonymous namespace)" not in cxx[name]
                           and "attnjit::detail::" not in cxx[name]))
    extra = [cxx.get(name, name) for name in extra]
    needed_cxx = ["attnjit::AttentionKernel::get(", "attnjit::resolve_flags(",
                  "attnjit::KernelCache::global()", "attnjit::load_embedded_spec(",
                  "attnjit::make_signature(", "typeinfo for attnjit::Error"]
    for entry in needed_cxx:
        if not any(d.startswith(entry) for d in cxx.values()):
            print(f"{library}: C++ API entry not exported: {entry}", file=sys.stderr)
            failed = True
    if missing:
        print(f"{library}: C API functions not exported: {', '.join(missing)}", file=sys.stderr)
        failed = True
    if extra:
        shown = ", ".join(extra[:20]) + (f" and {len(extra) - 20} more" if len(extra) > 20 else "")
        print(f"{library}: exports symbols outside the C and C++ APIs: {shown}",
              file=sys.stderr)
        failed = True

    dynamic = subprocess.run(["readelf", "-d", library], check=True, capture_output=True,
                             text=True).stdout
    sonames = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dynamic)
    if sonames != [soname]:
        print(f"{library}: SONAME is {sonames or 'missing'}, expected {soname}", file=sys.stderr)
        failed = True
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    if any(name.startswith("libcuda.") for name in needed):
        print(f"{library}: links libcuda ({', '.join(needed)})", file=sys.stderr)
        failed = True

    if not failed:
        print(f"{library}: {len(api)} C API functions and {len(cxx)} C++ API symbols "
              f"exported, nothing else; "
              f"SONAME {soname}; needs {', '.join(needed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
