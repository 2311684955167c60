#!/usr/bin/env python3
"""Checks how the units of compiler/ and runtime/, and the Python modules
of python/attnjit/ and bench/, depend on each other.

A unit is a header and the sources that implement it (spec.h with
spec_parse.cpp, flags.cpp, ...; see UNIT_OF). Every function is declared in
its own unit's header, so a call from one unit into another needs an
#include of that header, and the include graph between units is also their
call graph. This script fails on:

- a cycle between units, in compiler/ or runtime/;
- a compiler unit that includes a unit after it in COMPILER_ORDER (the
  pipeline: spec -> options -> signature -> codegen -> cache key -> NVRTC,
  over the units they share), or one missing from that order;
- a compiler file that includes a runtime header;
- a runtime unit that includes a unit after it in RUNTIME_ORDER (the
  layers: cache and driver below the kernel, the attention API's values
  below the parts of its launch, those below the kernel object, the checks
  and the C API on top), or one missing from that order;
- a quoted #include that resolves to no file of the tree;
- a cycle of imports between the Python modules of one folder
  (python/attnjit/, bench/), imports inside functions included.

Usage: check_layering.py SOURCE_DIR   (exit 0: the structure holds)
"""

import os
import re
import sys

# Lower units first; a compiler unit may include only units before it.
COMPILER_ORDER = [
    "error",  # Error, ErrorKind, ATTNJIT_CHECK
    "names",  # identifier checks and message helpers
    "sha256",
    "env",  # ATTNJIT_* variables
    "nvrtc_version",
    "target",
    "embedded",  # the headers generated code is compiled with
    "expr",  # the mask/score expression language (a spec holds checked trees)
    "spec",  # parse and validate, flags, matrix
    "kernel_params",  # the params struct generated from the spec's args
    "options",  # CompileOptions and the variables that change code
    "signature",  # flags + tuning + options
    "codegen",
    "cache_key",
    "nvrtc",  # compile_source() and the resource reports
]

# Lower units first; a runtime unit may include only units before it.
RUNTIME_ORDER = [
    "log",  # the runtime's stderr messages
    "large_stack",
    "reference",  # the CPU reference (plain arrays)
    "cache_disk",  # files, locks, atomic publishing
    "cache",  # KernelCache: memory, AOT dirs, disk, compile once
    "driver",  # the CUDA driver, opened at run time
    "kernel",  # a loaded module's entry point
    "record",  # ATTNJIT_RECORD manifests
    "attention_args",  # the attention API's values: flags, args, plans, checks
    "kv_tensor_maps",  # the TMA maps of K and V
    "launch_scratch",  # workspaces and scratch of a launch
    "planner",  # what a launch runs: pure choices from a variant's shape and the args
    "variant",  # a compiled kernel, its launch config and its launch
    "tiered_variant",  # a variant fetched on first use, a tier answering while it compiles
    "attention",  # AttentionKernel: variants, tiers, launches
    "validate",  # metadata checks from host copies
    "selfcheck",  # runs against the reference
    "c_api",  # attnjit.h
]

# Files whose unit is not their own stem.
UNIT_OF = {
    "compiler/src/check.h": "error",
    "compiler/src/expr_bounds.cpp": "expr",
    "compiler/src/expr_columns.cpp": "expr",
    "compiler/src/expr_element_form.cpp": "expr",
    "compiler/src/expr_emit.cpp": "expr",
    "compiler/src/expr_eval.cpp": "expr",
    "compiler/src/expr_intervals.cpp": "expr",
    "compiler/src/expr_parse.cpp": "expr",
    "compiler/src/expr_print.cpp": "expr",
    "compiler/src/expr_tree.cpp": "expr",
    "compiler/src/expr_tree.h": "expr",
    "compiler/src/expr_vm.cpp": "expr",
    "compiler/src/flag_values.h": "spec",
    "compiler/src/flags.cpp": "spec",
    "compiler/src/matrix.cpp": "spec",
    "compiler/src/spec_embedded.cpp": "spec",
    "compiler/src/spec_expressions.cpp": "spec",
    "compiler/src/spec_pack.cpp": "spec",
    "compiler/src/spec_pack.h": "spec",
    "compiler/src/spec_parse.cpp": "spec",
    "compiler/src/spec_reader.cpp": "spec",
    "compiler/src/spec_reader.h": "spec",
    "compiler/src/spec_sections.cpp": "spec",
    "compiler/src/spec_sections.h": "spec",
    "compiler/src/spec_vm.cpp": "spec",
    "compiler/src/resources.cpp": "nvrtc",
    "runtime/include/attnjit/attnjit.h": "c_api",
    "runtime/include/attnjit/attention_args_list.h": "attention_args",
    "runtime/src/c_api_args.h": "c_api",
    "runtime/src/cache_config.cpp": "cache",
    "runtime/src/selfcheck_user.cpp": "selfcheck",
    "runtime/src/selfcheck_user.h": "selfcheck",
    "runtime/src/split_workspace.cpp": "launch_scratch",
    "runtime/src/user_kernel.cpp": "attention",
    "runtime/src/user_vm_tier.cpp": "attention",
    "runtime/src/tiers.h": "attention",
    "runtime/src/attention_launch.cpp": "attention",
    "runtime/src/kernel_slots.h": "attention",
    "runtime/src/attention_tier.cpp": "attention",
    "runtime/src/generic_tier.cpp": "attention_args",
    "runtime/src/cache_entry.cpp": "cache",
    "runtime/src/cache_get.cpp": "cache",
}

LIBRARIES = ("compiler", "runtime")
SOURCE_SUFFIXES = (".h", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def library_files(root, library):
    """Paths relative to root of the library's headers and sources."""
    files = []
    for folder in (os.path.join(library, "include", "attnjit"), os.path.join(library, "src")):
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if name.endswith(SOURCE_SUFFIXES):
                files.append(os.path.join(folder, name).replace(os.sep, "/"))
    return files


def unit_of(path):
    """'compiler:signature' for compiler/src/signature.cpp."""
    library = path.split("/", 1)[0]
    stem = os.path.splitext(os.path.basename(path))[0]
    return library + ":" + UNIT_OF.get(path, stem)


def resolve(root, including, name):
    """The included file relative to root, or None outside the tree."""
    candidates = [os.path.join(os.path.dirname(including), name)]
    if name.startswith("attnjit/"):
        candidates += [os.path.join(lib, "include", name) for lib in LIBRARIES]
    for candidate in candidates:
        if os.path.isfile(os.path.join(root, candidate)):
            return os.path.normpath(candidate).replace(os.sep, "/")
    return None


def kernel_abi_header(root, name):
    """The host side of the kernel ABI: a template header that both the host
    compiler and NVRTC build (templates/), or a family's params struct that
    the build generates from its spec (<family>_params.h, and its host-only
    companion <family>_params_host.h)."""
    if os.path.isfile(os.path.join(root, "templates", name)):
        return True
    return "/" not in name and name.endswith(("_params.h", "_params_host.h"))


def unit_edges(root, files):
    """{(from_unit, to_unit): 'file:line'} for includes across units, and
    the problems found on the way."""
    edges = {}
    problems = []
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8") as source:
            for number, line in enumerate(source, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1))
                where = "%s:%d" % (path, number)
                if target is None and kernel_abi_header(root, match.group(1)):
                    continue  # below every unit: plain C++ shared with the kernels
                if target is None:
                    problems.append('%s: #include "%s" is no file of compiler/ or runtime/'
                                    % (where, match.group(1)))
                    continue
                if unit_of(path) != unit_of(target):
                    edges.setdefault((unit_of(path), unit_of(target)), where)
    return edges, problems


def find_cycles(edges):
    """(units, cycle) for each strongly connected component of more than one
    unit: its sorted units and one cycle through them (first unit repeated
    last)."""
    graph = {}
    for source, target in edges:
        graph.setdefault(source, []).append(target)
        graph.setdefault(target, [])
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(unit):  # Tarjan; the graphs are a few dozen units deep at most
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        on_stack.add(unit)
        for nxt in sorted(graph[unit]):
            if nxt not in index:
                visit(nxt)
                low[unit] = min(low[unit], low[nxt])
            elif nxt in on_stack:
                low[unit] = min(low[unit], index[nxt])
        if low[unit] == index[unit]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == unit:
                    break
            if len(component) > 1:
                components.append(set(component))

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return [(sorted(component), cycle_in(graph, component)) for component in components]


def cycle_in(graph, component):
    """A shortest cycle through the component's smallest unit."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for unit in frontier:
            for nxt in sorted(graph[unit]):
                if nxt == start:
                    return paths[unit] + [start]
                if nxt in component and nxt not in paths:
                    paths[nxt] = paths[unit] + [nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError("a strongly connected component without a cycle")


def order_problems(edges, units, order, runtime_order=RUNTIME_ORDER):
    problems = []
    rank = {"compiler:" + name: position for position, name in enumerate(order)}
    rank.update({"runtime:" + name: position for position, name in enumerate(runtime_order)})
    for unit in sorted(units - set(rank)):
        library = unit.split(":")[0]
        problems.append("%s is not in %s (tests/layering/check_layering.py): place it in %s"
                        % (unit, "COMPILER_ORDER" if library == "compiler" else "RUNTIME_ORDER",
                           "the pipeline" if library == "compiler" else "the layers"))
    for (source, target), where in sorted(edges.items()):
        if source.startswith("compiler:") and target.startswith("runtime:"):
            problems.append("%s: the compiler includes the runtime's %s" % (where, target))
        elif (source.split(":")[0] == target.split(":")[0] and source in rank and target in rank
              and rank[target] > rank[source]):
            problems.append("%s: %s includes %s, which comes after it in the %s"
                            % (where, source, target,
                               "pipeline" if source.startswith("compiler:") else "layers"))
    return problems


PYTHON_FOLDERS = ("python/attnjit", "bench")
IMPORT = re.compile(r"^\s*(?:from\s+(\.?[A-Za-z_][A-Za-z_0-9]*)(?:\.[A-Za-z_0-9.]*)?\s+import\s+"
                    r"([A-Za-z_0-9, ()]+)|import\s+([A-Za-z_][A-Za-z_0-9]*))")


def python_edges(root, folder):
    """{(module, module): 'file:line'} for the imports between the modules
    of one folder (`from . import a, b`, `from .a import x`, `import a`,
    `from a import x`), wherever in the file they are."""
    path = os.path.join(root, folder)
    if not os.path.isdir(path):
        return {}
    modules = {name[:-3] for name in os.listdir(path) if name.endswith(".py")}
    edges = {}
    for module in sorted(modules):
        with open(os.path.join(path, module + ".py"), encoding="utf-8") as source:
            for number, line in enumerate(source, 1):
                match = IMPORT.match(line)
                if not match:
                    continue
                origin, names, plain = match.groups()
                if origin == ".":
                    targets = [n.strip() for n in names.strip("() ").split(",")]
                elif origin is not None:
                    targets = [origin.lstrip(".")]
                else:
                    targets = [plain]
                for target in targets:
                    if target in modules and target != module:
                        edges.setdefault((folder + ":" + module, folder + ":" + target),
                                         "%s/%s.py:%d" % (folder, module, number))
    return edges


def check(root, order=COMPILER_ORDER):
    """Every problem of the tree at root, one line each."""
    files = [f for library in LIBRARIES for f in library_files(root, library)]
    edges, problems = unit_edges(root, files)
    for units, cycle in find_cycles(edges):
        steps = ["%s (%s)" % (a, edges[(a, b)]) for a, b in zip(cycle, cycle[1:])]
        problems.append("include cycle among %s: %s -> %s"
                        % (", ".join(units), " -> ".join(steps), cycle[-1]))
    units = {unit_of(f) for f in files}
    problems += order_problems(edges, units, order)
    for folder in PYTHON_FOLDERS:
        imports = python_edges(root, folder)
        for modules, cycle in find_cycles(imports):
            steps = ["%s (%s)" % (a, imports[(a, b)]) for a, b in zip(cycle, cycle[1:])]
            problems.append("import cycle among %s: %s -> %s"
                            % (", ".join(modules), " -> ".join(steps), cycle[-1]))
    return problems


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    problems = check(argv[1])
    for problem in problems:
        print("layering: " + problem)
    if not problems:
        print("layering: compiler/ and runtime/ have no include cycle and follow their "
              "orders; python/attnjit/ and bench/ have no import cycle")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
