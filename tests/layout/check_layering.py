#!/usr/bin/env python3
"""Holds src/ to its layering table (docs/source-layout.md, "Layering").

Checks, naming file and line for each problem:
  1. the table itself: every room's allowed rooms are rooms listed above it,
     so the rooms form a hierarchy with no cycle;
  2. every #include "..." in src/ names a file that exists, in the including
     file's own room or in one the table allows;
  3. every folder of src/ with sources is a room of the table (or a part of
     one, as kernels/cpu), and every room of the table is a folder;
  4. src/CMakeLists.txt builds one library per room, linked to exactly the
     rooms the table allows (gpt2_room(FOLDER [PARTS ...] DEPENDS ...));
  5. collectives go through the groups of src/dist/ (dist/group.h): no file
     outside src/dist/ and src/main.c names MPI_COMM_WORLD, and none but
     those and src/base/fail.{c,h} (which end the job, dist naming it, and
     hold MPI_CHECK) calls MPI, so that another group (tensor or pipeline parallel) is one more
     group, not an edit of every room.
Exit 0 when all hold, 1 otherwise.

usage: check_layering.py [REPO_ROOT]
"""
import os
import re
import sys

SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cuh")


def read_table(path):
    """{room: set(allowed)} and [rooms in table order] from the markdown table
    under the heading 'Layering': rows '| `room` | job | `a`, `b` |'."""
    rooms, order, problems = {}, [], []
    in_section = False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("#"):
                in_section = line.lstrip("#").strip().lower().startswith("layering")
                continue
            if not in_section or not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 3:
                problems.append(f"{path}:{lineno}: a table row needs room | job | may include")
                continue
            room = cells[0].strip("`")
            allowed = set(re.findall(r"`([^`]+)`", cells[-1]))
            for a in sorted(allowed):
                if a not in rooms:
                    problems.append(
                        f"{path}:{lineno}: room {room} may include {a}, which is not a room "
                        "listed above it (the table must go from the lowest room up)")
            rooms[room] = allowed
            order.append(room)
    if not rooms:
        problems.append(f"{path}: no layering table found under a 'Layering' heading")
    return rooms, order, problems


def read_cmake_rooms(path):
    """{room: (parts, depends, lineno)} from gpt2_room(...) calls."""
    text = open(path, encoding="utf-8").read()
    found = {}
    for m in re.finditer(r"^gpt2_room\(([^)]*)\)", text, re.M):
        words = m.group(1).split()
        lineno = text.count("\n", 0, m.start()) + 1
        room, parts, deps, mode = words[0], [], [], None
        for w in words[1:]:
            if w in ("PARTS", "DEPENDS"):
                mode = w
            elif mode == "PARTS":
                parts.append(w)
            elif mode == "DEPENDS":
                deps.append(w)
        found[room] = (parts, set(deps), lineno)
    return found


def room_of(rel, rooms, parts_of):
    """The room a path relative to src/ belongs to: its longest folder prefix
    that is a room (a part's files belong to the part's room)."""
    folder = os.path.dirname(rel)
    while folder:
        if folder in rooms:
            return folder
        for room, parts in parts_of.items():
            if any(folder == f"{room}/{p}" for p in parts):
                return room
        folder = os.path.dirname(folder)
    return None  # src/ itself: main.c, the top of the house


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    src = os.path.join(root, "src")
    table_path = os.path.join(root, "docs", "source-layout.md")
    cmake_path = os.path.join(src, "CMakeLists.txt")
    rooms, order, problems = read_table(table_path)
    cmake = read_cmake_rooms(cmake_path)
    parts_of = {room: parts for room, (parts, _, _) in cmake.items()}

    # 3 and 4: folders, libraries and links agree with the table.
    for room in order:
        if not os.path.isdir(os.path.join(src, room)):
            problems.append(f"{table_path}: room {room} has no folder src/{room}")
        if room not in cmake:
            problems.append(f"{cmake_path}: no gpt2_room({room} ...) for the table's room {room}")
            continue
        deps, lineno = cmake[room][1], cmake[room][2]
        if deps != rooms[room]:
            problems.append(
                f"{cmake_path}:{lineno}: room {room} links {sorted(deps)}, the table allows "
                f"{sorted(rooms[room])}: they must be the same")
    for room, (_, _, lineno) in cmake.items():
        if room not in rooms:
            problems.append(f"{cmake_path}:{lineno}: library of {room}, which the table lacks")

    # 2: every include of every source file.
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            mine = room_of(rel, rooms, parts_of)
            if mine is None and os.path.dirname(rel):
                problems.append(f"src/{rel}: its folder is no room of the table (nor a part)")
                continue
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    m = include.match(line)
                    if not m:
                        continue
                    target = m.group(1)
                    if not os.path.isfile(os.path.join(src, target)):
                        problems.append(
                            f"src/{rel}:{lineno}: #include \"{target}\": no such file under "
                            "src/ (includes name files from src/, as \"room/file.h\")")
                        continue
                    theirs = room_of(target, rooms, parts_of)
                    if mine is None or theirs == mine or theirs in rooms.get(mine, ()):
                        continue
                    allowed = ", ".join(sorted(rooms[mine])) or "no other room"
                    problems.append(
                        f"src/{rel}:{lineno}: #include \"{target}\": room {mine} may not "
                        f"include room {theirs} (it may include {allowed}; "
                        "docs/source-layout.md, Layering)")

    # 5: MPI only through the groups.
    world = re.compile(r"\bMPI_COMM_WORLD\b")
    mpi_call = re.compile(r"\bMPI_[A-Z][a-z_]*\s*\(")
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            in_dist = rel.startswith("dist" + os.sep) or rel == "main.c"
            if in_dist:
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    code = line.split("//")[0]
                    if world.search(code) and not code.lstrip().startswith(("*", "/*")):
                        problems.append(
                            f"src/{rel}:{lineno}: MPI_COMM_WORLD outside src/dist/ and src/main.c: "
                            "take a group (dist/group.h: the job's or the data-parallel one)")
                    elif (mpi_call.search(code) and rel not in (f"base{os.sep}fail.c", f"base{os.sep}fail.h", f"base{os.sep}fail_job.h")
                          and not code.lstrip().startswith(("*", "/*"))
                          and "MPI_CHECK(stmt)" not in code):
                        problems.append(
                            f"src/{rel}:{lineno}: an MPI call outside src/dist/: collectives go "
                            "through a group (dist/group.h)")

    for p in problems:
        print(p)
    if problems:
        print(f"FAIL: {len(problems)} layering problem(s)")
        return 1
    print(f"ok: {len(order)} rooms, every include and library link within the table, "
          "MPI only through src/dist/'s groups")
    return 0


if __name__ == "__main__":
    sys.exit(main())
