#!/usr/bin/python3
"""check-layers.py - fails the build when a file calls or includes across a
layer it must not.

    check-layers.py LAYERS OBJECT...

LAYERS lists a directory's files by layer, lowest first, one layer a line:

    # comment
    loop: loop.c loop.h
    store: sqlite.c store.h

paths relative to the directory that holds LAYERS. A line whose only entry
is a folder (`store: store/`) stands for that folder's own LAYERS, whose
lines are read in its place, lowest first, with paths relative to the
folder; folders may nest. The rule: a file may
call functions (or use data) defined in, and include headers of, only files
on EARLIER lines; a header may also be included by the files of its own
line. Files on one line may not call each other, so the layers form no
circle of calls (every call goes one layer down: shared/DESIGN.md). With
folders, every layer of an earlier folder is below every layer of a later
one, and inside a folder its own LAYERS orders the files: a file of
domain/ may call anything in store/ (listed earlier), a file of store/
nothing in domain/.

Calls are read from the compiled objects (`nm`: a symbol that one object
leaves undefined and another defines is a call between their files), so a
call through a macro or an inline wrapper is seen too; calls through
function pointers are not calls (that is how a lower layer reaches up: a
hook registered at start-up). Includes are read from the sources'
`#include "..."` lines. Every .c and .h of the directory, and of each
subdirectory that LAYERS names a file of, must be listed, so a new file
cannot slip past the check.

Exit status: 0 clean, 1 violations (each printed as file: message), 2 usage
or a malformed LAYERS.
"""

import os
import re
import subprocess
import sys


def die(msg):
    sys.stderr.write("check-layers: %s\n" % msg)
    sys.exit(2)


def read_layers(path, prefix="", rank=()):
    """Returns (names, layer_of): for each layer's rank (a tuple, compared
    lexicographically: the folder's position, then the layer's inside it)
    its name, and for each listed file (relative to the top LAYERS) its
    layer's rank."""
    names, layer_of = {}, {}
    with open(path) as f:
        idx = 0
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, files = line.partition(":")
            if not sep or not name.strip() or not files.split():
                die("%s:%d: expected 'layer: file ...'" % (path, lineno))
            here = rank + (idx,)
            idx += 1
            entries = files.split()
            if any(e.endswith("/") for e in entries):
                if len(entries) != 1:
                    die("%s:%d: a folder is a layer of its own" % (path, lineno))
                sub = os.path.join(os.path.dirname(path), entries[0], "LAYERS")
                if not os.path.isfile(sub):
                    die("%s:%d: %s has no LAYERS" % (path, lineno, entries[0]))
                sub_names, sub_of = read_layers(sub, prefix + entries[0], here)
                for fn in sub_of:
                    if fn in layer_of:
                        die("%s: %s is listed twice" % (sub, fn))
                names.update(sub_names)
                layer_of.update(sub_of)
                continue
            names[here] = prefix + name.strip()
            for fn in entries:
                fn = prefix + fn
                if fn in layer_of:
                    die("%s:%d: %s is listed twice" % (path, lineno, fn))
                layer_of[fn] = here
    return names, layer_of


def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, obj], check=True, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            syms.add(parts[-1])
    return syms


def source_of(obj, listed):
    """The listed .c file an object was compiled from (CMake names objects
    <dir>/<relative source path>.o)."""
    best = None
    for fn in listed:
        if fn.endswith(".c") and (obj.endswith("/" + fn + ".o") or obj == fn + ".o"):
            if best is None or len(fn) > len(best):
                best = fn
    return best


def main(argv):
    if len(argv) < 2:
        die("usage: check-layers.py LAYERS OBJECT...")
    layers_path, objs = argv[0], argv[1:]
    root = os.path.dirname(os.path.abspath(layers_path))
    names, layer_of = read_layers(layers_path)
    bad = []

    # Every source and header of the directory, and of each subdirectory
    # LAYERS names a file of, is listed (and exists).
    dirs = sorted({os.path.dirname(fn) for fn in layer_of} | {""})
    for sub in dirs:
        if not os.path.isdir(os.path.join(root, sub)):
            continue
        for fn in sorted(os.listdir(os.path.join(root, sub))):
            rel = os.path.join(sub, fn) if sub else fn
            if fn.endswith((".c", ".h")) and rel not in layer_of:
                bad.append("%s: not listed in %s" % (rel, layers_path))
    for fn in layer_of:
        if not os.path.isfile(os.path.join(root, fn)):
            bad.append("%s: listed in %s but does not exist" % (fn, layers_path))

    # Calls, from the objects.
    defined, undefined = {}, {}
    for obj in objs:
        src = source_of(obj, layer_of)
        if src is None:
            continue
        for sym in nm(obj, "-g", "--defined-only"):
            defined[sym] = src
        undefined[src] = nm(obj, "-u")
    for src in layer_of:
        if src.endswith(".c") and src not in undefined:
            bad.append("%s: no object file given for it" % src)
    for src, syms in sorted(undefined.items()):
        for sym in sorted(syms):
            dst = defined.get(sym)
            if dst is None or dst == src:
                continue
            if layer_of[dst] >= layer_of[src]:
                bad.append("%s: calls %s() in %s (layer %s, not below %s)"
                           % (src, sym, dst, names[layer_of[dst]], names[layer_of[src]]))

    # Includes, from the sources.
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for src in sorted(layer_of):
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = inc.match(line)
                if not m:
                    continue
                # Resolve relative to the including file, then to the root.
                cand = os.path.normpath(os.path.join(os.path.dirname(src), m.group(1)))
                hdr = cand if cand in layer_of else (m.group(1) if m.group(1) in layer_of else None)
                if hdr is None or hdr == src:
                    continue
                if layer_of[hdr] > layer_of[src]:
                    bad.append("%s:%d: includes %s (layer %s, above %s)"
                               % (src, lineno, hdr, names[layer_of[hdr]], names[layer_of[src]]))

    for b in bad:
        sys.stderr.write("check-layers: %s\n" % b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
