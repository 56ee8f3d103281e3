"""
test_layers.py - tools/check-layers.py, the build's layer check, on small
C trees compiled here: it passes a tree whose calls go down, and fails,
naming the file and the call, a call upward, a call within a layer, an
include from above and a file left out of LAYERS; and the same across
folders that have a LAYERS of their own.
"""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check-layers.py")


def tree(tmp_path, files, layers):
    """Writes files (name -> text) and LAYERS into tmp_path, compiles every
    .c into NAME.c.o, and runs the check; returns (exit status, stderr)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "LAYERS").write_text(layers)
    objs = []
    for name in files:
        if name.endswith(".c"):
            obj = str(tmp_path / (name + ".o"))
            subprocess.run(["cc", "-c", "-I", str(tmp_path), "-o", obj, str(tmp_path / name)], check=True)
            objs.append(obj)
    r = subprocess.run(["/usr/bin/python3", CHECK, str(tmp_path / "LAYERS")] + objs,
                       capture_output=True, text=True)
    return r.returncode, r.stderr


FILES = {
    "low.h": "int low(int x);\n",
    "low.c": '#include "low.h"\nint low(int x) { return x + 1; }\n',
    "mid.h": "int mid(int x);\n",
    "mid.c": '#include "low.h"\n#include "mid.h"\nint mid(int x) { return low(x) * 2; }\n',
    "top.c": '#include "mid.h"\nint top(void);\nint top(void) { return mid(1); }\n',
}


def test_layers_downward_calls_pass(tmp_path):
    rc, err = tree(tmp_path, FILES, "# lowest first\nlow: low.c low.h\nmid: mid.c mid.h\ntop: top.c\n")
    assert rc == 0, err
    assert err == ""


def test_layers_upward_call_fails_naming_it(tmp_path):
    rc, err = tree(tmp_path, FILES, "mid: mid.c mid.h\nlow: low.c low.h\ntop: top.c\n")
    assert rc == 1
    assert "mid.c: calls low() in low.c" in err
    assert "mid.c:1: includes low.h" in err


def test_layers_call_within_one_layer_fails(tmp_path):
    rc, err = tree(tmp_path, FILES, "low: low.c low.h mid.c mid.h\ntop: top.c\n")
    assert rc == 1
    assert "mid.c: calls low() in low.c" in err


def test_layers_unlisted_file_fails(tmp_path):
    rc, err = tree(tmp_path, FILES, "low: low.c low.h\nmid: mid.c mid.h\n")
    assert rc == 1
    assert "top.c: not listed" in err


def test_layers_malformed_file_is_a_usage_error(tmp_path):
    rc, err = tree(tmp_path, FILES, "low low.c\n")
    assert rc == 2
    assert "expected 'layer: file ...'" in err


@pytest.mark.parametrize("layers", ["src/core/LAYERS", "src/ctl/LAYERS", "src/agent/LAYERS", "src/cli/LAYERS", "src/common/LAYERS"])
def test_layers_files_of_the_tree_are_complete(layers):
    """Each LAYERS in the tree names only files that exist (the build runs
    the full check on the real objects)."""
    path = os.path.join(ROOT, layers)
    if not os.path.exists(path):
        pytest.skip("%s not written" % layers)

    def check(path):
        for line in open(path):
            line = line.split("#", 1)[0]
            if ":" not in line:
                continue
            for fn in line.split(":", 1)[1].split():
                full = os.path.join(os.path.dirname(path), fn)
                if fn.endswith("/"):
                    assert os.path.isfile(os.path.join(full, "LAYERS")), fn
                    check(os.path.join(full, "LAYERS"))
                else:
                    assert os.path.isfile(full), fn

    check(path)


def test_layers_unlisted_file_of_a_listed_subdirectory_fails(tmp_path):
    (tmp_path / "policy").mkdir()
    files = dict(FILES)
    files["policy/p.c"] = '#include "../low.h"\nint p(void);\nint p(void) { return low(2); }\n'
    files["policy/q.h"] = "int q(void);\n"
    rc, err = tree(tmp_path, files, "low: low.c low.h\nmid: mid.c mid.h\ntop: top.c policy/p.c\n")
    assert rc == 1
    assert "policy/q.h: not listed" in err
    rc, err = tree(tmp_path, files, "low: low.c low.h\nmid: mid.c mid.h policy/q.h\ntop: top.c policy/p.c\n")
    assert rc == 0, err


def folders(tmp_path, top, sub_low, sub_high):
    """A tree of two folders, low/ and high/, each with its LAYERS, under a
    top LAYERS; returns (exit status, stderr) of the check."""
    (tmp_path / "low").mkdir(exist_ok=True)
    (tmp_path / "high").mkdir(exist_ok=True)
    (tmp_path / "low" / "LAYERS").write_text(sub_low)
    (tmp_path / "high" / "LAYERS").write_text(sub_high)
    files = {
        "low/a.h": "int a(int x);\n",
        "low/a.c": '#include "a.h"\nint a(int x) { return x + 1; }\n',
        "low/b.h": "int b(int x);\n",
        "low/b.c": '#include "low/a.h"\n#include "b.h"\nint b(int x) { return a(x) * 2; }\n',
        "high/c.h": "int c(int x);\n",
        "high/c.c": '#include "low/b.h"\n#include "c.h"\nint c(int x) { return b(x) + 3; }\n',
        "main.c": '#include "high/c.h"\nint m(void);\nint m(void) { return c(1); }\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tree(tmp_path, files, top)


LOW = "a: a.c a.h\nb: b.c b.h\n"
HIGH = "c: c.c c.h\n"


def test_layers_folders_calls_down_pass(tmp_path):
    rc, err = folders(tmp_path, "low: low/\nhigh: high/\nmain: main.c\n", LOW, HIGH)
    assert rc == 0, err


def test_layers_folders_call_into_a_later_folder_fails(tmp_path):
    rc, err = folders(tmp_path, "high: high/\nlow: low/\nmain: main.c\n", LOW, HIGH)
    assert rc == 1
    assert "high/c.c: calls b() in low/b.c (layer low/b, not below high/c)" in err
    assert "high/c.c:1: includes low/b.h" in err


def test_layers_folders_order_inside_a_folder_holds(tmp_path):
    rc, err = folders(tmp_path, "low: low/\nhigh: high/\nmain: main.c\n", "b: b.c b.h\na: a.c a.h\n", HIGH)
    assert rc == 1
    assert "low/b.c: calls a() in low/a.c" in err


def test_layers_folders_unlisted_file_and_missing_layers_fail(tmp_path):
    (tmp_path / "low").mkdir()
    (tmp_path / "low" / "stray.c").write_text("int s(void);\n")
    rc, err = folders(tmp_path, "low: low/\nhigh: high/\nmain: main.c\n", LOW, HIGH)
    assert rc == 1
    assert "low/stray.c: not listed" in err
    (tmp_path / "high" / "LAYERS").unlink()
    r = subprocess.run(["/usr/bin/python3", CHECK, str(tmp_path / "LAYERS"), str(tmp_path / "main.c.o")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "high/ has no LAYERS" in r.stderr
