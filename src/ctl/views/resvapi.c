/*
 * resvapi.c - advance reservations in the API (resvapi.h). The body of a
 * POST is checked here field by field, so that each refusal names its
 * field; the domain (reservations.c) and the core check the rest (nodes
 * free, windows that overlap), and their messages name their fields too.
 *
 * POST body: {"name":S?, "start":T|"now", "duration":SECONDS|"2h"|"90m",
 * or "end":T, and one of "nodes":[names]|"a,b", "node_count":N, "gpus":N,
 * and "tenants":[names]|"a,b"} with T in seconds since the epoch.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "views/fielderr.h"
#include "views/resvapi.h"
#include "jobspec.h"

static void write_resv(ctl_t *c, ctl_buf_t *b, const sl_resv_info_t *ri, int64_t now) {
    ctl_buf_puts(b, "{\"name\":");
    ctl_buf_jstr(b, ri->name);
    ctl_buf_puts(b, ",\"start\":");
    ctl_buf_time(b, ri->start_us);
    ctl_buf_puts(b, ",\"end\":");
    ctl_buf_time(b, ri->end_us);
    ctl_buf_puts(b, ",\"duration\":");
    ctl_buf_i64(b, (ri->end_us - ri->start_us) / 1000000);
    ctl_buf_puts(b, ",\"state\":");
    ctl_buf_jstr(b, now >= ri->start_us ? "active" : "waiting");
    ctl_buf_puts(b, ",\"nodes\":[");
    for (size_t i = 0; i < ri->nnodes; i++) {
        if (i) ctl_buf_putc(b, ',');
        ctl_buf_jstr(b, sl_cluster_node(c->cl, ri->nodes[i])->name);
    }
    ctl_buf_puts(b, "],\"gpus\":");
    ctl_buf_i64(b, ri->gpus);
    ctl_buf_puts(b, ",\"tenants\":[");
    for (size_t i = 0; i < ri->ntenants; i++) {
        if (i) ctl_buf_putc(b, ',');
        ctl_buf_jstr(b, sl_sched_tenant_name(c->sched, ri->tenants[i]));
    }
    ctl_buf_puts(b, "]}");
}

void ctl_resv_write_node_json(ctl_t *c, ctl_buf_t *b, uint32_t id) {
    const sl_resv_info_t *best = NULL;
    sl_resv_info_t ri, keep;
    for (size_t i = 0; i < sl_sched_resv_count(c->sched); i++) {
        sl_sched_resv_at(c->sched, i, &ri);
        bool in = false;
        for (size_t k = 0; k < ri.nnodes && !in; k++) in = ri.nodes[k] == id;
        if (in && (!best || ri.start_us < best->start_us)) {
            keep = ri;
            best = &keep;
        }
    }
    ctl_buf_puts(b, ",\"reservation\":");
    if (!best) {
        ctl_buf_puts(b, "null");
        return;
    }
    ctl_buf_puts(b, "{\"name\":");
    ctl_buf_jstr(b, best->name);
    ctl_buf_puts(b, ",\"start\":");
    ctl_buf_time(b, best->start_us);
    ctl_buf_puts(b, ",\"end\":");
    ctl_buf_time(b, best->end_us);
    ctl_buf_puts(b, ",\"active\":");
    ctl_buf_puts(b, ctl_now_us() >= best->start_us ? "true" : "false");
    ctl_buf_putc(b, '}');
}

/* A list of names (array of strings, or one comma-separated string) into
 * v (pointers into the JSON or into buf). -1 if it is neither. */
static int names_of(json_t *j, const char **v, size_t max, size_t *n, char *buf, size_t buflen) {
    *n = 0;
    if (json_is_string(j)) {
        snprintf(buf, buflen, "%s", json_string_value(j));
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (*n == max) return -2;
            v[(*n)++] = t;
        }
        return 0;
    }
    if (!json_is_array(j)) return -1;
    size_t i;
    json_t *e;
    json_array_foreach(j, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0) return -1;
        if (*n == max) return -2;
        v[(*n)++] = json_string_value(e);
    }
    return 0;
}

/* A whole count field (absent: 0). -1 when it is not a positive integer. */
static int count_of(json_t *body, const char *key, int32_t *out) {
    json_t *v = json_object_get(body, key);
    *out = 0;
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000)
        return -1;
    *out = (int32_t)json_integer_value(v);
    return 0;
}

/* A time field: seconds since the epoch, or "now". -1 when neither. */
static int time_of(json_t *v, int64_t now, int64_t *out) {
    if (json_is_string(v) && strcmp(json_string_value(v), "now") == 0) {
        *out = now;
        return 0;
    }
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e11) return -1;
    *out = (int64_t)llround(json_number_value(v) * 1e6);
    return 0;
}

#define NAMES_MAX 4096

static int create(ctl_t *c, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe) {
    if (!json_is_object(body))
        return ctl_field_errf(fe, 400, "invalid_field", NULL, "the body must be a JSON object");
    static const char *const keys[] = {"name", "start", "duration", "end", "nodes", "node_count",
                                       "gpus", "tenants", NULL};
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++) ok = ok || strcmp(k, keys[i]) == 0;
        if (!ok)
            return ctl_field_errf(fe, 400, "unknown_field", k,
                                  "%.60s: unknown field (known: name, start, "
                                  "duration, end, nodes, node_count, gpus, tenants)", k);
    }
    int64_t now = ctl_now_us();
    ctl_resv_req_t rq = {0};
    v = json_object_get(body, "name");
    if (v && !json_is_null(v)) {
        char err[200];
        json_t *ok = json_is_string(v) ? sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_NAME],
                                                              json_string_value(v), err, sizeof err)
                                       : NULL;
        if (!ok || strchr(json_string_value(v), ',') || strchr(json_string_value(v), '/'))
            return ctl_field_errf(fe, 400, "invalid_field", "name", "name: must be 1..63 printable "
                       "characters without '/' or ','");
        json_decref(ok);
        rq.name = json_string_value(v);
    }
    v = json_object_get(body, "start");
    if (v == NULL) {
        rq.start_us = now;
    } else if (time_of(v, now, &rq.start_us) < 0) {
        return ctl_field_errf(fe, 400, "invalid_field", "start",
                              "start: must be a time in seconds since the epoch, or \"now\"");
    }
    json_t *dv = json_object_get(body, "duration"), *ev = json_object_get(body, "end");
    if ((dv == NULL) == (ev == NULL))
        return ctl_field_errf(fe, 400, "invalid_field", "duration",
                              "duration: give a duration or an end (exactly one)");
    if (dv) {
        int64_t secs = -1;
        if (json_is_integer(dv)) secs = json_integer_value(dv);
        else if (json_is_string(dv) && sl_jobspec_parse_duration(json_string_value(dv), &secs) != 0)
            secs = -1;
        if (secs <= 0 || secs > 366LL * 86400)
            return ctl_field_errf(fe, 400, "invalid_field", "duration",
                                  "duration: must be 1 s .. 366 days, in seconds or as 90m, 2h, 1d, 1h30m");
        rq.end_us = rq.start_us + secs * 1000000;
    } else if (time_of(ev, now, &rq.end_us) < 0 || rq.end_us <= rq.start_us) {
        return ctl_field_errf(fe, 400, "invalid_field", "end",
                              "end: must be a time in seconds since the epoch after the start");
    }
    const char *nodes[NAMES_MAX], *tenants[SL_RESV_TENANTS_MAX];
    char nbuf[NAMES_MAX * 8], tbuf[SL_RESV_TENANTS_MAX * SL_NAME_MAX];
    v = json_object_get(body, "nodes");
    if (v && !json_is_null(v)) {
        int r = names_of(v, nodes, NAMES_MAX, &rq.nnodes, nbuf, sizeof nbuf);
        if (r < 0 || rq.nnodes == 0)
            return ctl_field_errf(fe, 400, "invalid_field", "nodes",
                                  "nodes: must be a list of node names "
                                  "(or one comma-separated string)%s", r == -2 ? ", at most 4096" : "");
        rq.nodes = nodes;
    }
    if (count_of(body, "node_count", &rq.node_count) < 0)
        return ctl_field_errf(fe, 400, "invalid_field", "node_count",
                              "node_count: must be a whole number of nodes, at least 1");
    if (count_of(body, "gpus", &rq.gpus) < 0)
        return ctl_field_errf(fe, 400, "invalid_field", "gpus",
                              "gpus: must be a whole number of GPUs, at least 1");
    if ((rq.nnodes > 0) + (rq.node_count > 0) + (rq.gpus > 0) != 1)
        return ctl_field_errf(fe, 400, "invalid_field", "nodes",
                              "nodes: give exactly one of nodes, node_count or gpus");
    v = json_object_get(body, "tenants");
    int r = v ? names_of(v, tenants, SL_RESV_TENANTS_MAX, &rq.ntenants, tbuf, sizeof tbuf) : -1;
    if (r < 0 || rq.ntenants == 0)
        return ctl_field_errf(fe, 400, "invalid_field", "tenants",
                              "tenants: required, a list of 1..%d "
                              "tenant names (or one comma-separated string)", SL_RESV_TENANTS_MAX);
    rq.tenants = tenants;
    char field[64], err[320];
    int32_t id;
    int rc = ctl_resv_create(c, &rq, &id, field, sizeof field, err, sizeof err);
    if (rc != 0) {
        int st = rc == SL_EEXIST || rc == SL_EBUSY ? 409 : rc == SL_ENOSPC ? 409 : 400;
        return ctl_field_errf(fe, st, st == 409 ? "conflict" : "invalid_field", field[0] ? field : NULL,
                              "%s", err);
    }
    sl_resv_info_t ri;
    sl_sched_resv_get(c->sched, id, &ri);
    write_resv(c, out, &ri, now);
    ctl_buf_putc(out, '\n');
    return 201;
}

int ctl_api_resv(ctl_t *c, const char *method, const char *name, bool admin, json_t *body,
                 ctl_buf_t *out, ctl_field_err_t *fe) {
    int64_t now = ctl_now_us();
    if (strcmp(method, "GET") == 0) {
        sl_resv_info_t ri;
        if (name) {
            int id = sl_sched_resv_find(c->sched, name);
            if (id < 0)
                return ctl_field_errf(fe, 404, "not_found", "name",
                                      "no reservation \"%.63s\"", name);
            sl_sched_resv_get(c->sched, id, &ri);
            write_resv(c, out, &ri, now);
            ctl_buf_putc(out, '\n');
            return 200;
        }
        ctl_buf_puts(out, "{\"reservations\":[");
        for (size_t i = 0; i < sl_sched_resv_count(c->sched); i++) {
            sl_sched_resv_at(c->sched, i, &ri);
            if (i) ctl_buf_putc(out, ',');
            write_resv(c, out, &ri, now);
        }
        ctl_buf_puts(out, "]}\n");
        return 200;
    }
    if (!admin)
        return ctl_field_errf(fe, 403, "forbidden", NULL,
                              "only the admin token may create or delete reservations");
    if (strcmp(method, "POST") == 0) {
        if (name) return ctl_field_errf(fe, 405, "method_not_allowed", NULL,
                                        "POST /v1/reservations "
                                        "creates one; the name goes in the body");
        return create(c, body, out, fe);
    }
    if (!name)
        return ctl_field_errf(fe, 405, "method_not_allowed", NULL, "DELETE names a reservation: "
                   "/v1/reservations/{name}");
    int32_t njobs = 0;
    if (ctl_resv_delete(c, name, &njobs) != 0)
        return ctl_field_errf(fe, 404, "not_found", "name", "no reservation \"%.63s\"", name);
    ctl_buf_puts(out, "{\"deleted\":");
    ctl_buf_jstr(out, name);
    ctl_buf_puts(out, ",\"jobs_ended\":");
    ctl_buf_i64(out, njobs);
    ctl_buf_puts(out, "}\n");
    return 200;
}
