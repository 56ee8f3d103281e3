/*
 * srunopt.c - srun's and salloc's command line (srunopt.h): one table of
 * options, each with its short name and whether it takes a value, then a
 * switch on the option's name that checks and stores the value.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/error.h"
#include "srunopt.h"

/* Every option taken: name, short name, takes a value. Accepted without
 * effect (docs/slurm.md): exact, exclusive, cpu-bind, cpu_bind,
 * unbuffered, verbose, wait, mem. */
static const struct {
    const char *name;
    char shortname;
    bool value;
} known[] = {
    {"ntasks", 'n', true}, {"nodes", 'N', true}, {"ntasks-per-node", 0, true},
    {"cpus-per-task", 'c', true}, {"gpus-per-task", 0, true}, {"label", 'l', false},
    {"export", 0, true}, {"kill-on-bad-exit", 'K', false}, {"output", 'o', true},
    {"error", 'e', true}, {"overlap", 0, false}, {"exact", 0, false}, {"exclusive", 0, false},
    {"mpi", 0, true}, {"job-name", 'J', true}, {"time", 't', true}, {"partition", 'p', true},
    {"account", 'A', true}, {"chdir", 'D', true}, {"nodelist", 'w', true}, {"jobid", 0, true},
    {"cpu-bind", 0, true}, {"cpu_bind", 0, true}, {"unbuffered", 'u', false}, {"quiet", 'Q', false},
    {"verbose", 'v', false}, {"wait", 'W', true}, {"mem", 0, true}, {"help", 'h', false},
    {"pty", 0, false},
};
#define NKNOWN (sizeof known / sizeof known[0])

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

static int count(const char *opt, const char *v, long long lo, long long *out, char *err, size_t errlen) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > 100000)
        return fail(err, errlen, "--%s=%s: must be a whole number from %lld to 100000", opt, v, lo);
    *out = n;
    return 0;
}

int sl_srun_time_parse(const char *v, long long *out) {
    long long d = 0, f[3] = {0, 0, 0};
    int nf = 0;
    const char *p = v, *dash = strchr(v, '-');
    char *end;
    if (dash) {
        d = strtoll(v, &end, 10);
        if (end != dash || end == v)
            return SL_EINVAL;
        p = dash + 1;
    }
    while (*p && nf < 3) {
        f[nf++] = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ':') || (*end == ':' && end[1] == '\0'))
            return SL_EINVAL;
        p = *end ? end + 1 : end;
    }
    if (nf == 0 || *p)
        return SL_EINVAL;
    *out = dash ? d * 86400 + f[0] * 3600 + f[1] * 60 + f[2]
           : nf == 1 ? f[0] * 60 : nf == 2 ? f[0] * 60 + f[1] : f[0] * 3600 + f[1] * 60 + f[2];
    return 0;
}

static int store(sl_srun_opts_t *o, const char *n, const char *val, char *err, size_t errlen) {
    if (!strcmp(n, "ntasks"))
        return count(n, val, 1, &o->ntasks, err, errlen);
    if (!strcmp(n, "nodes")) {
        if (strchr(val, '-'))
            return fail(err, errlen, "--nodes=%s: a range of nodes is not supported; give one number", val);
        return count(n, val, 1, &o->nodes, err, errlen);
    }
    if (!strcmp(n, "ntasks-per-node"))
        return count(n, val, 1, &o->per_node, err, errlen);
    if (!strcmp(n, "cpus-per-task"))
        return count(n, val, 1, &o->cpus, err, errlen);
    if (!strcmp(n, "gpus-per-task"))
        return count(n, strchr(val, ':') ? strrchr(val, ':') + 1 : val, 0, &o->gpus, err, errlen);
    if (!strcmp(n, "jobid"))
        return count(n, val, 1, &o->jobid, err, errlen);
    if (!strcmp(n, "time") && sl_srun_time_parse(val, &o->time_s) != 0)
        return fail(err, errlen, "--time=%s: not a time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)", val);
    if (!strcmp(n, "mpi") && strcmp(val, "none") && strcmp(val, "pmix") && strcmp(val, "list"))
        return fail(err, errlen, "--mpi=%s is not supported: none (the default) or pmix, which "
                    "OpenMPI's own launcher provides", val);
    if (!strcmp(n, "kill-on-bad-exit") && val && strcmp(val, "0") && strcmp(val, "1"))
        return fail(err, errlen, "--kill-on-bad-exit=%s: 0 or 1", val);
    const struct { const char *name; const char **dst; } strs[] = {
        {"output", &o->output}, {"error", &o->error}, {"export", &o->export_},
        {"job-name", &o->name}, {"partition", &o->pool}, {"account", &o->account},
        {"chdir", &o->chdir}, {"nodelist", &o->nodelist}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!strcmp(n, strs[i].name))
            *strs[i].dst = val;
    const struct { const char *name; bool *dst; } flags[] = {
        {"label", &o->label}, {"overlap", &o->overlap}, {"quiet", &o->quiet}, {"help", &o->help},
        {"pty", &o->pty}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strcmp(n, flags[i].name))
            *flags[i].dst = true;
    if (!strcmp(n, "kill-on-bad-exit"))
        o->kill_bad = val == NULL || strcmp(val, "0") != 0;
    return 0;
}

int sl_srun_opts_parse(const char *prog, int argc, char **argv, sl_srun_opts_t *o, char *err,
                       size_t errlen) {
    *o = (sl_srun_opts_t){0};
    int i = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i], *val = NULL;
        int k = -1;
        if (a[1] == '-') {
            size_t nl = strcspn(a + 2, "=");
            for (size_t q = 0; q < NKNOWN && k < 0; q++)
                if (strlen(known[q].name) == nl && strncmp(known[q].name, a + 2, nl) == 0)
                    k = (int)q;
            if (k < 0)
                return fail(err, errlen, "%.*s is not supported (see %s --help)", (int)(nl + 2), a, prog);
            if (a[2 + nl] == '=')
                val = a + 3 + nl;
        } else {
            for (size_t q = 0; q < NKNOWN && k < 0; q++)
                if (known[q].shortname == a[1])
                    k = (int)q;
            if (k < 0)
                return fail(err, errlen, "-%c is not supported (see %s --help)", a[1], prog);
            if (a[2])
                val = a + 2;
        }
        if (known[k].value && val == NULL) {
            if (i + 1 >= argc)
                return fail(err, errlen, "--%s needs a value", known[k].name);
            val = argv[++i];
        } else if (!known[k].value && val && strcmp(known[k].name, "kill-on-bad-exit") != 0) {
            return fail(err, errlen, "--%s takes no value", known[k].name);
        }
        int rc = store(o, known[k].name, val, err, errlen);
        if (rc != 0)
            return rc;
    }
    o->argv = argv + i;
    o->argc = argc - i;
    return 0;
}
