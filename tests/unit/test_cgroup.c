/*
 * test_cgroup.c - the agent's enforcement backends (src/agent/cgroup.h).
 *
 * cgroup v2 against a directory tree laid out like cgroupfs (the agent's
 * --cgroup-mount pointed at it): every file written, its value, and the
 * leaf rule, read from the trace of writes in order (the agent moved into
 * ROOT/agent before subtree_control is set, subtree_control set before any
 * child is used, no process written into an internal node). Then against
 * the real cgroup2 mount of the machine where there is one and the test
 * runs as root (skipped otherwise): the BPF device program denies a device
 * that is not on its list and allows one that is, and a task cgroup kept
 * busy by a live process is removed with cgroup.kill. The pool of spare
 * task cgroups: none on v2 and none; on the real v1 controllers (root
 * only, skipped otherwise) a spare renamed into place over a leftover of
 * the same name, the short outcome read, and a failed claim that leaves
 * neither name; a memory limit written under a stream of signals (v1's
 * EINTR) never fails. Every directory the tests make is removed by them.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "cgroup/cgroup.h"
#include "cgroup/backend.h"
#include "cgroup/bpf.h"

#define MI (INT64_C(1) << 20)

/* ---- a fake cgroupfs tree and a trace of writes ---- */

typedef struct trace {
    char path[64][PATH_MAX];
    char value[64][64];
    int n;
} trace_t;

static void trace_write(void *ud, const char *path, const char *value) {
    trace_t *t = ud;
    if (t->n < 64) {
        snprintf(t->path[t->n], sizeof t->path[0], "%s", path);
        snprintf(t->value[t->n], sizeof t->value[0], "%s", value);
        t->n++;
    }
}

/* The index of the first write to path (absolute), or -1. */
static int trace_find(const trace_t *t, const char *path) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->path[i], path) == 0) return i;
    return -1;
}

static void put(const char *dir, const char *file, const char *text) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *dir, const char *file, char *buf, size_t len) {
    assert_true(cg_read(dir, file, buf, len) >= 0);
    return buf;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

static void rm_tree(const char *path) {
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fake mount with root /sluice offering controllers ctls and holding
 * two processes (a wrapper and the agent, say). */
static void fake_tree(char *mount, size_t len, const char *ctls) {
    snprintf(mount, len, "/tmp/sluice-test-cgroup-XXXXXX");
    assert_non_null(mkdtemp(mount));
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s/sluice", mount);
    assert_int_equal(mkdir(root, 0755), 0);
    put(mount, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    put(root, "cgroup.controllers", ctls);
    put(root, "cgroup.procs", "4242\n4343\n");
    put(root, "cgroup.subtree_control", "");
}

static agent_cgroup_config_t v2_config(const char *mount, trace_t *tr) {
    agent_cgroup_config_t cfg = {.mode = "v2", .mount = mount, .root = "/sluice",
                                 .node = "n1", .pids_max = 4096, .ngpus = 0,
                                 .trace = trace_write, .trace_ud = tr};
    return cfg;
}

static void test_cgroup_v2_fake_tree_files_and_leaf_rule(void **state) {
    char mount[PATH_MAX], root[PATH_MAX + 8], path[PATH_MAX * 4], err[1024], buf[256];
    fake_tree(mount, sizeof mount, "cpuset cpu io memory pids\n");
    snprintf(root, sizeof root, "%s/sluice", mount);
    trace_t *tr = calloc(1, sizeof *tr);
    agent_cgroup_config_t cfg = v2_config(mount, tr);
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), 0);
    assert_string_equal(agent_cgroup_kind(cg), "v2");
    assert_non_null(strstr(agent_cgroup_describe(cg), "devices NOT enforced"));

    /* Start-up: the agent first, then every process of ROOT, into the
     * leaf ROOT/agent; then ROOT's controllers; then ROOT/tasks'. */
    snprintf(path, sizeof path, "%s/agent/cgroup.procs", root);
    int moved = trace_find(tr, path);
    assert_int_equal(moved, 0);
    assert_string_equal(tr->value[0], "0");
    assert_string_equal(tr->value[1], "4242");
    assert_string_equal(tr->value[2], "4343");
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", root);
    int sub_root = trace_find(tr, path);
    assert_int_equal(sub_root, 3);
    assert_string_equal(tr->value[sub_root], "+memory +cpu +pids");
    snprintf(path, sizeof path, "%s/tasks/cgroup.subtree_control", root);
    int sub_tasks = trace_find(tr, path);
    assert_int_equal(sub_tasks, 4);
    assert_string_equal(tr->value[sub_tasks], "+memory +cpu +pids");
    assert_int_equal(tr->n, 5);

    /* A task: 100Mi, half a CPU, one GPU. */
    agent_cgroup_task_t ct;
    char reason[1024];
    int32_t gpus[] = {0};
    assert_int_equal(agent_cgroup_task_create(cg, "7.0", 100 * MI, 500, gpus, 1, &ct, reason,
                                              sizeof reason), 0);
    assert_int_equal(ct.nprocs, 1);
    assert_int_equal(ct.oom_fd, -1);
    assert_int_equal(ct.mem_limit, 110 * MI);
    char task[PATH_MAX * 2];
    snprintf(task, sizeof task, "%s/tasks/7.0", root);
    static const struct { const char *file, *value; } want[] = {
        {"memory.max", "115343360"}, {"memory.low", "94371840"}, {"memory.swap.max", "0"},
        {"memory.oom.group", "1"}, {"cpu.max", "50000 100000"}, {"pids.max", "4096"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(buf, sizeof buf, "%s\n", want[i].value);
        char got[256];
        assert_string_equal(get(task, want[i].file, got, sizeof got), buf);
        snprintf(path, sizeof path, "%s/%s", task, want[i].file);
        /* Written after the subtree was enabled for children. */
        assert_true(trace_find(tr, path) > sub_tasks);
    }
    /* The task writes itself in through the descriptor it was handed. */
    assert_int_equal(write(ct.procs[0], "0", 1), 1);
    agent_cgroup_task_release(&ct);
    assert_int_equal(ct.nprocs, 0);
    assert_string_equal(get(task, "cgroup.procs", buf, sizeof buf), "0");

    /* No process was ever written into an internal node. */
    for (int i = 0; i < tr->n; i++) {
        const char *p = tr->path[i];
        size_t pl = strlen(p), sl = strlen("/cgroup.procs");
        if (pl < sl || strcmp(p + pl - sl, "/cgroup.procs") != 0) continue;
        snprintf(path, sizeof path, "%s/agent/cgroup.procs", root);
        assert_string_equal(p, path);
    }
    snprintf(path, sizeof path, "%s/tasks/cgroup.procs", root);
    assert_int_equal(access(path, F_OK), -1);
    assert_string_equal(get(root, "cgroup.procs", buf, sizeof buf), "4242\n4343\n");

    /* Removed; a second removal finds nothing and is fine. */
    assert_int_equal(agent_cgroup_task_remove(cg, "7.0"), 0);
    assert_int_equal(access(task, F_OK), -1);
    assert_int_equal(agent_cgroup_task_remove(cg, "7.0"), 0);
    agent_cgroup_close(cg);
    free(tr);
    rm_tree(mount);
}

static bool keep82(void *ud, const char *name) {
    return strcmp(name, "8.2") == 0;
}

static void test_cgroup_v2_no_limit_for_zero_requests(void **state) {
    char mount[PATH_MAX], err[1024], reason[1024], task[PATH_MAX * 2], buf[64];
    fake_tree(mount, sizeof mount, "memory cpu pids");
    trace_t *tr = calloc(1, sizeof *tr);
    agent_cgroup_config_t cfg = v2_config(mount, tr);
    cfg.pids_max = 0;
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), 0);
    agent_cgroup_task_t ct;
    assert_int_equal(agent_cgroup_task_create(cg, "8.2", 0, 0, NULL, 0, &ct, reason, sizeof reason),
                     0);
    snprintf(task, sizeof task, "%s/sluice/tasks/8.2", mount);
    assert_false(cg_exists(task, "memory.max"));
    assert_false(cg_exists(task, "memory.low"));
    assert_false(cg_exists(task, "cpu.max"));
    assert_string_equal(get(task, "pids.max", buf, sizeof buf), "max\n");
    assert_string_equal(get(task, "memory.oom.group", buf, sizeof buf), "1\n");
    assert_int_equal(ct.mem_limit, 0);
    agent_cgroup_task_release(&ct);
    /* Tiny requests still get a limit: one page, the kernel's least CPU quota. */
    assert_int_equal(agent_cgroup_task_create(cg, "8.3", 1000, 5, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    snprintf(task, sizeof task, "%s/sluice/tasks/8.3", mount);
    assert_string_equal(get(task, "memory.max", buf, sizeof buf), "4096\n");
    assert_string_equal(get(task, "cpu.max", buf, sizeof buf), "1000 100000\n");
    agent_cgroup_task_release(&ct);
    /* Limits above the requests are the hard limit and the quota as they
     * are (soft: 90% of the request); one not above is the default. */
    assert_int_equal(agent_cgroup_task_create_limits(cg, "8.4", 100 * MI, 2048 * MI, 500, 2000, NULL,
                                                     0, &ct, reason, sizeof reason), 0);
    snprintf(task, sizeof task, "%s/sluice/tasks/8.4", mount);
    assert_string_equal(get(task, "memory.max", buf, sizeof buf), "2147483648\n");
    assert_string_equal(get(task, "memory.low", buf, sizeof buf), "94371840\n");
    assert_string_equal(get(task, "cpu.max", buf, sizeof buf), "200000 100000\n");
    assert_int_equal(ct.mem_limit, 2048 * MI);
    agent_cgroup_task_release(&ct);
    assert_int_equal(agent_cgroup_task_create_limits(cg, "8.5", 100 * MI, 50 * MI, 500, 100, NULL,
                                                     0, &ct, reason, sizeof reason), 0);
    snprintf(task, sizeof task, "%s/sluice/tasks/8.5", mount);
    assert_string_equal(get(task, "memory.max", buf, sizeof buf), "115343360\n");
    assert_string_equal(get(task, "cpu.max", buf, sizeof buf), "50000 100000\n");
    agent_cgroup_task_release(&ct);
    /* After a restart: 8.2 is a running task's, 8.3 a leftover. */
    assert_int_equal(agent_cgroup_cleanup(cg, keep82, NULL), 3);
    assert_false(cg_exists(task, "."));
    snprintf(task, sizeof task, "%s/sluice/tasks/8.2", mount);
    assert_true(cg_exists(task, "."));
    agent_cgroup_close(cg);
    free(tr);
    rm_tree(mount);
}

/* The one-line refusals: what is wrong, the file, what to do. */
static void test_cgroup_v2_refusals_name_the_file(void **state) {
    char mount[PATH_MAX], err[1024], want[PATH_MAX * 2];
    fake_tree(mount, sizeof mount, "cpu pids\n");
    agent_cgroup_config_t cfg = v2_config(mount, NULL);
    cfg.trace = NULL;
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), -1);
    assert_null(cg);
    snprintf(want, sizeof want,
             "cgroup v2: memory controller not delegated to %s/sluice (cgroup.controllers lacks "
             "memory): start the agent with systemd Delegate=yes or pass --cgroup-root", mount);
    assert_string_equal(err, want);
    assert_null(strchr(err, '\n'));
    /* Nothing was changed: no agent leaf, no subtree. */
    snprintf(want, sizeof want, "%s/sluice/agent", mount);
    assert_int_equal(access(want, F_OK), -1);

    cfg.root = "/missing";
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), -1);
    snprintf(want, sizeof want, "cgroup v2: %s/missing: No such file or directory:", mount);
    assert_memory_equal(err, want, strlen(want));

    /* Not a cgroup2 mount and not laid out like one. */
    cfg.mount = "/proc";
    cfg.root = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), -1);
    assert_non_null(strstr(err, "/proc is not a cgroup2 file system"));

    /* An unknown mode, a GPU device file that is not a device. */
    cfg.mode = "v3";
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), -1);
    assert_string_equal(err, "--cgroup: \"v3\" is not one of v2, v1, none, auto");
    cfg.mode = "v2";
    cfg.mount = mount;
    cfg.ngpus = 1;
    cfg.gpu_files = "/etc/hostname";
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), -1);
    assert_string_equal(err, "--gpu-device-files: /etc/hostname (GPU 0): not a device file");
    rm_tree(mount);
}

static void test_cgroup_none_enforces_nothing(void **state) {
    char err[256], reason[256];
    agent_cgroup_config_t cfg = {.mode = "none", .node = "n1"};
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), 0);
    assert_string_equal(agent_cgroup_kind(cg), "none");
    assert_non_null(strstr(agent_cgroup_describe(cg), "without memory, CPU or device limits"));
    agent_cgroup_task_t ct;
    assert_int_equal(agent_cgroup_task_create(cg, "1.0", MI, 1000, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    assert_int_equal(ct.nprocs, 0);
    assert_int_equal(ct.oom_fd, -1);
    agent_cgroup_stats_t st;
    assert_int_equal(agent_cgroup_task_stats(cg, "1.0", &st), -ENOENT);
    assert_int_equal(agent_cgroup_task_outcome(cg, "1.0", &st), -ENOENT);
    assert_int_equal(agent_cgroup_housekeep(cg, AGENT_CGROUP_POOL_MAX), 0);
    assert_false(agent_cgroup_housekeeping_due(cg));
    assert_int_equal(agent_cgroup_task_remove(cg, "1.0"), 0);
    assert_int_equal(agent_cgroup_cleanup(cg, NULL, NULL), 0);
    agent_cgroup_close(cg);
    agent_cgroup_close(NULL);
}

/* v2 keeps no pool (a cgroup2 directory cannot be renamed); the outcome
 * is memory.events' oom_kill and memory.peak, and the limit only when the
 * caller does not know it. */
static void test_cgroup_v2_no_pool_and_the_outcome(void **state) {
    char mount[PATH_MAX], err[1024], reason[1024], task[PATH_MAX * 2];
    fake_tree(mount, sizeof mount, "memory cpu pids");
    agent_cgroup_config_t cfg = v2_config(mount, NULL);
    cfg.trace = NULL;
    cfg.pool = 4;
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), 0);
    assert_null(strstr(agent_cgroup_describe(cg), "spare"));
    assert_int_equal(agent_cgroup_housekeep(cg, AGENT_CGROUP_POOL_MAX), 0);
    assert_false(agent_cgroup_housekeeping_due(cg));
    agent_cgroup_task_t ct;
    assert_int_equal(agent_cgroup_task_create(cg, "4.1", 100 * MI, 1000, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    agent_cgroup_task_release(&ct);
    snprintf(task, sizeof task, "%s/sluice/tasks", mount);
    assert_false(cg_exists(task, "pool.1"));
    snprintf(task, sizeof task, "%s/sluice/tasks/4.1", mount);
    put(task, "memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n");
    put(task, "memory.peak", "115339264\n");
    agent_cgroup_stats_t st = {.mem_limit = 110 * MI};
    assert_int_equal(agent_cgroup_task_outcome(cg, "4.1", &st), 0);
    assert_int_equal(st.oom_kills, 1);   /* oom_kill, not oom */
    assert_int_equal(st.mem_peak, 115339264);
    assert_int_equal(st.mem_limit, 110 * MI);
    assert_int_equal(st.cpu_usec, 0);
    /* A re-adopted task's limit is not known: read from memory.max. */
    st = (agent_cgroup_stats_t){.mem_limit = 0};
    assert_int_equal(agent_cgroup_task_outcome(cg, "4.1", &st), 0);
    assert_int_equal(st.mem_limit, 110 * MI);
    assert_int_equal(agent_cgroup_task_remove(cg, "4.1"), 0);
    assert_int_equal(agent_cgroup_task_outcome(cg, "4.1", &st), -ENOENT);
    agent_cgroup_close(cg);
    rm_tree(mount);
}

/* ---- the real cgroup v1 controllers: the pool ---- */

static const char *const v1_ctls[] = {"memory", "cpu", "cpuacct", "pids", "devices"};
static char v1_root[64];

/* ROOT in each v1 hierarchy (co-mounted ones once); how many, 0 when this
 * machine has no writable v1 controllers or the test is not root. */
static int v1_roots(char dirs[5][PATH_MAX]) {
    int n = 0;
    for (int c = 0; c < 5; c++) {
        char mnt[PATH_MAX];
        if (geteuid() != 0 || cg_find_mount("cgroup", v1_ctls[c], mnt, sizeof mnt) != 0 ||
            access(mnt, W_OK) != 0)
            return 0;
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s%s", mnt, v1_root);
        int i;
        for (i = 0; i < n && strcmp(dirs[i], d) != 0; i++) {}
        if (i == n) snprintf(dirs[n++], PATH_MAX, "%s", d);
    }
    return n;
}

/* Removes every cgroup under ROOT (killing what is in them), then ROOT. */
static int v1_teardown(void **state) {
    char dirs[5][PATH_MAX];
    int n = v1_roots(dirs);
    for (int i = 0; i < n; i++) {
        char names[16][CG_NAME_MAX], sub[PATH_MAX * 2];
        int k = cg_subdirs(dirs[i], names, 0, 16);
        for (int j = 0; j < k; j++) {
            snprintf(sub, sizeof sub, "%s/%s", dirs[i], names[j]);
            for (int t = 0; t < 100 && access(sub, F_OK) == 0 && rmdir(sub) != 0; t++) {
                cg_kill_procs(sub);
                usleep(10000);
            }
        }
        rmdir(dirs[i]);
    }
    return 0;
}

static bool in_every(char dirs[5][PATH_MAX], int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!cg_exists(dirs[i], name)) return false;
    return true;
}

static bool in_none(char dirs[5][PATH_MAX], int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (cg_exists(dirs[i], name)) return false;
    return true;
}

static void test_cgroup_v1_real_pool(void **state) {
    char dirs[5][PATH_MAX], err[1024], reason[1024], buf[256], mem[PATH_MAX * 2];
    snprintf(v1_root, sizeof v1_root, "/sluice-unit-pool-%d", (int)getpid());
    int n = v1_roots(dirs);
    if (n == 0) skip();
    for (int i = 0; i < n; i++) assert_int_equal(mkdir(dirs[i], 0755), 0);
    agent_cgroup_config_t cfg = {.mode = "v1", .root = v1_root, .node = "n1",
                                 .pids_max = 77, .pool = 1};
    agent_cgroup_t *cg = NULL;
    assert_int_equal(agent_cgroup_open(&cfg, &cg, err, sizeof err), 0);
    assert_non_null(strstr(agent_cgroup_describe(cg), "1 spare task cgroup made ahead"));
    assert_true(agent_cgroup_housekeeping_due(cg));
    assert_int_equal(agent_cgroup_housekeep(cg, AGENT_CGROUP_POOL_MAX), 1);
    assert_false(agent_cgroup_housekeeping_due(cg));
    assert_true(in_every(dirs, n, "pool.1"));
    /* A leftover 9.0 of an earlier agent: the spare is renamed over it. */
    for (int i = 0; i < n; i++) {
        snprintf(mem, sizeof mem, "%s/9.0", dirs[i]);
        assert_int_equal(mkdir(mem, 0755), 0);
    }
    agent_cgroup_task_t ct;
    assert_int_equal(agent_cgroup_task_create(cg, "9.0", 64 * MI, 500, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    assert_true(in_none(dirs, n, "pool.1"));
    assert_true(in_every(dirs, n, "9.0"));
    assert_int_equal(ct.nprocs, (size_t)n);
    assert_true(ct.oom_fd >= 0);
    assert_int_equal(ct.mem_limit, 64 * MI * 11 / 10 / 4096 * 4096);
    agent_cgroup_task_release(&ct);
    close(ct.oom_fd);
    char mnt[PATH_MAX];
    assert_int_equal(cg_find_mount("cgroup", "memory", mnt, sizeof mnt), 0);
    snprintf(mem, sizeof mem, "%s%s/9.0", mnt, v1_root);
    snprintf(buf, sizeof buf, "%lld\n", (long long)ct.mem_limit);
    char got[256];
    assert_true(cg_read(mem, "memory.limit_in_bytes", got, sizeof got) > 0);
    assert_string_equal(got, buf);
    assert_true(agent_cgroup_housekeeping_due(cg));
    /* The outcome: no OOM, a peak, the limit read when not known. */
    agent_cgroup_stats_t st = {.mem_limit = 0};
    assert_int_equal(agent_cgroup_task_outcome(cg, "9.0", &st), 0);
    assert_int_equal(st.oom_kills, 0);
    assert_true(st.mem_peak >= 0);
    assert_int_equal(st.mem_limit, ct.mem_limit);
    /* Housekeeping: the queued removal first, then a spare. */
    agent_cgroup_task_remove_later(cg, "9.0");
    assert_true(in_every(dirs, n, "9.0"));
    assert_int_equal(agent_cgroup_housekeep(cg, 1), 1);
    assert_true(in_none(dirs, n, "9.0"));
    assert_false(in_every(dirs, n, "pool.2"));
    assert_int_equal(agent_cgroup_housekeep(cg, 1), 1);
    assert_true(in_every(dirs, n, "pool.2"));
    assert_false(agent_cgroup_housekeeping_due(cg));
    /* A task launched again while its last cgroup waits for removal: the
     * old one goes at the launch, and housekeeping leaves the new one. */
    assert_int_equal(agent_cgroup_task_create(cg, "9.2", 64 * MI, 500, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    agent_cgroup_task_release(&ct);
    close(ct.oom_fd);
    agent_cgroup_task_remove_later(cg, "9.2");
    assert_int_equal(agent_cgroup_task_create(cg, "9.2", 32 * MI, 500, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    agent_cgroup_task_release(&ct);
    close(ct.oom_fd);
    assert_int_equal(agent_cgroup_housekeep(cg, AGENT_CGROUP_POOL_MAX), 1);  /* a spare */
    assert_true(in_every(dirs, n, "9.2"));
    assert_int_equal(agent_cgroup_task_remove(cg, "9.2"), 0);
    /* A claim whose limit cannot be written (a CPU quota above the
     * root's) fails naming the file and leaves neither name. */
    assert_true(in_every(dirs, n, "pool.3"));
    assert_int_equal(cg_find_mount("cgroup", "cpu", mnt, sizeof mnt), 0);
    snprintf(mem, sizeof mem, "%s%s", mnt, v1_root);
    cg_fs_t fs = {0};
    assert_int_equal(cg_write(&fs, mem, "cpu.cfs_quota_us", "50000"), 0);
    assert_int_equal(agent_cgroup_task_create(cg, "9.1", 64 * MI, 1000, NULL, 0, &ct, reason,
                                              sizeof reason), -1);
    assert_non_null(strstr(reason, "/9.1/cpu.cfs_quota_us: Invalid argument"));
    assert_true(in_none(dirs, n, "pool.3"));
    assert_true(in_none(dirs, n, "9.1"));
    /* Closing removes the spares and the queued removals. */
    assert_int_equal(agent_cgroup_housekeep(cg, 1), 1);
    assert_true(in_every(dirs, n, "pool.4"));
    assert_int_equal(cg_write(&fs, mem, "cpu.cfs_quota_us", "-1"), 0);
    assert_int_equal(agent_cgroup_task_create(cg, "9.3", 64 * MI, 1000, NULL, 0, &ct, reason,
                                              sizeof reason), 0);
    agent_cgroup_task_release(&ct);
    close(ct.oom_fd);
    agent_cgroup_task_remove_later(cg, "9.3");
    assert_int_equal(agent_cgroup_housekeep(cg, 0), 0);
    assert_true(in_every(dirs, n, "9.3"));
    agent_cgroup_close(cg);
    assert_true(in_none(dirs, n, "pool.4"));
    assert_true(in_none(dirs, n, "9.3"));
}

/* ---- the real cgroup2 mount ---- */

/* Cgroups a test made, removed (innermost first, after killing what is in
 * them) by the teardown, also when the test failed half-way. */
static char made[4][PATH_MAX * 2];
static int nmade;

static void made_add(const char *dir) {
    snprintf(made[nmade++], sizeof made[0], "%s", dir);
}

static int remove_made(void **state) {
    while (nmade > 0) {
        const char *dir = made[--nmade];
        for (int i = 0; i < 100 && access(dir, F_OK) == 0 && rmdir(dir) != 0; i++) {
            cg_kill_procs(dir);
            usleep(10000);
        }
    }
    return 0;
}

static const char *unified(void) {
    static const char *const cands[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};
    if (geteuid() != 0) return NULL;
    for (size_t i = 0; i < 2; i++)
        if (cg_is_cgroup2(cands[i]) && access(cands[i], W_OK) == 0) return cands[i];
    return NULL;
}

/* A child that joins dir and reports, in its exit status, whether it
 * could open each of the files (bit i: files[i] opened). */
static int probe_devices(const char *dir, const char *const *files, int n) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cg_fs_t fs = {0};
        if (cg_write(&fs, dir, "cgroup.procs", "0") != 0) _exit(255);
        int bits = 0;
        for (int i = 0; i < n; i++) {
            int fd = open(files[i], O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                bits |= 1 << i;
                close(fd);
            } else if (errno != EPERM) {
                bits |= 1 << (i + 4);   /* refused for another reason than the program */
            }
        }
        _exit(bits);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_cgroup_v2_real_bpf_device_program(void **state) {
    const char *mnt = unified();
    if (!mnt) {
        skip();
        return;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sluice-test-bpf-%d", mnt, (int)getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    made_add(dir);
    /* /dev/null (standard) and /dev/fuse (10:229, a stand-in GPU) on the
     * list; /dev/loop-control (10:237, another's GPU) not. */
    cg_dev_rule_t rules[2] = {{'c', 1, 3, "rwm"}, {'c', 10, 229, "rwm"}};
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = cg_bpf_attach_devices(dfd, rules, 2);
    close(dfd);
    if (rc == -EPERM) {
        /* A container without CAP_BPF / CAP_SYS_ADMIN: nothing to test. */
        skip();
        return;
    }
    assert_int_equal(rc, 0);
    static const char *const files[] = {"/dev/null", "/dev/fuse", "/dev/loop-control"};
    int bits = probe_devices(dir, files, 3);
    assert_int_equal(bits & 1, 1);        /* null: allowed */
    assert_int_equal(bits & 2, 2);        /* fuse: allowed */
    assert_int_equal(bits & 4, 0);        /* loop-control: denied ... */
    assert_int_equal(bits & 0x40, 0);     /* ... by the program (EPERM) */
}

/* v1 refuses a memory limit write with EINTR whenever a signal is pending
 * (the agent's SIGCHLDs during a turnover): cg_write tries it again, so a
 * stream of signals never fails a write. */
static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
    (void)sig;
    alarms++;
}

static void test_cgroup_v1_real_write_survives_signals(void **state) {
    (void)state;
    char dirs[5][PATH_MAX], file[PATH_MAX * 2];
    snprintf(v1_root, sizeof v1_root, "/sluice-unit-eintr-%d", (int)getpid());
    int n = v1_roots(dirs), mem = -1;
    if (n == 0) skip();
    for (int i = 0; i < n; i++) {
        assert_int_equal(mkdir(dirs[i], 0755), 0);
        snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dirs[i]);
        if (access(file, W_OK) == 0) mem = i;
    }
    if (mem < 0) skip();
    struct sigaction sa = {.sa_handler = on_alarm}, old; /* no SA_RESTART */
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    struct itimerval it = {{0, 20}, {0, 20}}, off = {{0, 0}, {0, 0}};
    assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
    cg_fs_t fs = {0};
    int failed = 0;
    for (int k = 0; k < 5000; k++)
        failed += cg_write_i64(&fs, dirs[mem], "memory.limit_in_bytes", (k & 1 ? 128 : 256) * MI) != 0;
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    assert_true(alarms > 100); /* the writes did run under a stream of signals */
    assert_int_equal(failed, 0);
}

static void test_cgroup_v2_real_remove_kills_a_straggler(void **state) {
    const char *mnt = unified();
    if (!mnt) {
        skip();
        return;
    }
    agent_cgroup_t *cg = calloc(1, sizeof *cg);
    assert_non_null(cg);
    cg->ops = &agent__cgroup_v2_ops;
    snprintf(cg->tasks, sizeof cg->tasks, "%s/sluice-test-kill-%d", mnt, (int)getpid());
    assert_int_equal(mkdir(cg->tasks, 0755), 0);
    made_add(cg->tasks);
    char dir[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s/5.1", cg->tasks);
    assert_int_equal(mkdir(dir, 0755), 0);
    made_add(dir);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cg_fs_t fs = {0};
        int ok = cg_write(&fs, dir, "cgroup.procs", "0") == 0;
        if (write(pipefd[1], ok ? "y" : "n", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    close(pipefd[1]);
    assert_int_equal(c, 'y');
    assert_true(cg->ops->busy(cg, "5.1"));
    assert_int_equal(rmdir(dir), -1);
    assert_int_equal(errno, EBUSY);
    /* Removal finds it busy, kills the straggler (cgroup.kill) and
     * removes the cgroup. */
    assert_int_equal(agent_cgroup_task_remove(cg, "5.1"), 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_int_equal(access(dir, F_OK), -1);
    agent_cgroup_close(cg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_v2_fake_tree_files_and_leaf_rule),
        cmocka_unit_test(test_cgroup_v2_no_limit_for_zero_requests),
        cmocka_unit_test(test_cgroup_v2_refusals_name_the_file),
        cmocka_unit_test(test_cgroup_none_enforces_nothing),
        cmocka_unit_test(test_cgroup_v2_no_pool_and_the_outcome),
        cmocka_unit_test_teardown(test_cgroup_v1_real_pool, v1_teardown),
        cmocka_unit_test_teardown(test_cgroup_v1_real_write_survives_signals, v1_teardown),
        cmocka_unit_test_teardown(test_cgroup_v2_real_bpf_device_program, remove_made),
        cmocka_unit_test_teardown(test_cgroup_v2_real_remove_kills_a_straggler, remove_made),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
