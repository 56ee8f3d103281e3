/*
 * scancelf.c - scancel's filters (cli.h): -u/--user, -n/--name,
 * -t/--state and -p/--partition choose the jobs to cancel among the
 * pending and running ones (GET /v1/jobs a page at a time), and among the
 * job ids given when there are some, as Slurm's scancel does: a job is
 * cancelled when it passes every filter given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"


static const char *str(json_t *j, const char *k, const char *dflt) {
    const char *s = json_string_value(json_object_get(j, k));
    return s ? s : dflt;
}

/* Slurm's names of Sluice's two states a job can be cancelled in. */
static bool state_ok(const char *states, const char *st) {
    if (strcmp(st, "pending") == 0)
        return cli_listed(states, "PENDING") || cli_listed(states, "PD");
    if (strcmp(st, "running") == 0)
        return cli_listed(states, "RUNNING") || cli_listed(states, "R");
    return false;
}

int cli_scancel_check_states(const char *states) {
    static const char *const ok[] = {"PENDING", "PD", "RUNNING", "R", "SUSPENDED", "S", NULL};
    for (const char *p = states; *p;) {
        size_t l = strcspn(p, ",");
        bool found = false;
        for (int k = 0; ok[k] && !found; k++)
            found = strlen(ok[k]) == l && strncasecmp(ok[k], p, l) == 0;
        if (!found) {
            fprintf(stderr, "scancel: error: -t/--state: \"%.*s\" is not PENDING (PD), RUNNING "
                    "(R) or SUSPENDED (S)\n", (int)l, p);
            return CLI_EUSAGE;
        }
        p += l + (p[l] == ',');
    }
    return CLI_OK;
}

static bool keep(const cli_scancel_filter_t *f, json_t *j, char **ids, int nids) {
    char id[64];
    json_t *aid = json_object_get(j, "array_id");
    long long jid = (long long)json_integer_value(json_object_get(j, "id"));
    if (nids > 0) {
        bool named = false;
        snprintf(id, sizeof id, "%lld", jid);
        for (int k = 0; k < nids && !named; k++) {
            named = strcmp(ids[k], id) == 0;
            if (!named && json_is_integer(aid)) { /* A (the whole array) or A_I */
                char a[64], ai[96];
                snprintf(a, sizeof a, "%lld", (long long)json_integer_value(aid));
                snprintf(ai, sizeof ai, "%s_%lld", a,
                         (long long)json_integer_value(json_object_get(j, "array_index")));
                named = strcmp(ids[k], a) == 0 || strcmp(ids[k], ai) == 0;
            }
        }
        if (!named)
            return false;
    }
    if (f->users && !cli_listed(f->users, str(j, "tenant", "")))
        return false;
    if (f->names && !cli_listed(f->names, str(j, "name", "")))
        return false;
    if (f->parts && !cli_listed(f->parts, str(j, "pool", "default")))
        return false;
    if (f->states && !state_ok(f->states, str(j, "state", "")))
        return false;
    return true;
}

int cli_scancel_filtered(cli_t *c, const cli_scancel_filter_t *f, char **ids, int nids) {
    /* The matching ids first, then the cancels, so that the pages do not
     * move under the walk. */
    long long *hit = NULL;
    size_t nhit = 0, cap = 0;
    unsigned long long after = 0;
    int rc = CLI_OK;
    for (int pages = 0; pages < 1000; pages++) {
        char path[128];
        int at = snprintf(path, sizeof path, "/v1/jobs?limit=10000&state=pending,running");
        if (after)
            snprintf(path + at, sizeof path - (size_t)at, "&after=%llu", after);
        json_t *page = NULL;
        if ((rc = cli_call(c, "GET", path, NULL, &page)) != CLI_OK) {
            free(hit);
            return rc;
        }
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(page, "jobs"), i, j) {
            if (!keep(f, j, ids, nids))
                continue;
            if (nhit == cap) {
                cap = cap ? 2 * cap : 64;
                hit = realloc(hit, cap * sizeof *hit);
                if (hit == NULL)
                    abort();
            }
            hit[nhit++] = (long long)json_integer_value(json_object_get(j, "id"));
        }
        json_t *next = json_object_get(page, "next_after");
        unsigned long long nx = json_is_integer(next) ? (unsigned long long)json_integer_value(next) : 0;
        json_decref(page);
        if (nx == 0 || nx <= after)
            break;
        after = nx;
    }
    int out = CLI_OK;
    for (size_t k = 0; k < nhit; k++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/%lld", hit[k]);
        json_t *j = NULL;
        long st;
        if ((rc = cli_http(c, "DELETE", path, NULL, &st, &j, NULL)) != CLI_OK) {
            free(hit);
            return rc;
        }
        /* 409: it ended meanwhile, which a filter's scancel does not report. */
        if ((st < 200 || st >= 300) && st != 409 && st != 404) {
            fprintf(stderr, "scancel: error: Kill job error on job id %lld: %s\n", hit[k],
                    str(j, "message", "the server refused"));
            out = CLI_ESERVER;
        }
        json_decref(j);
    }
    free(hit);
    return out;
}
