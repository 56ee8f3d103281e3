#!/usr/bin/python3
"""
run.py - real public Kubernetes manifests that ask for nvidia.com/gpu
(batch/v1 Jobs, Kubeflow PyTorchJobs and MPIJobs), each given to `sluice submit -f`
as written, and what became of it.

    bench/k8s_corpus/run.py --collect   # copy the files of sources.txt from
                                        # /work/.mirror (the tools' fetch) into
                                        # manifests/, write manifest.json
                                        # (repo, path, commit, licence)
    bench/k8s_corpus/run.py             # convert them all; write results.md
    bench/k8s_corpus/run.py --live      # and submit each to a real sluiced

The manifests are third-party and stay out of the repository (manifests/
is ignored by git); manifest.json names each one's repository, path and
commit, so anyone can fetch the same text.

Each file goes through `sluice submit --dry-run -f FILE`, unchanged. It is
accepted as written when the CLI exits 0 (warnings allowed: they name
fields that have no meaning here, such as a service account); a refusal is
listed with every problem the CLI named. With --live each accepted file is
also submitted for real to a sluiced started here (its own config: tenant
alice, whose tenants[].namespaces are the namespaces the corpus names, as
an operator taking these manifests would configure, with the priority
classes they name and their volumes and secrets; one agent of 8 GPUs),
and the answer recorded: 201, or the server's error. A file a server of
this checkout refuses only for the `volumes` or `secrets` fields (which
the server side of those fields adds) is counted apart, so the figure says
what it measures.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FILES = os.path.join(HERE, "manifests")
MANIFEST = os.path.join(HERE, "manifest.json")
MIRROR = "/work/.mirror"

sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e", "fixtures"))


def sources():
    out = []
    with open(os.path.join(HERE, "sources.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                repo, path = line.split(" ", 1)
                repo, _, rev = repo.partition("@")
                out.append((repo, rev or "HEAD", path))
    return out


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir] + list(args), capture_output=True, text=True)


def licence_of(gitdir, rev):
    for n in git(gitdir, "ls-tree", "--name-only", rev).stdout.split():
        if re.match(r"(?i)^(licen[cs]e|copying)(\.|$)", n):
            text = git(gitdir, "show", "%s:%s" % (rev, n)).stdout
            first = next((x.strip() for x in text.splitlines() if x.strip()), "")
            return "%s: %s" % (n, first[:80])
    return "no licence file in the repository"


def collect():
    os.makedirs(FILES, exist_ok=True)
    manifest = []
    for k, (repo, rev, path) in enumerate(sources(), 1):
        gd = os.path.join(MIRROR, repo.replace("/", "+"), "repo")
        commit = git(gd, "rev-parse", rev).stdout.strip()
        text = git(gd, "show", "%s:%s" % (commit, path))
        if text.returncode != 0 or not commit:
            print("missing: %s %s" % (repo, path), file=sys.stderr)
            continue
        name = "%02d_%s" % (k, re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path)))
        with open(os.path.join(FILES, name), "w") as f:
            f.write(text.stdout)
        manifest.append({"id": k, "file": name, "repo": repo, "path": path, "commit": commit,
                         "url": "https://github.com/%s/blob/%s/%s" % (repo, commit, path),
                         "licence": licence_of(gd, commit)})
    with open(MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("%d manifests from %d repositories" % (len(manifest), len({m["repo"] for m in manifest})))


def sluice(build, args, env):
    return subprocess.run([os.path.join(build, "sluice")] + args, capture_output=True, text=True,
                          env=env, timeout=60)


def problems(stderr):
    """The CLI's lines: (errors, warnings), each without the file's name."""
    errs, warns = [], []
    for ln in stderr.splitlines():
        m = re.match(r"sluice submit: (warning: )?[^:]*?manifests/[^:]+: (.*)", ln)
        if m:
            (warns if m.group(1) else errs).append(m.group(2))
        elif ln.startswith("sluice submit: ") and "not submitted" not in ln:
            errs.append(ln[len("sluice submit: "):])
    return errs, warns


def kind_of(path):
    text = open(path).read()
    for kind in ("PyTorchJob", "MPIJob"):
        if re.search(r"^kind:\s*\"?%s" % kind, text, re.M):
            return kind
    return "Job"


def namespaces_of(paths):
    out = set()
    for p in paths:
        out.update(re.findall(r"^\s+namespace:\s*\"?([a-z0-9][a-z0-9-]*)\"?\s*(?:#.*)?$", open(p).read(), re.M))
    return sorted(out - {"alice"})


# The attribute that names a volume of each CSI driver the corpus uses
# (docs/config.md, volumes.csi).
CSI_ATTRIBUTES = {"gcsfuse.csi.storage.gke.io": "bucketName"}


def operator_setup(rows, base):
    """What an operator taking these manifests configures, from their
    specs as the CLI wrote them: the volumes section (every host path
    allowed, each claim, export and CSI bucket mapped to a directory of
    its own under base), per secret or config map named, its keys
    (placeholder values), and each priority class named (as the cluster's
    PriorityClass objects would be). Returns (volumes config,
    {(type, name): keys}, priority class names)."""
    claims, nfs, csi, objs, classes = {}, {}, {}, {}, set()
    for r in rows:
        if not r["accepted"]:
            continue
        try:
            specs = json.loads(r["spec"])
        except ValueError:
            continue
        for spec in specs if isinstance(specs, list) else [specs]:
            if spec.get("priority_class"):
                classes.add(spec["priority_class"])
            for v in spec.get("volumes", []):
                if "pvc" in v:
                    claims[v["pvc"]] = os.path.join(base, "pvc", v["pvc"])
                elif "nfs" in v:
                    key = "%s:%s" % (v["nfs"]["server"], v["nfs"]["path"])
                    nfs[key] = os.path.join(base, "nfs", re.sub(r"[^A-Za-z0-9.-]+", "_", key))
                elif "csi" in v:
                    drv = v["csi"]["driver"]
                    attr = CSI_ATTRIBUTES.get(drv)
                    val = v["csi"].get("attributes", {}).get(attr) if attr else None
                    if val:
                        d = csi.setdefault(drv, {"attribute": attr, "paths": {}})
                        d["paths"][val] = os.path.join(base, "csi", drv, val)
            for ref in spec.get("secrets", []):
                kind = "secret" if "secret" in ref else "config_map"
                keys = objs.setdefault((kind, ref[kind]), set())
                if "key" in ref:
                    keys.add(ref["key"])
                keys.update(ref.get("items", {}).keys())
    for d in list(claims.values()) + list(nfs.values()) + \
            [p for c in csi.values() for p in c["paths"].values()]:
        os.makedirs(d, exist_ok=True)
    vol = {"host_path_prefixes": ["/"], "claims": claims, "nfs": nfs, "csi": csi}
    return vol, objs, sorted(classes)


def live(build, rows):
    import harness
    tmp = tempfile.mkdtemp(prefix="sluice-k8s-corpus-")
    nss = namespaces_of([r["path"] for r in rows])
    vol, objs, classes = operator_setup(rows, os.path.join(tmp, "storage"))
    ctl = harness.Controller(os.path.join(tmp, "ctl"), tenants=[
        {"name": "alice", "token": "tok-alice-corpus", "namespaces": nss}],
        config_overrides={"container_mounts": ["/"], "volumes": vol,
                          "priority_classes": [{"name": c, "value": 10 * (i + 1)}
                                               for i, c in enumerate(classes)]})
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=8, cpus="128", memory="2Ti")
        agent.start()
        for (kind, name), keys in sorted(objs.items()):
            st, body = ctl.request("POST", "/v1/secrets", {
                "name": name, "type": kind, "data": {k: "placeholder" for k in keys or ["value"]}},
                token="tok-alice-corpus")
            if st != 201:
                sys.exit("the %s %s could not be made: %s %s" % (kind, name, st, body))
        env = dict(os.environ, SLUICE_SERVER=ctl.url, SLUICE_TOKEN="tok-alice-corpus",
                   SLUICE_DIR=os.path.join(tmp, "nodir"))
        for r in rows:
            if not r["accepted"]:
                continue
            out = sluice(build, ["--json", "submit", "-f", r["path"]], env)
            if out.returncode == 0:
                r["live"] = "201"
                continue
            try:
                err = json.loads(out.stdout)["error"]
                r["live"] = "%s: %s" % (err.get("code"), err.get("message"))
            except (ValueError, KeyError, TypeError):
                r["live"] = (out.stderr or out.stdout).strip().splitlines()[-1]
    finally:
        if agent:
            agent.stop()
        ctl.stop()
    return nss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--build", default=os.environ.get("SLUICE_BUILD", os.path.join(REPO, "build")))
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    a = ap.parse_args()
    if a.collect:
        collect()
    with open(MANIFEST) as f:
        manifest = json.load(f)
    os.environ["SLUICE_BUILD"] = a.build
    env = dict(os.environ, SLUICE_SERVER="http://127.0.0.1:9", SLUICE_DIR=tempfile.mkdtemp())
    env.pop("SLUICE_TOKEN", None)
    rows = []
    for m in manifest:
        path = os.path.join(FILES, m["file"])
        if not os.path.exists(path):
            sys.exit("%s is missing: run %s --collect" % (path, sys.argv[0]))
        r = sluice(a.build, ["submit", "--dry-run", "-f", path], env)
        errs, warns = problems(r.stderr)
        rows.append({"m": m, "path": path, "kind": kind_of(path), "accepted": r.returncode == 0,
                     "errors": errs, "warnings": warns,
                     "spec": r.stdout if r.returncode == 0 else ""})
    nss = live(a.build, rows) if a.live else None
    n = len(rows)
    ok = sum(r["accepted"] for r in rows)
    by_kind = {}
    for r in rows:
        t = by_kind.setdefault(r["kind"], [0, 0])
        t[0] += 1
        t[1] += r["accepted"]
    lines = ["# Kubernetes corpus: %d of %d accepted as written (%.0f%%)" % (ok, n, 100.0 * ok / n), "",
             "%d manifests from %d repositories (manifest.json); `%s`." %
             (n, len({r["m"]["repo"] for r in rows}), " ".join(["bench/k8s_corpus/run.py"] +
                                                               (["--live"] if a.live else []))), ""]
    for k, (t, acc) in sorted(by_kind.items()):
        lines.append("- %s: %d of %d accepted" % (k, acc, t))
    if a.live:
        live201 = sum(r.get("live") == "201" for r in rows)
        pending = sum(1 for r in rows if r.get("live", "").startswith("unknown_field") and
                      re.search(r"^unknown_field: (volumes|secrets):", r["live"]))
        lines += ["", "Live, against sluiced of this checkout (tenant alice with the namespaces %s; "
                  "the config's `volumes` maps every claim, NFS export and CSI bucket the corpus "
                  "names to a directory, allows every host path, and the tenant has each secret and "
                  "config map it names, with its keys: what an operator taking these manifests sets "
                  "up): %d of the %d accepted were taken (201); %d were refused only for the "
                  "`volumes` or `secrets` field, which this checkout's server does not know yet." %
                  (", ".join(nss) or "none", live201, ok, pending)]
    lines += ["", "| # | kind | source | accepted | what the CLI said |", "|---|---|---|---|---|"]
    for r in rows:
        m = r["m"]
        said = "; ".join(r["errors"]) if r["errors"] else "; ".join("warning: " + w for w in r["warnings"])
        if a.live and r["accepted"]:
            said += "%s live: %s" % ("; " if said else "", r.get("live"))
        lines.append("| %d | %s | [%s %s](%s) | %s | %s |" % (
            m["id"], r["kind"], m["repo"], m["path"], m["url"], "yes" if r["accepted"] else "**no**",
            said.replace("|", "\\|")))
    refused = [r for r in rows if not r["accepted"]]
    lines += ["", "## Refusals (%d)" % len(refused), ""]
    for r in refused:
        lines.append("- %s (%s): %s" % (r["m"]["file"], r["m"]["repo"], "; ".join(r["errors"])))
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d of %d accepted as written (%.0f%%); %s" % (ok, n, 100.0 * ok / n, a.out))


if __name__ == "__main__":
    main()
