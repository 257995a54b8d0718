#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, checked on the include graph.

Every file of a stage (src/<stage>/, include/iotrace/<stage>/) may include only headers of its
own stage and of the stages below it:

    base <- event <- sys <- formats <- {capture, analysis} <- live; analysis <- output <- cli

(capture and analysis stand side by side: neither includes the other; live joins them (the
kernel's buffers read as they fill, fed to the report builder); output does not see live; output sees analysis only
through the report model, analysis/report.h, analysis/match_stats.h,
analysis/live_model.h, analysis/metrics_model.h and analysis/diff_model.h; cli sees
everything). The build runs this before it compiles anything (CMake target
iotrace_layer_check) and so does the test suite; a wrong-way include fails both with a line per
offence naming the rule. Usage: check-layers.py [SOURCE_DIR]
"""
import os
import re
import sys

STAGES = ["base", "event", "sys", "formats", "capture", "analysis", "live", "output", "cli"]
MAY_USE = {
    "base": {"base"},
    "event": {"base", "event"},
    "sys": {"base", "event", "sys"},
    "formats": {"base", "event", "sys", "formats"},
    "capture": {"base", "event", "sys", "formats", "capture"},
    "analysis": {"base", "event", "sys", "formats", "analysis"},
    "live": {"base", "event", "sys", "formats", "capture", "analysis", "live"},
    "output": {"base", "event", "sys", "formats", "analysis", "output"},
    "cli": set(STAGES),
}
# Within a stage it may use, a stage may be limited to some headers: the formatters read the
# report model, never the builder that fills it.
ONLY = {
    ("output", "analysis"): {"analysis/report.h", "analysis/match_stats.h",
                             "analysis/live_model.h", "analysis/metrics_model.h",
                             "analysis/diff_model.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"iotrace/([^"]+)"', re.M)


def stage_files(root):
    for top in ("src", os.path.join("include", "iotrace")):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for entry in sorted(os.listdir(base)):
            path = os.path.join(base, entry)
            if os.path.isfile(path) and entry.endswith((".cc", ".c", ".h")):
                yield os.path.relpath(path, root), None  # not in a stage folder
            elif os.path.isdir(path):
                for dirpath, _, names in os.walk(path):
                    for name in sorted(names):
                        if name.endswith((".cc", ".c", ".h")):
                            yield os.path.relpath(os.path.join(dirpath, name), root), entry


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    errors = []
    for rel, stage in stage_files(root):
        if stage is None:
            errors.append(f"{rel}: lies outside the stage folders: move it into src/<stage>/ "
                          f"(or include/iotrace/<stage>/), one of {', '.join(STAGES)}")
            continue
        if stage not in MAY_USE:
            errors.append(f"{rel}: '{stage}' is not a stage (stages: {', '.join(STAGES)})")
            continue
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            used = target.split("/")[0] if "/" in target else None
            line = text.count("\n", 0, match.start()) + 1
            if used is None or used not in MAY_USE:
                errors.append(f"{rel}:{line}: includes iotrace/{target}, which is in no stage")
            elif used not in MAY_USE[stage]:
                allowed = [s for s in STAGES if s in MAY_USE[stage]]
                errors.append(f"{rel}:{line}: layer rule: {stage} may include only "
                              f"{', '.join(allowed)}, not {used} (iotrace/{target}); "
                              f"see docs/architecture.md")
            elif (stage, used) in ONLY and target not in ONLY[(stage, used)]:
                errors.append(f"{rel}:{line}: layer rule: {stage} may include of {used} only "
                              f"{', '.join(sorted(ONLY[(stage, used)]))}, not iotrace/{target}; "
                              f"see docs/architecture.md")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} include(s) break the layer rule", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
