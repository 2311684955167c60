#!/usr/bin/env python3
"""bench/plot_results.py and the chart bench_attention.py writes.

- chart_data() keeps the implementations that ran, attnjit first, and the
  floor, on a small result and on the committed f2f11b2 run;
- with matplotlib, the chart is a PNG; without it, plot_results.py exits 1
  saying so and the hook bench_attention.py uses skips with a message;
- bench_attention.py calls that hook after writing its JSON;
- the README's performance section shows or links a committed chart.

    check_plot_results.py REPO_ROOT
"""

import ast
import contextlib
import io
import json
import os
import re
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import plot_results  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


small = {"gpu": "test GPU", "date": "2026-01-01", "commit": "abc1234", "problems": [
    {"problem": "p1", "shape": "1x16", "floor_ms": 0.5,
     "ms": {"attnjit": 1.0, "sdpa_flash": 2.0, "sdpa_cudnn": None, "flex": 3.0, "triton": None}},
    {"problem": "p2", "shape": "2x16", "floor_ms": 0.1, "ms": {"attnjit": 0.2, "flex": 0.4}},
]}
panels = plot_results.chart_data(small)
expect([p["problem"] for p in panels] == ["p1", "p2"], "chart_data: one panel per problem")
expect(panels[0]["bars"] == [("attnjit", 1.0), ("SDPA flash", 2.0), ("FlexAttention", 3.0)],
       f"chart_data: bars of p1 {panels[0]['bars']}")
expect(panels[1]["floor_ms"] == 0.1, "chart_data: the floor")
expect(plot_results.default_png_path("a/b.json") == "a/b.png", "default_png_path")

committed = os.path.join(ROOT, "bench/results/2026-11-29-h200-f2f11b2.json")
with open(committed) as f:
    run = json.load(f)
panels = plot_results.chart_data(run)
expect(len(panels) == len(run["problems"]) == 6, "chart_data: six problems in the f2f11b2 run")
expect(all(p["bars"][0][0] == "attnjit" for p in panels), "chart_data: attnjit first")

try:
    import matplotlib  # noqa: F401
    have_matplotlib = True
except ImportError:
    have_matplotlib = False

with tempfile.TemporaryDirectory() as tmp:
    json_path = os.path.join(tmp, "run.json")
    with open(json_path, "w") as f:
        json.dump(small, f)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = plot_results.main([json_path])
    logged = []
    hook = plot_results.write_chart_beside(small, json_path, log=logged.append)
    if have_matplotlib:
        expect(rc == 0, f"plot_results.py exited {rc}: {err.getvalue()}")
        with open(os.path.join(tmp, "run.png"), "rb") as f:
            expect(f.read(8) == PNG_MAGIC, "plot_results.py did not write a PNG")
        expect(hook == os.path.join(tmp, "run.png"), "write_chart_beside: path of the PNG")
    else:
        expect(rc == 1 and "matplotlib is not installed" in err.getvalue(),
               f"without matplotlib: exit {rc}, message {err.getvalue()!r}")
        expect(hook is None and logged and logged[0].startswith("chart skipped: matplotlib"),
               f"write_chart_beside without matplotlib: {logged}")
    with contextlib.redirect_stderr(io.StringIO()) as err:
        rc = plot_results.main([os.path.join(tmp, "missing.json")])
    expect(rc == 1 and "cannot read" in err.getvalue(), "a missing JSON: exit 1, 'cannot read'")

tree = ast.parse(open(os.path.join(ROOT, "bench/bench_attention.py")).read())
calls = {node.func.id for node in ast.walk(tree)
         if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
expect("write_chart_beside" in calls, "bench_attention.py does not call write_chart_beside")

readme = open(os.path.join(ROOT, "README.md")).read()
section = readme[readme.find("## Performance"):]
section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
images = re.findall(r"\]\(([^)]+\.png)\)", section)  # the chart, shown or linked
expect(images, "README: no chart in the performance section")
for image in images:
    expect(os.path.isfile(os.path.join(ROOT, image)), f"README: {image} does not exist")

for failure in failures:
    print("FAILED:", failure)
if failures:
    sys.exit(1)
print("ok: plot_results.py (" + ("chart drawn" if have_matplotlib else
                                  "matplotlib missing: the messages checked") + ")")
