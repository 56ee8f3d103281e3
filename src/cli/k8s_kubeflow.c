/*
 * k8s_kubeflow.c - a Kubeflow kubeflow.org/v1 PyTorchJob as one Sluice
 * gang (k8s.h).
 *
 * The training operator runs a Master pod and N Worker pods that all
 * need each other, and tells each MASTER_ADDR (the master's address),
 * MASTER_PORT, WORLD_SIZE (1 + N) and RANK (0 for the master, 1..N for the
 * workers). A Sluice gang of 1 + N tasks gets the same variables from its
 * agents, task 0 being the master (docs/jobspec.md): so the job is one
 * gang, started all at once, its retries restarting all of it, as the
 * operator restarts every pod of a failed PyTorchJob. A job of Workers
 * only (no Master) has worker 0 as its rank 0, as with the operator.
 *
 * A gang runs one command with one size of task, so the Master's and the
 * Workers' templates must become the same fields; where they do not, the
 * first field that differs is named.
 */
#include <stdio.h>
#include <string.h>

#include "k8s.h"
#include "quantity.h"

/* A replica spec {replicas, restartPolicy, template} at path, its template's
 * fields into job. */
static int replica(cli_k8s_t *k, const char *path, yaml_node_t *r, json_t *job, long long *replicas) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, r, YAML_MAPPING_NODE)) return -1;
    int rc = 0, have_template = 0;
    const char *policy = NULL, *restart = NULL;
    cli_k8s_t sub = *k;
    sub.job = job;
    *replicas = 1;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[320];
    while (cli_spec_next(s, r, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "replicas")) {
            rc |= cli_spec_int(s, p, v, 0, 4095, replicas);
        } else if (!strcmp(f, "restartPolicy")) {
            if (cli_spec_string(s, p, v, &policy)) rc = -1;
            else if (strcmp(policy, "Never") && strcmp(policy, "OnFailure") && strcmp(policy, "ExitCode"))
                rc = cli_spec_fail(s, p, "\"%s\" is not supported (Never, OnFailure, ExitCode: each "
                                   "restarts the whole gang, counted by runPolicy.backoffLimit)", policy);
        } else if (!strcmp(f, "imagePullPolicy")) {
            cli_spec_warn(s, p, "not a field of a replica spec (Kubernetes drops it); the "
                          "container's imagePullPolicy is");
        } else if (!strcmp(f, "template")) {
            rc |= cli_k8s_template(&sub, p, v, &restart);
            have_template = 1;
        } else {
            rc = cli_spec_fail(s, p, "not supported (replicas, restartPolicy, template)");
        }
    }
    k->gang = sub.gang;
    if (!have_template) {
        snprintf(p, sizeof p, "%s.template", path);
        rc = cli_spec_fail(s, p, "missing");
    }
    if (restart && strcmp(restart, "Never") && strcmp(restart, "OnFailure")) {
        snprintf(p, sizeof p, "%s.template.spec.restartPolicy", path);
        rc = cli_spec_fail(s, p, "\"%s\" is not supported (Never or OnFailure)", restart);
    }
    return rc;
}

/* A replica-specs map (pytorchReplicaSpecs, mpiReplicaSpecs) at path: each
 * of its two roles read by replica into got[r] (a new object; one given
 * twice, the last wins) with its replica count in n[r]; any other role is
 * an error naming the two. 0, or -1 with each problem reported. */
static int replica_specs(cli_k8s_t *k, const char *path, yaml_node_t *v,
                         const char *const roles[2], json_t *got[2], long long n[2]) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *q = NULL;
    const char *role;
    yaml_node_t *r;
    char rp[320];
    while (cli_spec_next(s, v, path, &q, &role, &r, rp, sizeof rp)) {
        int w = !strcmp(role, roles[0]) ? 0 : !strcmp(role, roles[1]) ? 1 : -1;
        if (w < 0) {
            rc = cli_spec_fail(s, rp, "not supported (%s, %s)", roles[0], roles[1]);
            continue;
        }
        json_decref(got[w]);
        rc |= replica(k, rp, r, got[w] = json_object(), &n[w]);
    }
    return rc;
}

static int run_policy(cli_k8s_t *k, const char *path, yaml_node_t *rp) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, rp, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[320];
    while (cli_spec_next(s, rp, path, &pr, &f, &v, p, sizeof p)) {
        long long x;
        if (!strcmp(f, "backoffLimit")) {
            if (cli_spec_field_int(s, p, v, SL_JS_RETRIES, &x)) rc = -1;
            else json_object_set_new(k->job, "retries", json_integer(x));
        } else if (!strcmp(f, "activeDeadlineSeconds")) {
            if (cli_spec_int(s, p, v, 1, sl_jobspec_fields[SL_JS_TIME_LIMIT].max, &x)) rc = -1;
            else json_object_set_new(k->job, "time_limit", json_integer(x));
        } else if (!strcmp(f, "ttlSecondsAfterFinished")) {
            if (cli_spec_field_int(s, p, v, SL_JS_TTL_AFTER_FINISHED, &x)) rc = -1;
            else json_object_set_new(k->job, "ttl_after_finished", json_integer(x));
        } else if (!strcmp(f, "cleanPodPolicy")) {
            /* Every task of a gang that ends is stopped with it. */
            rc |= cli_spec_string(s, p, v, &str);
        } else if (!strcmp(f, "suspend")) {
            bool b;
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b && !k->kueue) rc = cli_spec_fail(s, p, "true is not supported");
            else if (b) cli_spec_warn(s, p, "Kueue admits a suspended job by resuming it; Sluice's "
                                      "scheduler admits this one from its queue");
        } else if (!strcmp(f, "schedulingPolicy")) {
            if (cli_spec_want(s, p, v, YAML_MAPPING_NODE)) {
                rc = -1;
                continue;
            }
            yaml_node_pair_t *q = NULL;
            const char *g;
            yaml_node_t *w;
            char gp[400];
            while (cli_spec_next(s, v, p, &q, &g, &w, gp, sizeof gp)) {
                json_t *val;
                if (!strcmp(g, "priorityClass")) {
                    if (cli_spec_field(s, gp, w, &sl_jobspec_fields[SL_JS_PRIORITY_CLASS], &val)) rc = -1;
                    else json_object_set_new(k->job, "priority_class", val);
                } else if (!strcmp(g, "minAvailable")) {
                    if (cli_spec_int(s, gp, w, 1, 4096, &x)) rc = -1;
                    else json_object_set_new(k->job, "_min_available", json_integer(x));
                } else if (!strcmp(g, "queue")) {
                    cli_spec_warn(s, gp, "no meaning here: Sluice queues by tenant and priority");
                } else {
                    rc = cli_spec_fail(s, gp, "not supported (minAvailable, priorityClass, queue)");
                }
            }
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    return rc;
}

/* elasticPolicy: torchrun's elastic rendezvous, as the operator sets it up. */
typedef struct elastic {
    bool set;
    long long min, max, port, restarts;
    const char *backend, *host, *nproc;
} elastic_t;

static int elastic_policy(cli_k8s_t *k, const char *path, yaml_node_t *v, elastic_t *el) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    el->set = true;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *w;
    char p[320];
    while (cli_spec_next(s, v, path, &pr, &f, &w, p, sizeof p)) {
        if (!strcmp(f, "minReplicas")) rc |= cli_spec_int(s, p, w, 1, 4096, &el->min);
        else if (!strcmp(f, "maxReplicas")) rc |= cli_spec_int(s, p, w, 1, 4096, &el->max);
        else if (!strcmp(f, "rdzvPort")) rc |= cli_spec_int(s, p, w, 1, 65535, &el->port);
        else if (!strcmp(f, "maxRestarts")) rc |= cli_spec_int(s, p, w, 0, 1000000, &el->restarts);
        else if (!strcmp(f, "rdzvHost")) rc |= cli_spec_string(s, p, w, &el->host);
        else if (!strcmp(f, "nProcPerNode")) rc |= cli_spec_string(s, p, w, &el->nproc);
        else if (!strcmp(f, "rdzvBackend")) {
            if (cli_spec_string(s, p, w, &el->backend)) rc = -1;
            else if (strcmp(el->backend, "c10d") && strcmp(el->backend, "etcd") && strcmp(el->backend, "etcd-v2"))
                rc = cli_spec_fail(s, p, "\"%s\" is not c10d, etcd or etcd-v2", el->backend);
        } else if (!strcmp(f, "metrics")) {
            cli_spec_warn(s, p, "not used: an elastic Sluice job grows with free GPUs and shrinks "
                          "when preempted, not by metrics (docs/elastic.md)");
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    return rc;
}

/* The operator's PET_* variables (torchrun reads them as its flags) for
 * an elastic job of tasks, between min and max; the rendezvous endpoint
 * is rdzvHost:rdzvPort, else the gang's first task (MASTER_ADDR and
 * MASTER_PORT, known only on the node: the command then runs under a
 * shell that sets it). */
static int elastic_env(cli_k8s_t *k, elastic_t *el, long long tasks) {
    cli_spec_t *s = k->s;
    long long min = el->min ? el->min : tasks, max = el->max ? el->max : tasks;
    if (min > max || tasks > max) {
        return cli_spec_fail(s, "spec.elasticPolicy", "replicas %lld are not within minReplicas %lld "
                             "to maxReplicas %lld", tasks, min, max);
    }
    if (tasks < min) tasks = min;
    json_object_set_new(k->job, "tasks", json_integer(tasks));
    json_object_set_new(k->job, "min_tasks", json_integer(min));
    json_t *env = json_object_get(k->job, "env");
    char buf[320];
    /* The operator's: MIN:MAX, or the replicas when neither is given. */
    if (el->min || el->max) snprintf(buf, sizeof buf, "%lld:%lld", min, max);
    else snprintf(buf, sizeof buf, "%lld", tasks);
    json_object_set_new(env, "PET_NNODES", json_string(buf));
    json_object_set_new(env, "PET_RDZV_BACKEND", json_string(el->backend ? el->backend : "c10d"));
    if (el->restarts) {
        snprintf(buf, sizeof buf, "%lld", el->restarts);
        json_object_set_new(env, "PET_MAX_RESTARTS", json_string(buf));
    }
    if (el->nproc) json_object_set_new(env, "PET_NPROC_PER_NODE", json_string(el->nproc));
    if (el->host) {
        snprintf(buf, sizeof buf, "%s:%lld", el->host, el->port ? el->port : 29400);
        json_object_set_new(env, "PET_RDZV_ENDPOINT", json_string(buf));
        return 0;
    }
    json_t *cmd = json_object_get(k->job, "command");
    if (!json_array_size(cmd))
        return cli_spec_fail(s, "spec.elasticPolicy", "without rdzvHost the rendezvous is the first "
                             "task's MASTER_ADDR, which a shell around the container's command sets: "
                             "give the command");
    json_t *wrapped = json_pack("[sss]", "/bin/sh", "-c",
                                "PET_RDZV_ENDPOINT=\"$MASTER_ADDR:$MASTER_PORT\"; export PET_RDZV_ENDPOINT; "
                                "exec \"$@\"");
    json_array_append_new(wrapped, json_string("sh"));
    json_array_extend(wrapped, cmd);
    json_object_set_new(k->job, "command", wrapped);
    return 0;
}

/* Where the Master and the Workers ask for different CPUs or memory, both
 * get the larger, with a warning: a gang's tasks have one size, and a
 * task given more than it requested still has what it asked for. */
static void larger_size(cli_spec_t *s, json_t *a, json_t *b) {
    static const struct { const char *key; sl_qty_kind_t kind; } sizes[] = {
        {"cpus", SL_QTY_CPU}, {"memory", SL_QTY_MEM}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const char *x = json_string_value(json_object_get(a, sizes[i].key));
        const char *y = json_string_value(json_object_get(b, sizes[i].key));
        int64_t qx = 0, qy = 0; /* no request: none (Kubernetes' best effort) */
        char err[128];
        if ((!x && !y) || (x && y && !strcmp(x, y)) ||
            (x && sl_qty_parse(x, sizes[i].kind, &qx, err, sizeof err) < 0) ||
            (y && sl_qty_parse(y, sizes[i].kind, &qy, err, sizeof err) < 0))
            continue;
        const char *big = qx >= qy ? x : y;
        cli_spec_warn(s, "spec.pytorchReplicaSpecs", "the Master asks for %s %s, each Worker for %s: "
                      "every task of the gang gets %s", x ? x : "no", sizes[i].key, y ? y : "none", big);
        json_t *v = json_string(big);
        json_object_set(a, sizes[i].key, v);
        json_object_set(b, sizes[i].key, v);
        json_decref(v);
    }
}

/* The first key where a and b differ, NULL when none does. */
static const char *first_difference(json_t *a, json_t *b) {
    const char *key;
    json_t *v;
    json_object_foreach(a, key, v)
        if (!json_equal(v, json_object_get(b, key))) return key;
    json_object_foreach(b, key, v)
        if (!json_object_get(a, key)) return key;
    return NULL;
}

int cli_k8s_pytorchjob(cli_k8s_t *k, yaml_node_t *root) {
    cli_spec_t *s = k->s;
    int rc = 0;
    yaml_node_t *spec = NULL, *meta = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, root, "", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "apiVersion") || !strcmp(f, "kind")) continue;
        else if (!strcmp(f, "metadata")) meta = v;
        else if (!strcmp(f, "spec")) spec = v;
        else rc = cli_spec_fail(s, p, "not supported in a PyTorchJob manifest");
    }
    if (meta) rc |= cli_k8s_meta(k, "metadata", meta, true);
    if (!spec) return cli_spec_fail(s, "spec", "missing");
    if (cli_spec_want(s, "spec", spec, YAML_MAPPING_NODE)) return -1;
    json_t *master = NULL, *worker = NULL;
    long long nmaster = 0, nworker = 0;
    elastic_t el = {0};
    const char *nproc = NULL;
    pr = NULL;
    while (cli_spec_next(s, spec, "spec", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "pytorchReplicaSpecs")) {
            static const char *const roles[2] = {"Master", "Worker"};
            json_t *got[2] = {master, worker};
            long long n[2] = {nmaster, nworker};
            rc |= replica_specs(k, p, v, roles, got, n);
            master = got[0], worker = got[1], nmaster = n[0], nworker = n[1];
            char mp[300];
            snprintf(mp, sizeof mp, "%s.Master", p);
            if (nmaster > 1) rc = cli_spec_fail(s, mp, "replicas: %lld masters: a PyTorchJob has one", nmaster);
        } else if (!strcmp(f, "runPolicy")) {
            rc |= run_policy(k, p, v);
        } else if (!strcmp(f, "nprocPerNode")) {
            rc |= cli_spec_string(s, p, v, &nproc);
        } else if (!strcmp(f, "elasticPolicy")) {
            rc |= elastic_policy(k, p, v, &el);
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (!master && !worker) rc = cli_spec_fail(s, "spec.pytorchReplicaSpecs", "needs Master or Worker");
    if (master && nmaster == 0)
        rc = cli_spec_fail(s, "spec.pytorchReplicaSpecs.Master.replicas", "0: a Master runs once");
    json_t *one = master ? master : worker;
    if (master && worker && nworker > 0 && !rc) {
        larger_size(s, master, worker);
        const char *d = first_difference(master, worker);
        if (d)
            rc = cli_spec_fail(s, "spec.pytorchReplicaSpecs.Worker.template", "differs from the "
                               "Master's in %s: Sluice runs one command and one size of task for "
                               "every rank of a gang", d);
    }
    long long tasks = (master ? 1 : 0) + nworker;
    if (tasks < 1 && !rc) rc = cli_spec_fail(s, "spec.pytorchReplicaSpecs", "no replicas");
    json_t *mina = json_object_get(k->job, "_min_available");
    if (mina && json_integer_value(mina) != tasks)
        rc = cli_spec_fail(s, "spec.runPolicy.schedulingPolicy.minAvailable", "%lld is not the gang's "
                           "%lld replicas: a Sluice gang starts whole", (long long)json_integer_value(mina),
                           tasks);
    json_object_del(k->job, "_min_available");
    if (one) {
        const char *key;
        json_t *val;
        json_object_foreach(one, key, val)
            json_object_set(k->job, key, val);
    }
    /* The operator's variables: the agents set MASTER_ADDR, MASTER_PORT,
     * WORLD_SIZE and RANK for every gang; PYTHONUNBUFFERED it sets too. */
    json_t *env = json_object_get(k->job, "env");
    if (!env) json_object_set_new(k->job, "env", env = json_object());
    if (!json_object_get(env, "PYTHONUNBUFFERED")) json_object_set_new(env, "PYTHONUNBUFFERED", json_string("1"));
    json_object_set_new(k->job, "tasks", json_integer(tasks > 0 ? tasks : 1));
    /* nprocPerNode: torchrun in each task starts that many processes; it
     * needs its node's rank, which only an elastic rendezvous hands out
     * here (a gang's static variables cannot give each task its own). */
    if (nproc && !el.set && strcmp(nproc, "1"))
        rc = cli_spec_fail(s, "spec.nprocPerNode", "\"%s\" is supported with elasticPolicy only (its "
                           "rendezvous gives each task its rank; else give each GPU its own replica)", nproc);
    if (nproc && !el.nproc) el.nproc = nproc;
    if (el.set && !rc) rc |= elastic_env(k, &el, tasks);
    json_decref(master);
    json_decref(worker);
    return rc;
}

/* ---- MPIJob ---- */

/* The path mpi-operator mounts the hostfile at, which a launcher's command
 * may name. */
#define MPI_HOSTFILE "/etc/mpi/hostfile"

/* Whether the Worker's command only keeps the pod up for the launcher
 * (mpi-operator v2's sshd, v1's sleep): mpirun starts the ranks itself. */
static bool worker_idle(json_t *cmd) {
    const char *a0 = json_string_value(json_array_get(cmd, 0));
    const char *base = a0 ? strrchr(a0, '/') : NULL;
    base = base ? base + 1 : a0;
    return !a0 || !strcmp(base, "sshd") || !strcmp(base, "sleep");
}

int cli_k8s_mpijob(cli_k8s_t *k, yaml_node_t *root) {
    cli_spec_t *s = k->s;
    int rc = 0;
    yaml_node_t *spec = NULL, *meta = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, root, "", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "apiVersion") || !strcmp(f, "kind")) continue;
        else if (!strcmp(f, "metadata")) meta = v;
        else if (!strcmp(f, "spec")) spec = v;
        else rc = cli_spec_fail(s, p, "not supported in an MPIJob manifest");
    }
    if (meta) rc |= cli_k8s_meta(k, "metadata", meta, true);
    if (!spec) return cli_spec_fail(s, "spec", "missing");
    if (cli_spec_want(s, "spec", spec, YAML_MAPPING_NODE)) return -1;
    json_t *launcher = NULL, *worker = NULL;
    long long nlauncher = 0, nworker = 0, slots = 1;
    const char *impl = "OpenMPI";
    pr = NULL;
    while (cli_spec_next(s, spec, "spec", &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "mpiReplicaSpecs")) {
            static const char *const roles[2] = {"Launcher", "Worker"};
            json_t *got[2] = {launcher, worker};
            long long n[2] = {nlauncher, nworker};
            rc |= replica_specs(k, p, v, roles, got, n);
            launcher = got[0], worker = got[1], nlauncher = n[0], nworker = n[1];
            char lp[300];
            snprintf(lp, sizeof lp, "%s.Launcher", p);
            if (launcher && nlauncher != 1)
                rc = cli_spec_fail(s, lp, "replicas: %lld: an MPIJob has one Launcher", nlauncher);
        } else if (!strcmp(f, "runPolicy")) {
            rc |= run_policy(k, p, v);
        } else if (!strcmp(f, "slotsPerWorker")) {
            rc |= cli_spec_int(s, p, v, 1, 64, &slots);
        } else if (!strcmp(f, "cleanPodPolicy") || !strcmp(f, "launcherCreationPolicy")) {
            rc |= cli_spec_string(s, p, v, &str); /* every task ends with the job; one start */
        } else if (!strcmp(f, "sshAuthMountPath")) {
            rc |= cli_spec_string(s, p, v, &str);
            cli_spec_warn(s, p, "no meaning here: mpirun starts its daemons through Sluice's srun, "
                          "not ssh");
        } else if (!strcmp(f, "mpiImplementation")) {
            if (cli_spec_string(s, p, v, &impl)) rc = -1;
            else if (strcmp(impl, "OpenMPI") && strcmp(impl, "Intel") && strcmp(impl, "MPICH"))
                rc = cli_spec_fail(s, p, "\"%s\" is not OpenMPI, Intel or MPICH", impl);
        } else if (!strcmp(f, "runLauncherAsWorker")) {
            bool b;
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b) rc = cli_spec_fail(s, p, "true is not supported (the Launcher runs in the "
                                           "first Worker's task)");
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (!launcher) rc = cli_spec_fail(s, "spec.mpiReplicaSpecs", "needs a Launcher");
    if (!worker || nworker < 1) rc = cli_spec_fail(s, "spec.mpiReplicaSpecs", "needs Worker replicas");
    /* The ranks run on the nodes, started by Sluice's own step launcher:
     * an image (theirs or the launcher's) is not where they would run. */
    json_t *pods[2] = {launcher, worker};
    for (int i = 0; i < 2 && !rc; i++) {
        snprintf(p, sizeof p, "spec.mpiReplicaSpecs.%s.template.spec.containers[0].image",
                 i ? "Worker" : "Launcher");
        if (json_object_get(pods[i], "image") || json_object_get(pods[i], "containers"))
            rc = cli_spec_fail(s, p, "not supported: an MPIJob runs as an allocation, its ranks "
                               "started on the nodes by mpirun through Sluice's srun, not in an "
                               "image (give the command that the nodes' MPI runs)");
    }
    if (rc) {
        json_decref(launcher);
        json_decref(worker);
        return rc;
    }
    json_t *wcmd = json_object_get(worker, "command");
    if (wcmd && !worker_idle(wcmd))
        cli_spec_warn(s, "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].command",
                      "not run: mpirun starts the ranks on the Workers' nodes");
    if (!json_object_get(launcher, "command"))
        rc = cli_spec_fail(s, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0]",
                           "needs a command (mpirun ...)");
    /* Each Worker is a node of slotsPerWorker tasks, which share its
     * resources; the Launcher runs in the first task, its own requests
     * not added (mpirun waits, the ranks work). */
    json_t *x;
    if ((x = json_object_get(worker, "gpus"))) {
        long long g = json_integer_value(x);
        if (g % slots)
            rc = cli_spec_fail(s, "spec.slotsPerWorker", "%lld does not divide the Worker's %lld "
                               "GPUs (each slot is a task of its own GPUs)", slots, g);
        else json_object_set_new(k->job, "gpus", json_integer(g / slots));
    }
    for (int i = 0; i < 2; i++) {
        const char *key = i ? "memory" : "cpus";
        sl_qty_kind_t kind = i ? SL_QTY_MEM : SL_QTY_CPU;
        const char *q = json_string_value(json_object_get(worker, key));
        int64_t n;
        char err[128], out[64];
        if (q && sl_qty_parse(q, kind, &n, err, sizeof err) == 0) {
            sl_qty_format(n / slots, kind, out, sizeof out);
            json_object_set_new(k->job, key, json_string(out));
        }
    }
    static const char *const own[] = {"env", "secrets", "volumes", "run_as_user", "run_as_group"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if ((x = json_object_get(launcher, own[i]))) json_object_set(k->job, own[i], x);
    static const char *const where[] = {"pool", "gpu_models", "node_selector", "tolerations",
                                        "priority_class", "gpu_resource"};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
        if ((x = json_object_get(worker, where[i]))) json_object_set(k->job, where[i], x);
    json_object_set_new(k->job, "allocation", json_true());
    json_object_set_new(k->job, "nodes", json_integer(nworker));
    json_object_set_new(k->job, "tasks_per_node", json_integer(slots));
    json_object_set_new(k->job, "tasks", json_integer(nworker * slots));
    /* The hostfile mpi-operator writes (each Worker's node, its slots), at
     * $TMPDIR/mpi/hostfile, which replaces /etc/mpi/hostfile wherever the
     * command's words name it (a node's /etc is not the job's); mpirun
     * starts its daemons through srun (OpenMPI's plm and ras slurm, Hydra's
     * slurm launcher), as in an sbatch allocation. */
    json_t *env = json_object_get(k->job, "env");
    if (!env) json_object_set_new(k->job, "env", env = json_object());
    static const char *const mpienv[][2] = {
        {"OMPI_MCA_plm", "slurm"}, {"OMPI_MCA_ras", "slurm"}, {"OMPI_MCA_orte_keep_fqdn_hostnames", "true"},
        {"I_MPI_HYDRA_BOOTSTRAP", "slurm"}, {"HYDRA_LAUNCHER", "slurm"}};
    for (size_t i = 0; i < sizeof mpienv / sizeof mpienv[0]; i++)
        if (!json_object_get(env, mpienv[i][0])) json_object_set_new(env, mpienv[i][0], json_string(mpienv[i][1]));
    char script[768];
    snprintf(script, sizeof script,
             "h=\"$TMPDIR/mpi/hostfile\"; mkdir -p \"$TMPDIR/mpi\" && "
             "scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed 's/$/ slots=%lld/' > \"$h\" || exit 125; "
             "export OMPI_MCA_orte_default_hostfile=\"$h\" HYDRA_HOST_FILE=\"$h\" I_MPI_HYDRA_HOST_FILE=\"$h\"; "
             "for a; do shift; case \"$a\" in *" MPI_HOSTFILE "*) "
             "a=$(printf '%%s' \"$a\" | sed \"s|" MPI_HOSTFILE "|$h|g\");; esac; set -- \"$@\" \"$a\"; done; "
             "exec \"$@\"", slots);
    json_t *cmd = json_pack("[sss]", "/bin/sh", "-c", script);
    json_array_append_new(cmd, json_string("mpijob"));
    json_array_extend(cmd, json_object_get(launcher, "command"));
    json_object_set_new(k->job, "command", cmd);
    json_decref(launcher);
    json_decref(worker);
    return rc;
}
