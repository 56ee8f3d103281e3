#!/usr/bin/python3
"""
bench/health_failover.py - detection to running elsewhere: real sluiced and
three real sluice-agents on the fake NVML (tests/e2e/fixtures/fake_nvml.c),
each with 2 GPUs. A 2-task gang of 2 GPUs each runs on two of the nodes;
the bench appends XID 79 (fell off the bus) to the event queue of one GPU
the gang holds and measures, from that instant:

  fenced   the controller shows the GPU fenced (GET /v1/nodes/NAME, polled
           every 5 ms): the agent's poll (--health-poll), its heartbeat
           sent at once on the change, the controller's fence;
  stopped  both ranks of the first run have handled their SIGTERM (each
           task's trap stamps the time): the preemption signal;
  running  both ranks of the requeued run have started on the other nodes
           (each task stamps its start as its first command).

The tasks exit at once on SIGTERM, so the figure holds no grace: a job
that checkpoints adds its own time to `stopped`. Each round resumes the
node and cancels the job. Slurm's health check runs every
HealthCheckInterval (commonly 300 s) and drains the node after its
program fails; that interval alone is the detection time there.

    /usr/bin/python3 bench/health_failover.py [--rounds N] [--poll S] [--heartbeat S]

Needs build/ (`make`; SLUICE_BUILD to change) and python3-yaml.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def stamps(d, prefix):
    out = {}
    for f in os.listdir(d):
        if f.startswith(prefix):
            try:
                out[f] = float(open(os.path.join(d, f)).read().split()[0])
            except (ValueError, IndexError, OSError):
                pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--poll", default="0.2", help="the agents' --health-poll (default 0.2 s)")
    ap.add_argument("--heartbeat", default="1", help="heartbeat seconds (default 1)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="health-failover-")
    nvml = u.build_fake_nvml(os.path.join(tmp, "nvml"))
    ctl = harness.Controller(os.path.join(tmp, "ctl"),
                             {"heartbeat": int(a.heartbeat), "kill_grace": 5})
    ctl.start()
    agents, events = [], {}
    try:
        for name in ("g1", "g2", "g3"):
            ev = os.path.join(tmp, "events-" + name)
            open(ev, "w").close()
            sc = os.path.join(tmp, "nvml-" + name)
            open(sc, "w").close()
            events[name] = ev
            env = {"LD_LIBRARY_PATH": nvml, "FAKE_NVML_SCRIPT": sc, "FAKE_NVML_EVENTS": ev,
                   "FAKE_NVML_COUNT": "2"}
            ag = harness.Agent(ctl, name, gpus=0, env=env,
                               extra_args=["--heartbeat", a.heartbeat, "--health-poll", a.poll])
            ag.start()
            agents.append(ag)
        res = {"fenced": [], "stopped": [], "running": []}
        st = os.path.join(tmp, "stamps")
        for rnd in range(a.rounds):
            d = os.path.join(st, str(rnd))
            os.makedirs(d)
            now = "$(date +%s.%N)"
            cmd = u.sh("echo %s > %s/start.$SLUICE_NODE.$RANK; "
                       "trap 'echo %s > %s/term.$SLUICE_NODE.$RANK; exit 0' TERM; sleep 300 & wait"
                       % (now, d, now, d))
            jid = ctl.submit({"tasks": 2, "gpus": 2, "command": cmd})["id"]
            harness.wait_for(lambda: len(stamps(d, "start.")) >= 2, timeout=30, what="first run")
            first = ctl.job(jid)["placement"]
            node = first[0]["node"]
            t0 = time.time()
            with open(events[node], "a") as f:
                f.write("%d 79\n" % first[0]["gpus"][0])

            def fenced():
                for e in ctl.node(node)["health"]["gpus"]:
                    if e["fenced"]:
                        return True
                return False

            harness.wait_for(fenced, timeout=30, interval=0.005, what="fence")
            t_f = time.time()
            harness.wait_for(lambda: len(stamps(d, "term.")) >= 2, timeout=30, what="both stopped")
            t_s = max(stamps(d, "term.").values())

            def elsewhere():
                s = {k: v for k, v in stamps(d, "start.").items() if not k.startswith("start.%s." % node)}
                return s if len(s) >= 2 and min(s.values()) > t0 else None

            s = harness.wait_for(elsewhere, timeout=60, interval=0.005, what="running elsewhere")
            t_r = max(s.values())
            res["fenced"].append(t_f - t0)
            res["stopped"].append(t_s - t0)
            res["running"].append(t_r - t0)
            ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.admin_token)
            ctl.wait_job(jid, ["cancelled", "failed", "succeeded"])
            r = ctl.request("POST", "/v1/nodes/resume", {"node": node}, token=ctl.admin_token)
            assert r[0] == 200, r
            # The agent still reports the XID (held --health-xid-hold): a new
            # agent on that node forgets it, as a repaired node would.
            ag = next(x for x in agents if x.name == node)
            ag.stop()
            open(events[node], "w").close()
            ag.start()
        print("detection to running elsewhere, %d rounds, --health-poll %s s, heartbeat %s s"
              % (a.rounds, a.poll, a.heartbeat))
        print("| step (from the XID, s) | min | median | max |")
        print("|---|---|---|---|")
        for k in ("fenced", "stopped", "running"):
            v = res[k]
            print("| %s | %.3f | %.3f | %.3f |" % (k, min(v), statistics.median(v), max(v)))
    finally:
        for ag in agents:
            ag.stop()
        ctl.stop()


if __name__ == "__main__":
    main()
