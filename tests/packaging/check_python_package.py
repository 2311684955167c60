#!/usr/bin/env python3
"""The Python package's install instructions and build requirements agree.

- python/pyproject.toml declares the build backend it names and every
  build-time Python package python/CMakeLists.txt runs (nanobind), and asks
  scikit-build-core for a CMake at least as new as the root CMakeLists.txt
  requires (so `pip install ./python` fetches one where the system's is older).
- python/README.md gives the standard `pip install ./python`, says that torch
  is installed first and which torch version was tested, and where it gives
  the `--no-build-isolation` form it lists what that form needs installed.
- The root README's PyTorch example installs the same way.

    check_python_package.py REPO_ROOT
Prints each problem and exits 1; exits 0 when there is none.
"""

import os
import re
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    print("skipped: tomllib needs Python 3.11")
    sys.exit(0)


def requirement_name(requirement):
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    read = lambda path: open(os.path.join(root, path), encoding="utf-8").read()
    problems = []

    pyproject = tomllib.loads(read("python/pyproject.toml"))
    build = pyproject.get("build-system", {})
    requires = {requirement_name(r) for r in build.get("requires", [])}
    backend = build.get("build-backend", "")
    if backend.startswith("scikit_build_core") and "scikit-build-core" not in requires:
        problems.append("pyproject: build-backend scikit_build_core but scikit-build-core "
                        "is not in build-system.requires")
    if "nanobind" in read("python/CMakeLists.txt") and "nanobind" not in requires:
        problems.append("pyproject: python/CMakeLists.txt uses nanobind but "
                        "build-system.requires lacks it")

    minimum = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+([0-9.]+)",
                        read("CMakeLists.txt"))
    cmake_spec = pyproject.get("tool", {}).get("scikit-build", {}).get("cmake", {}).get("version")
    if not cmake_spec:
        problems.append("pyproject: tool.scikit-build cmake.version is not set (the root "
                        f"CMakeLists.txt needs cmake >= {minimum.group(1)})")
    elif minimum and version_tuple(cmake_spec) < version_tuple(minimum.group(1)):
        problems.append(f"pyproject: cmake.version '{cmake_spec}' is below the root "
                        f"CMakeLists.txt's {minimum.group(1)}")

    readme = read("python/README.md")
    lines = [line.strip() for line in readme.splitlines()]
    if "pip install ./python" not in lines:
        problems.append("python/README.md: no `pip install ./python` line (the standard install)")
    else:
        before = readme[:readme.index("pip install ./python")]
        if "torch" not in before.lower():
            problems.append("python/README.md: does not say that torch is installed before "
                            "`pip install ./python`")
    if not re.search(r"torch 2\.\d+", readme):
        problems.append("python/README.md: does not say which torch version was tested")
    if "--no-build-isolation" in readme:
        missing = [name for name in sorted(requires) if name not in readme]
        if missing:
            problems.append("python/README.md: the --no-build-isolation form does not list "
                            "what it needs installed: " + ", ".join(missing))

    top = read("README.md")
    if "pip install ./python" not in top:
        problems.append("README.md: the PyTorch example does not install with "
                        "`pip install ./python`")

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("ok: the Python package's build requirements and install instructions agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
