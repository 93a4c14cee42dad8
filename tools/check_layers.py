#!/usr/bin/env python3
"""Fails on any #include that points up the stack, naming the file and line.

Two tables say what may include what (docs/architecture.md draws them):
  - the libraries: tensor <- collective <- autodiff <- optim, and cuda above collective and
    autodiff (the CUDA layer plugs a backend into tensor/ and an engine into collective/);
  - the levels inside collective/: a file may include headers of its own level or a lower one.
    Folders the table puts at one level may include each other (transport/ and its kinds: the
    process transport holds a TCP and a shared-memory path per peer).

Usage: tools/check_layers.py [repo-root]   (default: the repository holding this script).
Scans the tracked *.h *.cpp *.cu *.cuh of the libraries (tests, benchmarks and examples may
include anything).
"""
import os
import re
import subprocess
import sys

# Which libraries each library may include (besides itself).
LIBRARIES = {
    "tensor": set(),
    "collective": {"tensor"},
    "autodiff": {"tensor", "collective"},
    "optim": {"tensor", "collective", "autodiff"},
    "cuda": {"tensor", "collective", "autodiff"},
}

# The levels of collective/, lowest first. A folder's level covers its subfolders unless one of
# them is listed itself. "" is the public API at the top of collective/.
COLLECTIVE_LEVELS = [
    ("common", 0),      # errors, Deadline, FunctionRef, rank names, reduce op, hashes, env, waits
    ("protocol", 1),    # what ranks exchange and must agree on
    ("net", 2),         # sockets
    ("launch", 2),      # reading the launcher's environment
    ("store", 3),       # rendezvous key-value stores (over net/)
    ("transport", 4),   # the seam and one folder per kind
    ("algorithms", 5),  # written against the transport seam; selection
    ("trace", 6),       # statistics, traces, the debug log of calls
    ("engine", 7),      # the engine seam and the algorithm engine
    ("core", 8),        # the Communicator core: validate, agree, run, fail
    ("mpi", 9),         # the MPI engine and transport (RUCCL_WITH_MPI)
    ("", 10),           # the public API: Communicator, the group factories, from_env, run_ranks
    ("registered", 11),  # the registered-peer API, built on the group factories
]
# Umbrella headers only include; they may include every level.
UMBRELLAS = {"collective/collective.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def collective_level(path):
    """The level of a path under collective/ (a file or an included header)."""
    rest = path[len("collective/"):]
    folder = rest.split("/")[0] if "/" in rest else ""
    for name, level in COLLECTIVE_LEVELS:
        if name == folder:
            return level, name or "collective/ (public API)"
    return None, folder


def check(root):
    os.chdir(root)
    files = subprocess.check_output(
        ["git", "ls-files", "-z", "--", "*.h", "*.cpp", "*.cu", "*.cuh"]).decode().split("\0")
    errors = []
    checked = 0
    for path in files:
        library = path.split("/")[0]
        if library not in LIBRARIES or not os.path.isfile(path):
            continue
        checked += 1
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                target_library = target.split("/")[0]
                if target_library not in LIBRARIES:
                    continue  # generated (ruccl/config.h), third-party or system
                if target_library != library and target_library not in LIBRARIES[library]:
                    errors.append(f"{path}:{number}: includes {target}: {library}/ may not "
                                  f"include {target_library}/ (allowed: "
                                  f"{', '.join(sorted(LIBRARIES[library])) or 'nothing'})")
                    continue
                if library != "collective" or target_library != "collective":
                    continue
                if path in UMBRELLAS:
                    continue
                own, own_name = collective_level(path)
                theirs, their_name = collective_level(target)
                if own is None:
                    errors.append(f"{path}:{number}: collective/{own_name}/ has no level in "
                                  "tools/check_layers.py: add it to COLLECTIVE_LEVELS")
                elif theirs is None:
                    errors.append(f"{path}:{number}: includes {target}: collective/{their_name}/ "
                                  "has no level in tools/check_layers.py")
                elif theirs > own:
                    errors.append(f"{path}:{number}: includes {target}, which is up the stack "
                                  f"({their_name} is level {theirs}, {own_name} level {own})")
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"check_layers: {checked} library files checked, {len(errors)} upward includes: "
          f"{'ok' if not errors else 'FAILED'}")
    return 1 if errors else 0


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(check(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(here)))
