#!/usr/bin/python3
"""bench/nodes/gen.py OUTDIR - a Slurm-shaped replay trace for the node
fields (docs/sim.md): 32 nodes of 8 H100s, 2000 jobs arriving every 40 s
on average (exponential), running 30 min on average; a quarter are -N
jobs (2, 4 or 8 nodes, one task of 2, 4 or 8 GPUs per node, whole nodes
for 8-GPU tasks and a third of the others), a tenth GPU shares, the rest
single-task 1-8 GPU jobs. Writes nodes.csv, jobs.csv and
jobs_noexcl.csv (the same jobs without exclusive). Seeded: the same
files every run.

bench/nodes/gen.py OUTDIR --big: the scale trace instead, 1024 nodes and
20,000 jobs, one every 1.2 s; a quarter -N 2, 4, 8 or 16 with one task of
2, 4 or 8 GPUs per node (whole nodes for 8), the rest 1-8 GPU tasks."""
import os
import random
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)
if "--big" in sys.argv:
    random.seed(7)
    with open(os.path.join(out, "nodes.csv"), "w") as f:
        f.write("name,cpu,memory,gpus,gpu_model,gpu_memory,pool\n")
        for i in range(1024):
            f.write("g%04d,64,512Gi,8,H100,80Gi,\n" % i)
    with open(os.path.join(out, "jobs.csv"), "w") as f:
        f.write("id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,"
                "priority,time_limit,nodes,tasks_per_node,exclusive\n")
        t = 0.0
        for i in range(20000):
            t += random.expovariate(1 / 1.2)
            d = int(random.expovariate(1 / 1800.0)) + 60
            if random.random() < 0.25:
                n = random.choice([2, 4, 8, 16])
                g = random.choice([2, 4, 8])
                f.write("j%d,,%d,%d,%d,8,64Gi,%d,,,,0,%d,%d,1,%d\n"
                        % (i, int(t), d, n, g, d * 2, n, 1 if g == 8 else 0))
            else:
                g = random.choice([1, 1, 2, 4, 8])
                f.write("j%d,,%d,%d,1,%d,%dGi,%d,,,,0,%d,,,\n" % (i, int(t), d, g * 4, g * 32, g, d * 2))
    sys.exit(0)
random.seed(22)
with open(os.path.join(out, "nodes.csv"), "w") as f:
    f.write("name,cpu,memory,gpus,gpu_model,gpu_memory,pool\n")
    for i in range(32):
        f.write("g%02d,64,512Gi,8,H100,80Gi,\n" % i)
head = ("id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,priority,"
        "time_limit,nodes,tasks_per_node,exclusive\n")
rows = []
t = 0.0
for i in range(2000):
    t += random.expovariate(1 / 40.0)
    d = int(random.expovariate(1 / 1800.0)) + 60
    r = random.random()
    if r < 0.25:
        n = random.choice([2, 2, 4, 4, 8])
        g = random.choice([2, 4, 8])
        ex = 1 if (g == 8 or random.random() < 0.3) else 0
        rows.append(["j%d" % i, "", int(t), d, n, 8, "64Gi", g, "", "", "", 0, d * 2, n, 1, ex])
    elif r < 0.35:
        rows.append(["j%d" % i, "", int(t), d, 1, 2, "16Gi", 0, "0.5", "", "", 0, d * 2, "", "", ""])
    else:
        g = random.choice([1, 1, 1, 2, 2, 4, 8])
        rows.append(["j%d" % i, "", int(t), d, 1, g * 4, "%dGi" % (g * 32), g, "", "", "", 0,
                     d * 2, "", "", ""])
for name, excl in (("jobs.csv", True), ("jobs_noexcl.csv", False)):
    with open(os.path.join(out, name), "w") as f:
        f.write(head)
        for row in rows:
            row = list(row)
            if not excl and row[15] == 1:
                row[15] = 0
            f.write(",".join(str(x) for x in row) + "\n")
