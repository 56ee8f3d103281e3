"""
test_tree.py - the source tree's own rules, checked on the files: names
come from concepts (no file, comment or page of src, include, docs or tools
names an issue by number; bench/RESULTS.md keeps its history), and no
source file grows past 1,000 lines.
"""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ISSUE = re.compile(r"issue[ -]?[0-9]+", re.IGNORECASE)
SOURCE = (".c", ".h", ".py", ".sh", ".go")


def files(*tops):
    for top in tops:
        for d, dirs, fs in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for f in fs:
                yield os.path.join(d, f)


def test_tree_no_name_or_comment_names_an_issue_number():
    hits = []
    for p in files("src", "include", "docs", "tools"):
        rel = os.path.relpath(p, ROOT)
        if ISSUE.search(rel):
            hits.append(rel)
        try:
            text = open(p, encoding="utf-8", errors="strict").read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if ISSUE.search(line):
                hits.append("%s:%d: %s" % (rel, n, line.strip()))
    assert hits == []


def test_tree_no_source_file_over_1000_lines():
    long = []
    for p in files("src", "include", "tests", "tools", "bench"):
        if p.endswith(SOURCE):
            with open(p, errors="replace") as f:
                n = sum(1 for _ in f)
            if n > 1000:
                long.append("%s: %d lines" % (os.path.relpath(p, ROOT), n))
    assert long == []
