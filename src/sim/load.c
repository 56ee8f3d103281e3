/*
 * load.c - trace loaders: Alibaba GPU v2023, Philly, and Sluice's own CSV.
 *
 * Every loader maps its file's header to known columns by name (order does
 * not matter; an unknown or repeated column is an error, so nothing is
 * silently ignored), then converts each record into sim_node_t / sim_job_t.
 * A bad value stops the load with "FILE:LINE:COL: field \"x\": why".
 *
 * Formats (the README and docs/sim.md describe them for users):
 *  - Alibaba v2023 nodes `sn,cpu_milli,memory_mib,gpu,model`; pods
 *    `name,cpu_milli,memory_mib,num_gpu,gpu_milli` optionally followed by
 *    `gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`.
 *    num_gpu == 1 with gpu_milli < 1000 is a share of one GPU; gpu_spec
 *    "V100M16|V100M32" restricts the GPU models. Submit = creation_time,
 *    duration = deletion_time - scheduled_time (creation_time for pods
 *    never scheduled). Every pod belongs to tenant "default".
 *  - Philly jobs `timestamp,duration,num_gpus,gpu_time,cluster` (cluster is
 *    the tenant; submit = timestamp - earliest timestamp); machines either
 *    `machineId,number of GPUs,single GPU mem` (the official list) or
 *    `,machineId,number of GPUs` (Hu's revised list). Philly does not record
 *    CPUs or memory: machines get 8 CPUs and 64Gi per GPU (at least one
 *    GPU's worth) and jobs ask for none, so GPUs are the only constraint.
 *  - Sluice nodes `name,cpu,memory,gpus,gpu_model,gpu_memory,pool` and jobs
 *    `id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,
 *    pool,priority,time_limit` (+ optional `gpu_memory`, `min_tasks`, `nodes`,
 *    `tasks_per_node`, `exclusive`, and `array`: a row
 *    that is a job array, "0-99%8", expanded by arrays.c), quantities as
 *    users write them (sl_qty_parse); tenants `name,weight`.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"
#include "sim.h"

/* ------------------------------------------------------------ trace */

void sim_trace_init(sim_trace_t *t) {
    memset(t, 0, sizeof *t);
}

void sim_trace_fini(sim_trace_t *t) {
    for (size_t i = 0; i < t->nnodes; i++) {
        sl_free(t->nodes[i].name);
        sl_free(t->nodes[i].model);
        sl_free(t->nodes[i].pool);
        sl_free(t->nodes[i].topology);
    }
    for (size_t i = 0; i < t->njobs; i++) {
        sl_free(t->jobs[i].name);
        sl_free(t->jobs[i].models);
        sl_free(t->jobs[i].pool);
        sl_free(t->jobs[i].array);
    }
    for (size_t i = 0; i < t->ntenants; i++) sl_free(t->tenants[i]);
    sl_free(t->nodes);
    sl_free(t->jobs);
    sl_free(t->tenants);
    sl_free(t->weights);
    memset(t, 0, sizeof *t);
}

int32_t sim_tenant_intern(sim_trace_t *t, const char *name) {
    /* Tenants are few (tens): a linear scan beats a hash here. */
    for (size_t i = 0; i < t->ntenants; i++)
        if (strcmp(t->tenants[i], name) == 0) return (int32_t)i;
    if (t->ntenants == t->captenants) {
        t->captenants = t->captenants ? t->captenants * 2 : 8;
        t->tenants = sl_xrealloc(t->tenants, t->captenants * sizeof *t->tenants);
        t->weights = sl_xrealloc(t->weights, t->captenants * sizeof *t->weights);
    }
    t->tenants[t->ntenants] = sl_xstrdup(name);
    t->weights[t->ntenants] = 1;
    return (int32_t)t->ntenants++;
}

static sim_node_t *node_new(sim_trace_t *t) {
    if (t->nnodes == t->capnodes) {
        t->capnodes = t->capnodes ? t->capnodes * 2 : 256;
        t->nodes = sl_xrealloc(t->nodes, t->capnodes * sizeof *t->nodes);
    }
    sim_node_t *n = &t->nodes[t->nnodes++];
    memset(n, 0, sizeof *n);
    return n;
}

static sim_job_t *job_new(sim_trace_t *t) {
    if (t->njobs == t->capjobs) {
        t->capjobs = t->capjobs ? t->capjobs * 2 : 1024;
        t->jobs = sl_xrealloc(t->jobs, t->capjobs * sizeof *t->jobs);
    }
    sim_job_t *j = &t->jobs[t->njobs++];
    memset(j, 0, sizeof *j);
    j->ntasks = 1;
    return j;
}

int sim_format_parse(const char *s, sim_format_t *out) {
    if (strcmp(s, "alibaba-v2023") == 0 || strcmp(s, "alibaba") == 0) *out = SIM_FMT_ALIBABA;
    else if (strcmp(s, "philly") == 0) *out = SIM_FMT_PHILLY;
    else if (strcmp(s, "sluice") == 0) *out = SIM_FMT_SLUICE;
    else if (strcmp(s, "auto") == 0) *out = SIM_FMT_AUTO;
    else return SL_EINVAL;
    return 0;
}

const char *sim_format_name(sim_format_t f) {
    switch (f) {
    case SIM_FMT_ALIBABA: return "alibaba-v2023";
    case SIM_FMT_PHILLY: return "philly";
    case SIM_FMT_SLUICE: return "sluice";
    default: return "auto";
    }
}

/* ------------------------------------------------------------ a string set */

/* Borrowed strings in the core's hash table (sluice/hash.h) under their
 * FNV-1a hash, for duplicate names. A zeroed strset_t is empty. */
typedef struct strset {
    sl_hash_t h;
} strset_t;

/* Adds s; returns false if it was there already. O(1) expected. */
static bool strset_add(strset_t *st, const char *s) {
    uint64_t key = sl_hash_str(s);
    size_t it = 0;
    for (const char *o; (o = sl_hash_find_next(&st->h, key, &it));)
        if (strcmp(o, s) == 0) return false;
    sl_hash_add(&st->h, key, (void *)(uintptr_t)s); /* borrowed, never written */
    return true;
}

static void strset_free(strset_t *st) {
    sl_hash_fini(&st->h);
}

/* Appends j to the trace (which takes its strings) and records its name;
 * returns false if the name was already taken. */
static bool job_add_named(sim_trace_t *t, const sim_job_t *j, strset_t *names) {
    sim_job_t *nj = job_new(t);
    *nj = *j;
    nj->orig_gpus = nj->gpus;
    return strset_add(names, nj->name);
}

/* ------------------------------------------------------------ value parsing */

static int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
    if (!*s) return SL_EINVAL;
    const char *p = s;
    bool neg = false;
    if (*p == '-' || *p == '+') neg = (*p++ == '-');
    if (!isdigit((unsigned char)*p)) return SL_EINVAL;
    int64_t v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10) return SL_ERANGE;
        v = v * 10 + d;
    }
    /* Accept "3.0" and "3.000" (Philly and pandas write integers so). */
    if (*p == '.') {
        p++;
        while (*p == '0') p++;
    }
    if (*p) return SL_EINVAL;
    if (neg) v = -v;
    if (v < min || v > max) return SL_ERANGE;
    *out = v;
    return 0;
}

int sim_parse_seconds(const char *s, int64_t *out_us) {
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return SL_EINVAL;
    int64_t whole = 0, frac = 0;
    for (; isdigit((unsigned char)*p); p++) {
        if (whole > (INT64_MAX / 1000000 - 9) / 10) return SL_ERANGE;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        p++;
        int nd = 0;
        for (; isdigit((unsigned char)*p); p++, nd++) {
            if (nd < 6) frac = frac * 10 + (*p - '0');
            else if (*p != '0') return SL_ERANGE; /* finer than a microsecond */
        }
        for (; nd < 6; nd++) frac *= 10;
    }
    if (*p) return SL_EINVAL;
    *out_us = whole * 1000000 + frac;
    return 0;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    /* Howard Hinnant's algorithm: days since 1970-01-01 in the proleptic
     * Gregorian calendar. */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int sim_parse_datetime(const char *s, int64_t *out) {
    int y, mo, d, h, mi, se, n = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || s[n] ||
        n != 19)
        return SL_EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return SL_EINVAL;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

/* ------------------------------------------------------------ headers */

typedef struct colspec {
    const char *name;
    bool required;
} colspec_t;

/*
 * Maps the header record of c onto specs: idx[k] = field index of specs[k]
 * or -1. Unknown and repeated columns are errors, as are missing required
 * ones.
 */
static int header_map(sim_csv_t *c, const colspec_t *specs, size_t nspecs, int *idx, char *err,
                      size_t errlen) {
    for (size_t k = 0; k < nspecs; k++) idx[k] = -1;
    for (size_t i = 0; i < sim_csv_nfields(c); i++) {
        const char *h = sim_csv_field(c, i);
        size_t k;
        for (k = 0; k < nspecs; k++)
            if (strcmp(h, specs[k].name) == 0) break;
        if (k == nspecs) {
            char known[400] = "";
            size_t off = 0;
            for (size_t q = 0; q < nspecs && off < sizeof known; q++)
                off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", q ? "," : "",
                                        specs[q].name[0] ? specs[q].name : "\"\"");
            return sim_csv_error(c, i, NULL, err, errlen, "unknown column \"%s\" (known: %s)", h,
                                 known);
        }
        if (idx[k] >= 0)
            return sim_csv_error(c, i, NULL, err, errlen, "column \"%s\" appears twice", h);
        idx[k] = (int)i;
    }
    for (size_t k = 0; k < nspecs; k++)
        if (specs[k].required && idx[k] < 0)
            return sim_csv_error(c, sim_csv_nfields(c), NULL, err, errlen,
                                 "missing column \"%s\"", specs[k].name);
    return 0;
}

/* Checks the record has exactly the header's number of fields. */
static int check_width(sim_csv_t *c, size_t want, char *err, size_t errlen) {
    size_t got = sim_csv_nfields(c);
    if (got == want) return 0;
    return sim_csv_error(c, got < want ? got : want, NULL, err, errlen,
                         "expected %zu fields as in the header, found %zu", want, got);
}

static bool header_has(sim_csv_t *c, const char *name) {
    for (size_t i = 0; i < sim_csv_nfields(c); i++)
        if (strcmp(sim_csv_field(c, i), name) == 0) return true;
    return false;
}

static sim_format_t header_format(sim_csv_t *c, bool jobs) {
    if (jobs) {
        if (header_has(c, "num_gpu") && header_has(c, "gpu_milli")) return SIM_FMT_ALIBABA;
        if (header_has(c, "timestamp") && header_has(c, "num_gpus")) return SIM_FMT_PHILLY;
        if (header_has(c, "id") && header_has(c, "submit")) return SIM_FMT_SLUICE;
    } else {
        if (header_has(c, "sn") && header_has(c, "cpu_milli")) return SIM_FMT_ALIBABA;
        if (header_has(c, "machineId")) return SIM_FMT_PHILLY;
        if (header_has(c, "name") && header_has(c, "gpus")) return SIM_FMT_SLUICE;
    }
    return SIM_FMT_AUTO;
}

static const char *format_headers(bool jobs) {
    return jobs ? "alibaba-v2023 \"name,cpu_milli,memory_mib,num_gpu,gpu_milli,...\", philly "
                  "\"timestamp,duration,num_gpus,gpu_time,cluster\", sluice "
                  "\"id,tenant,submit,duration,...\""
                : "alibaba-v2023 \"sn,cpu_milli,memory_mib,gpu,model\", philly "
                  "\"machineId,number of GPUs,single GPU mem\", sluice "
                  "\"name,cpu,memory,gpus,gpu_model,gpu_memory,pool\"";
}

/* Opens path and reads its header; checks or guesses the format. */
static int open_with_header(const char *path, bool jobs, sim_format_t *fmt, sim_csv_t **out,
                            char *err, size_t errlen) {
    sim_csv_t *c = NULL;
    int rc = sim_csv_open(path, &c, err, errlen);
    if (rc < 0) return rc;
    rc = sim_csv_next(c, err, errlen);
    if (rc < 0) goto fail;
    if (rc == 0) {
        snprintf(err, errlen, "%s: empty file (expected a header line)", path);
        rc = SL_EINVAL;
        goto fail;
    }
    sim_format_t got = header_format(c, jobs);
    if (got == SIM_FMT_AUTO) {
        rc = sim_csv_error(c, 0, NULL, err, errlen, "unrecognised %s header (expected %s)",
                           jobs ? "jobs" : "nodes", format_headers(jobs));
        goto fail;
    }
    if (*fmt != SIM_FMT_AUTO && *fmt != got) {
        rc = sim_csv_error(c, 0, NULL, err, errlen, "header is in format %s, not %s",
                           sim_format_name(got), sim_format_name(*fmt));
        goto fail;
    }
    *fmt = got;
    *out = c;
    return 0;
fail:
    sim_csv_close(c);
    return rc;
}

int sim_guess_format(const char *path, bool jobs, sim_format_t *out, char *err, size_t errlen) {
    sim_csv_t *c = NULL;
    sim_format_t f = SIM_FMT_AUTO;
    int rc = open_with_header(path, jobs, &f, &c, err, errlen);
    sim_csv_close(c);
    if (rc == 0) *out = f;
    return rc;
}

/* ------------------------------------------------------------ field helpers */

typedef struct rowctx {
    sim_csv_t *c;
    const colspec_t *specs;
    const int *idx;
    char *err;
    size_t errlen;
} rowctx_t;

static const char *fld(const rowctx_t *r, int k) {
    return r->idx[k] >= 0 ? sim_csv_field(r->c, (size_t)r->idx[k]) : "";
}

static int ferr(const rowctx_t *r, int k, const char *fmt, const char *val) {
    return sim_csv_error(r->c, r->idx[k] >= 0 ? (size_t)r->idx[k] : 0, r->specs[k].name, r->err,
                         r->errlen, fmt, val);
}

static int get_int(const rowctx_t *r, int k, int64_t min, int64_t max, int64_t dflt, int64_t *out) {
    const char *s = fld(r, k);
    if (!*s) {
        if (r->specs[k].required) return ferr(r, k, "%sempty (a number is required)", "");
        *out = dflt;
        return 0;
    }
    int rc = parse_i64(s, min, max, out);
    if (rc == SL_ERANGE) {
        char msg[160];
        snprintf(msg, sizeof msg, "\"%s\" out of range %" PRId64 "..%" PRId64, s, min, max);
        return ferr(r, k, "%s", msg);
    }
    if (rc < 0) return ferr(r, k, "\"%s\" is not an integer", s);
    return 0;
}

static int get_qty(const rowctx_t *r, int k, sl_qty_kind_t kind, int64_t *out) {
    const char *s = fld(r, k);
    *out = 0;
    if (!*s) return 0;
    char msg[256];
    if (sl_qty_parse(s, kind, out, msg, sizeof msg) < 0) return ferr(r, k, "%s", msg);
    return 0;
}

static int get_seconds(const rowctx_t *r, int k, bool required, int64_t *out_us) {
    const char *s = fld(r, k);
    *out_us = 0;
    if (!*s) {
        if (required) return ferr(r, k, "%sempty (seconds are required)", "");
        return 0;
    }
    int rc = sim_parse_seconds(s, out_us);
    if (rc == SL_ERANGE) return ferr(r, k, "\"%s\": too large or finer than a microsecond", s);
    if (rc < 0) return ferr(r, k, "\"%s\" is not a non-negative number of seconds", s);
    return 0;
}

static int check_name(const rowctx_t *r, int k, const char *what) {
    const char *s = fld(r, k);
    if (!*s) return ferr(r, k, "empty %s", what);
    if (strlen(s) >= SL_NAME_MAX) return ferr(r, k, "\"%s\" is longer than 63 bytes", s);
    return 0;
}

/* GPU model list "A|B": non-empty names of at most 63 bytes. */
static int check_models(const rowctx_t *r, int k) {
    const char *s = fld(r, k);
    const char *p = s;
    while (*s) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == 0 || len >= SL_NAME_MAX)
            return ferr(r, k, "\"%s\": model names are 1..63 bytes separated by '|'", s);
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

/* ------------------------------------------------------------ nodes */

static int64_t alibaba_gpu_mem(const char *model) {
    /* Memory of the disclosed models; G1-G3 are undisclosed (0 = unknown). */
    static const struct {
        const char *m;
        int64_t gib;
    } tab[] = {{"V100M16", 16}, {"V100M32", 32}, {"P100", 16}, {"T4", 16}, {"A10", 24}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(model, tab[i].m) == 0) return tab[i].gib << 30;
    return 0;
}

int sim_load_nodes(sim_trace_t *t, const char *path, sim_format_t fmt, char *err, size_t errlen) {
    static const colspec_t ali[] = {{"sn", true}, {"cpu_milli", true}, {"memory_mib", true},
                                    {"gpu", true}, {"model", true}};
    static const colspec_t phi[] = {{"", false},
                                    {"machineId", true},
                                    {"number of GPUs", true},
                                    {"single GPU mem", false}};
    static const colspec_t slu[] = {{"name", true},       {"cpu", true},       {"memory", true},
                                    {"gpus", true},       {"gpu_model", false}, {"gpu_memory", false},
                                    {"pool", false},      {"topology", false}};
    sim_csv_t *c = NULL;
    strset_t names = {0};
    int idx[8];
    int rc = open_with_header(path, false, &fmt, &c, err, errlen);
    if (rc < 0) return rc;
    const colspec_t *specs = fmt == SIM_FMT_ALIBABA ? ali : fmt == SIM_FMT_PHILLY ? phi : slu;
    size_t nspecs = fmt == SIM_FMT_ALIBABA ? 5 : fmt == SIM_FMT_PHILLY ? 4 : 8;
    rc = header_map(c, specs, nspecs, idx, err, errlen);
    if (rc < 0) goto out;
    size_t width = sim_csv_nfields(c);
    size_t first = t->nnodes;
    rowctx_t r = {c, specs, idx, err, errlen};
    for (;;) {
        rc = sim_csv_next(c, err, errlen);
        if (rc < 0) goto out;
        if (rc == 0) break;
        if ((rc = check_width(c, width, err, errlen)) < 0) goto out;
        int64_t v;
        sim_node_t nd = {0};
        if (fmt == SIM_FMT_ALIBABA) {
            if ((rc = check_name(&r, 0, "node name")) < 0) goto out;
            if ((rc = get_int(&r, 1, 0, INT64_MAX / 2, 0, &nd.cpu_milli)) < 0) goto out;
            if ((rc = get_int(&r, 2, 0, INT64_MAX >> 21, 0, &v)) < 0) goto out;
            nd.mem_bytes = v << 20;
            if ((rc = get_int(&r, 3, 0, SL_MAX_GPUS_PER_NODE, 0, &v)) < 0) goto out;
            nd.gpus = (int32_t)v;
            const char *model = fld(&r, 4);
            if (nd.gpus > 0 && !*model) {
                rc = ferr(&r, 4, "%sempty for a node with GPUs", "");
                goto out;
            }
            if (strlen(model) >= SL_NAME_MAX) {
                rc = ferr(&r, 4, "\"%s\" is longer than 63 bytes", model);
                goto out;
            }
            nd.name = sl_xstrdup(fld(&r, 0));
            nd.model = nd.gpus > 0 ? sl_xstrdup(model) : NULL;
            nd.gpu_mem_bytes = nd.gpus > 0 ? alibaba_gpu_mem(model) : 0;
        } else if (fmt == SIM_FMT_PHILLY) {
            if ((rc = check_name(&r, 1, "machine id")) < 0) goto out;
            if ((rc = get_int(&r, 2, 0, SL_MAX_GPUS_PER_NODE, 0, &v)) < 0) goto out;
            nd.gpus = (int32_t)v;
            const char *gm = fld(&r, 3);
            char model[SL_NAME_MAX] = "philly";
            if (*gm) {
                /* "12GB": whole gigabytes, taken as GiB (a "12 GB" K80 has
                 * 12 GiB of memory). */
                int64_t gb;
                char num[32];
                size_t len = strlen(gm);
                if (len < 3 || len > 20 || strcmp(gm + len - 2, "GB") != 0) {
                    rc = ferr(&r, 3, "\"%s\": expected whole gigabytes such as \"12GB\"", gm);
                    goto out;
                }
                memcpy(num, gm, len - 2);
                num[len - 2] = '\0';
                if (parse_i64(num, 1, 1 << 20, &gb) < 0) {
                    rc = ferr(&r, 3, "\"%s\": expected whole gigabytes such as \"12GB\"", gm);
                    goto out;
                }
                nd.gpu_mem_bytes = gb << 30;
                snprintf(model, sizeof model, "philly-%s", gm);
            }
            int32_t per = nd.gpus > 0 ? nd.gpus : 1;
            nd.name = sl_xstrdup(fld(&r, 1));
            nd.cpu_milli = (int64_t)per * 8000;
            nd.mem_bytes = (int64_t)per * (64LL << 30);
            nd.model = nd.gpus > 0 ? sl_xstrdup(model) : NULL;
        } else {
            if ((rc = check_name(&r, 0, "node name")) < 0) goto out;
            if ((rc = get_qty(&r, 1, SL_QTY_CPU, &nd.cpu_milli)) < 0) goto out;
            if ((rc = get_qty(&r, 2, SL_QTY_MEM, &nd.mem_bytes)) < 0) goto out;
            if ((rc = get_int(&r, 3, 0, SL_MAX_GPUS_PER_NODE, 0, &v)) < 0) goto out;
            nd.gpus = (int32_t)v;
            const char *model = fld(&r, 4);
            if (nd.gpus > 0 && !*model) {
                rc = ferr(&r, 4, "%sempty for a node with GPUs", "");
                goto out;
            }
            if (nd.gpus == 0 && *model) {
                rc = ferr(&r, 4, "\"%s\" given for a node without GPUs", model);
                goto out;
            }
            if (strlen(model) >= SL_NAME_MAX) {
                rc = ferr(&r, 4, "\"%s\" is longer than 63 bytes", model);
                goto out;
            }
            if ((rc = get_qty(&r, 5, SL_QTY_MEM, &nd.gpu_mem_bytes)) < 0) goto out;
            if (strlen(fld(&r, 6)) >= SL_NAME_MAX) {
                rc = ferr(&r, 6, "\"%s\" is longer than 63 bytes", fld(&r, 6));
                goto out;
            }
            nd.name = sl_xstrdup(fld(&r, 0));
            nd.model = nd.gpus > 0 ? sl_xstrdup(model) : NULL;
            nd.pool = *fld(&r, 6) ? sl_xstrdup(fld(&r, 6)) : NULL;
            /* topology: a path as sluice-agent --topology takes it. */
            const char *tp = fld(&r, 7);
            if (*tp && !sl_topo_path_ok(tp)) {
                sl_free(nd.name);
                sl_free(nd.model);
                sl_free(nd.pool);
                rc = ferr(&r, 7, "\"%s\" is not a path of group names such as block1/rack3", tp);
                goto out;
            }
            nd.topology = *tp ? sl_xstrdup(tp) : NULL;
        }
        *node_new(t) = nd;
        if (!strset_add(&names, t->nodes[t->nnodes - 1].name)) {
            rc = sim_csv_error(c, (size_t)idx[fmt == SIM_FMT_PHILLY ? 1 : 0],
                               specs[fmt == SIM_FMT_PHILLY ? 1 : 0].name, err, errlen,
                               "node \"%s\" appears twice", nd.name);
            goto out;
        }
    }
    if (t->nnodes == first) {
        snprintf(err, errlen, "%s: no nodes", path);
        rc = SL_EINVAL;
        goto out;
    }
    rc = 0;
out:
    strset_free(&names);
    sim_csv_close(c);
    return rc;
}

/* ------------------------------------------------------------ jobs */

static int load_alibaba_jobs(sim_trace_t *t, sim_csv_t *c, char *err, size_t errlen) {
    static const colspec_t specs[] = {
        {"name", true},          {"cpu_milli", true},      {"memory_mib", true},
        {"num_gpu", true},       {"gpu_milli", true},      {"gpu_spec", false},
        {"qos", false},          {"pod_phase", false},     {"creation_time", false},
        {"deletion_time", false}, {"scheduled_time", false}};
    enum { NAME, CPU, MEM, NGPU, GMILLI, SPEC, QOS, PHASE, CREATE, DELETE, SCHED, NSPEC };
    int idx[NSPEC];
    int rc = header_map(c, specs, NSPEC, idx, err, errlen);
    if (rc < 0) return rc;
    size_t width = sim_csv_nfields(c);
    bool timed = idx[CREATE] >= 0 && idx[DELETE] >= 0;
    int32_t tenant = sim_tenant_intern(t, "default");
    strset_t names = {0};
    rowctx_t r = {c, specs, idx, err, errlen};
    for (;;) {
        rc = sim_csv_next(c, err, errlen);
        if (rc <= 0) break;
        if ((rc = check_width(c, width, err, errlen)) < 0) break;
        sim_job_t j = {0};
        int64_t v, ng, gm;
        j.ntasks = 1;
        j.tenant = tenant;
        if ((rc = check_name(&r, NAME, "pod name")) < 0) break;
        if ((rc = get_int(&r, CPU, 0, INT64_MAX / 2, 0, &j.cpu_milli)) < 0) break;
        if ((rc = get_int(&r, MEM, 0, INT64_MAX >> 21, 0, &v)) < 0) break;
        j.mem_bytes = v << 20;
        if ((rc = get_int(&r, NGPU, 0, SL_MAX_GPUS_PER_NODE, 0, &ng)) < 0) break;
        if ((rc = get_int(&r, GMILLI, 0, 1000, 0, &gm)) < 0) break;
        if (ng == 0 && gm != 0) {
            rc = ferr(&r, GMILLI, "\"%s\": a pod without GPUs (num_gpu 0) asks for gpu_milli",
                      fld(&r, GMILLI));
            break;
        }
        if (ng > 1 && gm != 1000) {
            rc = ferr(&r, GMILLI, "\"%s\": a pod of several GPUs must take them whole (1000)",
                      fld(&r, GMILLI));
            break;
        }
        if (ng >= 1 && gm == 0) {
            rc = ferr(&r, GMILLI, "\"%s\": a pod with GPUs asks for no GPU compute",
                      fld(&r, GMILLI));
            break;
        }
        if (ng == 1 && gm < 1000) {
            j.gpu_milli = (int32_t)gm;
        } else {
            j.gpus = (int32_t)ng;
        }
        if ((rc = check_models(&r, SPEC)) < 0) break;
        if (*fld(&r, SPEC) && ng == 0) {
            rc = ferr(&r, SPEC, "\"%s\": GPU models given for a pod without GPUs", fld(&r, SPEC));
            break;
        }
        if (timed) {
            int64_t cr, de, sc = -1;
            if ((rc = get_int(&r, CREATE, 0, INT64_MAX / 2000000, 0, &cr)) < 0) break;
            if (!*fld(&r, CREATE)) {
                rc = ferr(&r, CREATE, "%sempty", "");
                break;
            }
            if ((rc = get_int(&r, DELETE, 0, INT64_MAX / 2000000, 0, &de)) < 0) break;
            if (!*fld(&r, DELETE)) {
                rc = ferr(&r, DELETE, "%sempty", "");
                break;
            }
            if (idx[SCHED] >= 0 && *fld(&r, SCHED)) {
                if ((rc = get_int(&r, SCHED, 0, INT64_MAX / 2000000, 0, &sc)) < 0) break;
                if (sc < cr) {
                    rc = ferr(&r, SCHED, "\"%s\" is before creation_time", fld(&r, SCHED));
                    break;
                }
            }
            int64_t from = sc >= 0 ? sc : cr;
            if (de < from) {
                rc = ferr(&r, DELETE, "\"%s\" is before the pod was scheduled or created",
                          fld(&r, DELETE));
                break;
            }
            j.submit_us = cr * 1000000;
            j.duration_us = (de - from) * 1000000;
        }
        j.name = sl_xstrdup(fld(&r, NAME));
        j.models = *fld(&r, SPEC) ? sl_xstrdup(fld(&r, SPEC)) : NULL;
        if (!job_add_named(t, &j, &names)) {
            rc = ferr(&r, NAME, "pod \"%s\" appears twice", j.name);
            break;
        }
    }
    strset_free(&names);
    if (rc == 0) t->timed = timed;
    return rc;
}

static int load_philly_jobs(sim_trace_t *t, sim_csv_t *c, char *err, size_t errlen) {
    static const colspec_t specs[] = {{"timestamp", true}, {"duration", true}, {"num_gpus", true},
                                      {"gpu_time", false}, {"cluster", true}};
    enum { TS, DUR, NGPU, GTIME, CLUSTER, NSPEC };
    int idx[NSPEC];
    int rc = header_map(c, specs, NSPEC, idx, err, errlen);
    if (rc < 0) return rc;
    size_t width = sim_csv_nfields(c);
    size_t first = t->njobs;
    int64_t tmin = INT64_MAX;
    rowctx_t r = {c, specs, idx, err, errlen};
    for (;;) {
        rc = sim_csv_next(c, err, errlen);
        if (rc <= 0) break;
        if ((rc = check_width(c, width, err, errlen)) < 0) break;
        sim_job_t j = {0};
        int64_t ts, ng, gt;
        if (sim_parse_datetime(fld(&r, TS), &ts) < 0) {
            rc = ferr(&r, TS, "\"%s\": expected \"YYYY-MM-DD HH:MM:SS\"", fld(&r, TS));
            break;
        }
        if ((rc = get_seconds(&r, DUR, true, &j.duration_us)) < 0) break;
        if ((rc = get_int(&r, NGPU, 1, 1 << 20, 0, &ng)) < 0) break;
        if (idx[GTIME] >= 0 && (rc = get_seconds(&r, GTIME, false, &gt)) < 0) break;
        if ((rc = check_name(&r, CLUSTER, "virtual cluster")) < 0) break;
        char name[32];
        snprintf(name, sizeof name, "%zu", t->njobs - first + 1);
        j.name = sl_xstrdup(name);
        j.tenant = sim_tenant_intern(t, fld(&r, CLUSTER));
        j.submit_us = ts; /* seconds for now; shifted below */
        j.ntasks = 1;
        j.gpus = (int32_t)ng;
        j.orig_gpus = (int32_t)ng;
        if (ts < tmin) tmin = ts;
        *job_new(t) = j;
    }
    if (rc < 0) return rc;
    for (size_t i = first; i < t->njobs; i++) t->jobs[i].submit_us = (t->jobs[i].submit_us - tmin) * 1000000;
    t->timed = true;
    return 0;
}

static int load_sluice_jobs(sim_trace_t *t, sim_csv_t *c, char *err, size_t errlen) {
    static const colspec_t specs[] = {
        {"id", true},          {"tenant", false},   {"submit", true},     {"duration", true},
        {"tasks", false},      {"cpu", false},      {"memory", false},    {"gpus", false},
        {"gpu_share", false},  {"gpu_models", false}, {"pool", false},    {"priority", false},
        {"time_limit", false}, {"gpu_memory", false}, {"array", false}, {"min_tasks", false},
        {"topology_required", false}, {"topology_preferred", false}, {"nodes", false},
        {"tasks_per_node", false}, {"exclusive", false}};
    enum { ID, TENANT, SUBMIT, DUR, TASKS, CPU, MEM, GPUS, SHARE, MODELS, POOL, PRIO, LIMIT, GMEM,
           ARRAY, MINT, TOPO, TOPOPREF, NODES, TPN, EXCL, NSPEC };
    int idx[NSPEC];
    int rc = header_map(c, specs, NSPEC, idx, err, errlen);
    if (rc < 0) return rc;
    size_t width = sim_csv_nfields(c);
    strset_t names = {0};
    rowctx_t r = {c, specs, idx, err, errlen};
    for (;;) {
        rc = sim_csv_next(c, err, errlen);
        if (rc <= 0) break;
        if ((rc = check_width(c, width, err, errlen)) < 0) break;
        sim_job_t j = {0};
        int64_t v;
        if ((rc = check_name(&r, ID, "job id")) < 0) break;
        const char *tn = fld(&r, TENANT);
        if (strlen(tn) >= SL_NAME_MAX) {
            rc = ferr(&r, TENANT, "\"%s\" is longer than 63 bytes", tn);
            break;
        }
        if ((rc = get_seconds(&r, SUBMIT, true, &j.submit_us)) < 0) break;
        if ((rc = get_seconds(&r, DUR, true, &j.duration_us)) < 0) break;
        if ((rc = get_int(&r, TASKS, 1, SL_MAX_TASKS, 1, &v)) < 0) break;
        j.ntasks = (int32_t)v;
        if ((rc = get_int(&r, MINT, 0, SL_MAX_TASKS, 0, &v)) < 0) break;
        if (v > j.ntasks) {
            rc = ferr(&r, MINT, "\"%s\" is above tasks", fld(&r, MINT));
            break;
        }
        j.min_tasks = v == j.ntasks ? 0 : (int32_t)v; /* all tasks: a rigid gang */
        if ((rc = get_qty(&r, CPU, SL_QTY_CPU, &j.cpu_milli)) < 0) break;
        if ((rc = get_qty(&r, MEM, SL_QTY_MEM, &j.mem_bytes)) < 0) break;
        if ((rc = get_int(&r, GPUS, 0, SL_MAX_GPUS_PER_NODE, 0, &v)) < 0) break;
        j.gpus = (int32_t)v;
        if ((rc = get_qty(&r, SHARE, SL_QTY_GPU, &v)) < 0) break;
        if (v >= SL_GPU_MILLI) {
            rc = ferr(&r, SHARE, "\"%s\": a share is below one GPU (use gpus for whole GPUs)",
                      fld(&r, SHARE));
            break;
        }
        if (v > 0 && j.gpus > 0) {
            rc = ferr(&r, SHARE, "\"%s\": give either gpus or gpu_share, not both", fld(&r, SHARE));
            break;
        }
        j.gpu_milli = (int32_t)v;
        if ((rc = get_qty(&r, GMEM, SL_QTY_MEM, &j.gpu_mem_bytes)) < 0) break;
        if (j.gpu_mem_bytes > 0 && j.gpu_milli == 0) {
            rc = ferr(&r, GMEM, "\"%s\": gpu_memory goes with a gpu_share", fld(&r, GMEM));
            break;
        }
        if ((rc = check_models(&r, MODELS)) < 0) break;
        if (*fld(&r, MODELS) && j.gpus == 0 && j.gpu_milli == 0) {
            rc = ferr(&r, MODELS, "\"%s\": GPU models given for a job without GPUs", fld(&r, MODELS));
            break;
        }
        if (strlen(fld(&r, POOL)) >= SL_NAME_MAX) {
            rc = ferr(&r, POOL, "\"%s\" is longer than 63 bytes", fld(&r, POOL));
            break;
        }
        if ((rc = get_int(&r, PRIO, INT32_MIN, INT32_MAX, 0, &v)) < 0) break;
        j.priority = (int32_t)v;
        if ((rc = get_seconds(&r, LIMIT, false, &j.time_limit_us)) < 0) break;
        if (*fld(&r, LIMIT) && j.time_limit_us == 0) {
            rc = ferr(&r, LIMIT, "\"%s\": a time limit must be positive (leave empty for none)",
                      fld(&r, LIMIT));
            break;
        }
        int lv[2] = {0, 0}; /* topology_required, topology_preferred */
        for (int k = 0, col = TOPO; k < 2 && rc >= 0; k++, col = TOPOPREF)
            if (*fld(&r, col) && (sl_topo_level_parse(fld(&r, col), &lv[k]) < 0 || lv[k] == 0))
                rc = ferr(&r, col, "\"%s\" is not host, rack or block", fld(&r, col));
        if (rc < 0) break;
        j.topo_required = (int16_t)lv[0];
        j.topo_preferred = (int16_t)lv[1];
        if (sim_nodes_parse(fld(&r, NODES), &j.nodes_min, &j.nodes_max) < 0) {
            rc = ferr(&r, NODES, "\"%s\": expected N or min-max (Slurm's -N)", fld(&r, NODES));
            break;
        }
        if ((rc = get_int(&r, TPN, 0, SL_MAX_TASKS, 0, &v)) < 0) break;
        j.tasks_per_node = (int16_t)v;
        if ((rc = get_int(&r, EXCL, 0, 1, 0, &v)) < 0) break;
        j.exclusive = v == 1;
        j.name = sl_xstrdup(fld(&r, ID));
        j.tenant = sim_tenant_intern(t, *tn ? tn : "default");
        j.models = *fld(&r, MODELS) ? sl_xstrdup(fld(&r, MODELS)) : NULL;
        j.pool = *fld(&r, POOL) ? sl_xstrdup(fld(&r, POOL)) : NULL;
        j.array = *fld(&r, ARRAY) ? sl_xstrdup(fld(&r, ARRAY)) : NULL; /* arrays.c expands it */
        if (!job_add_named(t, &j, &names)) {
            rc = ferr(&r, ID, "job \"%s\" appears twice", j.name);
            break;
        }
    }
    strset_free(&names);
    if (rc == 0) t->timed = true;
    return rc;
}

int sim_load_jobs(sim_trace_t *t, const char *path, sim_format_t fmt, char *err, size_t errlen) {
    sim_csv_t *c = NULL;
    size_t first = t->njobs;
    int rc = open_with_header(path, true, &fmt, &c, err, errlen);
    if (rc < 0) return rc;
    t->format = fmt;
    if (fmt == SIM_FMT_ALIBABA) rc = load_alibaba_jobs(t, c, err, errlen);
    else if (fmt == SIM_FMT_PHILLY) rc = load_philly_jobs(t, c, err, errlen);
    else rc = load_sluice_jobs(t, c, err, errlen);
    if (rc == 0)
        rc = sim_trace_expand_arrays(t, first, err, errlen);
    if (rc == 0 && t->njobs == first) {
        snprintf(err, errlen, "%s: no jobs", path);
        rc = SL_EINVAL;
    }
    sim_csv_close(c);
    return rc;
}

int sim_load_tenants(sim_trace_t *t, const char *path, char *err, size_t errlen) {
    static const colspec_t specs[] = {{"name", true}, {"weight", true}};
    sim_csv_t *c = NULL;
    strset_t seen = {0};
    int idx[2];
    int rc = sim_csv_open(path, &c, err, errlen);
    if (rc < 0) return rc;
    rc = sim_csv_next(c, err, errlen);
    if (rc == 0) {
        snprintf(err, errlen, "%s: empty file (expected the header \"name,weight\")", path);
        rc = SL_EINVAL;
    }
    if (rc < 0) goto out;
    if ((rc = header_map(c, specs, 2, idx, err, errlen)) < 0) goto out;
    size_t width = sim_csv_nfields(c);
    rowctx_t r = {c, specs, idx, err, errlen};
    for (;;) {
        rc = sim_csv_next(c, err, errlen);
        if (rc <= 0) break;
        if ((rc = check_width(c, width, err, errlen)) < 0) break;
        if ((rc = check_name(&r, 0, "tenant name")) < 0) break;
        int64_t w;
        if ((rc = get_int(&r, 1, 1, 1000000, 1, &w)) < 0) break;
        if (!*fld(&r, 1)) {
            rc = ferr(&r, 1, "%sempty (a weight >= 1 is required)", "");
            break;
        }
        int32_t id = sim_tenant_intern(t, fld(&r, 0));
        if (!strset_add(&seen, t->tenants[id])) {
            rc = ferr(&r, 0, "tenant \"%s\" appears twice", fld(&r, 0));
            break;
        }
        t->weights[id] = (int32_t)w;
    }
out:
    strset_free(&seen);
    sim_csv_close(c);
    return rc;
}

int sim_philly_split(sim_trace_t *t, char *err, size_t errlen) {
    int32_t maxg = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].gpus > maxg) maxg = t->nodes[i].gpus;
    if (maxg == 0) {
        snprintf(err, errlen, "the machine list has no GPUs");
        return SL_EINVAL;
    }
    for (size_t i = 0; i < t->njobs; i++) {
        sim_job_t *j = &t->jobs[i];
        int32_t n = j->orig_gpus;
        if (n <= maxg) continue;
        int32_t g = maxg;
        while (n % g) g--;
        if (n / g > SL_MAX_TASKS) {
            snprintf(err, errlen, "job %s asks for %d GPUs, more than %d tasks of %d", j->name, n,
                     SL_MAX_TASKS, g);
            return SL_EINVAL;
        }
        j->gpus = g;
        j->ntasks = n / g;
        t->gangs_split++;
    }
    return 0;
}

int sim_load(sim_trace_t *t, const char *nodes, const char *jobs, const char *tenants,
             sim_format_t fmt, char *err, size_t errlen) {
    int rc = sim_load_nodes(t, nodes, fmt, err, errlen);
    if (rc < 0) return rc;
    if ((rc = sim_load_jobs(t, jobs, fmt, err, errlen)) < 0) return rc;
    if (t->format == SIM_FMT_PHILLY && (rc = sim_philly_split(t, err, errlen)) < 0) return rc;
    if (tenants && (rc = sim_load_tenants(t, tenants, err, errlen)) < 0) return rc;
    return 0;
}

/* ------------------------------------------------------------ to the core */

int sim_cluster_build(const sim_trace_t *t, sl_cluster_t **out, char *err, size_t errlen) {
    sl_cluster_t *cl = NULL;
    sl_cluster_create(&cl);
    for (size_t i = 0; i < t->nnodes; i++) {
        const sim_node_t *n = &t->nodes[i];
        sl_node_spec_t sp = {.name = n->name,
                             .cpu_milli = n->cpu_milli,
                             .mem_bytes = n->mem_bytes,
                             .gpus = n->gpus,
                             .gpu_model = n->model,
                             .gpu_mem_bytes = n->gpu_mem_bytes,
                             .pool = n->pool,
                             .labels = NULL};
        char labels[256];
        if (n->topology && !t->topology_off) {
            snprintf(labels, sizeof labels, "%s=%s", SL_TOPO_LABEL, n->topology);
            sp.labels = labels;
        }
        char msg[256] = "";
        int rc = sl_cluster_add_node(cl, &sp, NULL, msg, sizeof msg);
        if (rc < 0) {
            snprintf(err, errlen, "node %s: %s", n->name, msg[0] ? msg : sl_strerror(rc));
            sl_cluster_destroy(cl);
            return rc;
        }
    }
    *out = cl;
    return 0;
}

int sim_job_req(const sim_job_t *j, sl_cluster_t *cl, bool sharing, sl_task_req_t *req,
                char *err, size_t errlen) {
    sl_task_req_init(req);
    req->topo_required = j->topo_required;
    req->topo_preferred = j->topo_preferred;
    sim_nodes_req(j, req);
    req->cpu_milli = j->cpu_milli;
    req->mem_bytes = j->mem_bytes;
    if (j->gpus > 0) {
        req->gpus = j->gpus;
    } else if (j->gpu_milli > 0) {
        if (sharing) {
            req->gpu_milli = j->gpu_milli;
            req->gpu_mem_bytes = j->gpu_mem_bytes;
        } else {
            req->gpus = 1;
        }
    }
    if (j->models) {
        const char *p = j->models;
        for (;;) {
            const char *bar = strchr(p, '|');
            char name[SL_NAME_MAX];
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (len >= sizeof name) len = sizeof name - 1;
            memcpy(name, p, len);
            name[len] = '\0';
            int id = sl_cluster_model_intern(cl, name);
            if (id < 0) {
                snprintf(err, errlen, "job %s: GPU model \"%s\": %s", j->name, name,
                         sl_strerror(id));
                return id;
            }
            req->model_mask |= 1ULL << id;
            if (!bar) break;
            p = bar + 1;
        }
    }
    req->pool = -1;
    if (j->pool) {
        int id = sl_cluster_pool_intern(cl, j->pool);
        if (id < 0) {
            snprintf(err, errlen, "job %s: pool \"%s\": %s", j->name, j->pool, sl_strerror(id));
            return id;
        }
        req->pool = id;
    }
    char msg[256] = "";
    int rc = sl_task_req_check(req, msg, sizeof msg);
    if (rc < 0) {
        snprintf(err, errlen, "job %s: %s", j->name, msg);
        return rc;
    }
    return 0;
}

int64_t sim_job_gpu_milli(const sim_job_t *j) {
    int64_t per = j->gpus > 0 ? (int64_t)j->gpus * SL_GPU_MILLI : j->gpu_milli;
    return per * j->ntasks;
}
