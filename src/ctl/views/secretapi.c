/*
 * secretapi.c - secrets and config maps in the API (secretapi.h). The body
 * of a POST is checked here field by field, each refusal naming its field;
 * the domain (domain/secrets.c) seals and stores it and keeps the limits.
 *
 * POST body: {"name": NAME, "type": "secret" | "config_map" (default
 * secret), "data": {KEY: "text"}, "binary_data": {KEY: "base64"}}.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "views/fielderr.h"
#include "views/secretapi.h"
#include "log.h"
#include "seal.h"
#include "secretref.h"
#include "sluice/error.h"
#include "sluice/sched.h"
#include "store/store.h"

typedef struct lister {
    ctl_t *c;
    ctl_buf_t *out;
    size_t n;
} lister_t;

static int key_row(void *ud, const ctl_store_secret_value_t *v) {
    lister_t *l = ud;
    if (l->n++) ctl_buf_putc(l->out, ',');
    ctl_buf_puts(l->out, "{\"key\":");
    ctl_buf_jstr(l->out, v->key);
    ctl_buf_puts(l->out, ",\"size\":");
    ctl_buf_i64(l->out, v->size);
    ctl_buf_putc(l->out, '}');
    return 0;
}

/* One object: its name, type, keys with sizes, creation time. */
static int secret_row(void *ud, const ctl_store_secret_t *s) {
    lister_t *l = ud;
    if (l->n++) ctl_buf_putc(l->out, ',');
    ctl_buf_puts(l->out, "{\"name\":");
    ctl_buf_jstr(l->out, s->name);
    ctl_buf_puts(l->out, ",\"type\":");
    ctl_buf_jstr(l->out, s->type);
    ctl_buf_puts(l->out, ",\"created\":");
    ctl_buf_time(l->out, s->created_us);
    ctl_buf_puts(l->out, ",\"keys\":[");
    lister_t keys = {l->c, l->out, 0};
    int rc = ctl_store_secret_values_read(l->c->store, s->tenant, s->name, key_row, &keys);
    ctl_buf_puts(l->out, "]}");
    return rc;
}

/* The values of body's data (text) and binary_data (base64) into kv (the
 * bytes kept in bufs, which the caller wipes and frees). 0 or a status. */
static int read_values(json_t *body, ctl_secret_kv_t **kv, size_t *n, unsigned char ***bufs,
                       ctl_field_err_t *fe) {
    json_t *data = json_object_get(body, "data"), *bin = json_object_get(body, "binary_data"), *x;
    if (data && !json_is_object(data))
        return ctl_field_errf(fe, 400, "invalid_field", "data",
                              "data: must be an object of keys to strings");
    if (bin && !json_is_object(bin))
        return ctl_field_errf(fe, 400, "invalid_field", "binary_data",
                              "binary_data: must be an object of keys to base64 strings");
    size_t cap = json_object_size(data) + json_object_size(bin);
    *kv = sl_xcalloc(cap ? cap : 1, sizeof **kv);
    *bufs = sl_xcalloc(cap ? cap : 1, sizeof **bufs);
    *n = 0;
    const char *k;
    json_object_foreach(data, k, x) {
        if (!sl_secret_key_ok(k))
            return ctl_field_errf(fe, 400, "invalid_field", "data",
                                  "data: \"%.64s\" is not a key: 1 to %d "
                                  "letters, digits, '-', '.' and '_'", k, SL_SECRET_KEY_MAX);
        if (!json_is_string(x))
            return ctl_field_errf(fe, 400, "invalid_field", "data",
                                  "data: the value of %s must be a string "
                                  "(binary values go in binary_data, base64)", k);
        (*kv)[(*n)++] = (ctl_secret_kv_t){k, (const unsigned char *)json_string_value(x),
                                          json_string_length(x)};
    }
    json_object_foreach(bin, k, x) {
        if (!sl_secret_key_ok(k))
            return ctl_field_errf(fe, 400, "invalid_field", "binary_data",
                                  "binary_data: \"%.64s\" is not a "
                                  "key: 1 to %d letters, digits, '-', '.' and '_'", k, SL_SECRET_KEY_MAX);
        if (json_object_get(data, k))
            return ctl_field_errf(fe, 400, "invalid_field", "binary_data",
                                  "binary_data: key %s is in data too; give each key once", k);
        size_t len;
        if (!json_is_string(x) || sl_base64_decode(json_string_value(x), &(*bufs)[*n], &len) != 0)
            return ctl_field_errf(fe, 400, "invalid_field", "binary_data",
                                  "binary_data: the value of %s must be base64 text", k);
        (*kv)[*n] = (ctl_secret_kv_t){k, (*bufs)[*n], len};
        (*n)++;
    }
    return 0;
}

static int create(ctl_t *c, const char *tenant, json_t *body, ctl_buf_t *out,
                  ctl_field_err_t *fe) {
    if (!json_is_object(body))
        return ctl_field_errf(fe, 400, "invalid_body", NULL,
                              "the body must be a JSON object: {\"name\", "
                              "\"type\", \"data\", \"binary_data\"}");
    const char *k;
    json_t *x;
    json_object_foreach(body, k, x) {
        if (strcmp(k, "name") && strcmp(k, "type") && strcmp(k, "data") && strcmp(k, "binary_data"))
            return ctl_field_errf(fe, 400, "unknown_field", k,
                                  "%.64s: unknown field (name, type, data, binary_data)", k);
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    if (!sl_secret_name_ok(name))
        return ctl_field_errf(fe, 400, "invalid_field", "name",
                              "name: required, 1 to %d lower-case "
                              "letters, digits, '-' and '.', starting and ending with a letter or digit",
                              SL_SECRET_NAME_MAX);
    json_t *t = json_object_get(body, "type");
    const char *type = t ? json_string_value(t) : "secret";
    if (type == NULL || (strcmp(type, "secret") != 0 && strcmp(type, "config_map") != 0))
        return ctl_field_errf(fe, 400, "invalid_field", "type",
                              "type: must be secret or config_map");
    ctl_secret_kv_t *kv = NULL;
    unsigned char **bufs = NULL;
    size_t n = 0;
    int st = read_values(body, &kv, &n, &bufs, fe);
    if (st == 0) {
        char err[320];
        int rc = ctl_secret_create(c, tenant, name, type, kv, n, err, sizeof err);
        if (rc != 0) {
            const char *field = strncmp(err, "data", 4) == 0 ? "data" : "name";
            st = rc == SL_EEXIST ? ctl_field_errf(fe, 409, "conflict", field, "%s", err)
                 : rc == SL_ERANGE ? ctl_field_errf(fe, 400, "invalid_field", field, "%s", err)
                                   : ctl_field_errf(fe, 500, "internal", NULL, "%s", err);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (bufs[i]) {
            sl_wipe(bufs[i], kv[i].len);
            sl_free(bufs[i]);
        }
    sl_free(bufs);
    sl_free(kv);
    if (st != 0)
        return st;
    lister_t l = {c, out, 0};
    ctl_store_secrets_read(c->store, tenant, name, secret_row, &l);
    ctl_buf_putc(out, '\n');
    return 201;
}

int ctl_api_secret(ctl_t *c, const char *method, const char *name, bool admin, int32_t tenant,
                   const char *qtenant, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe) {
    int32_t t = tenant;
    if (qtenant) {
        t = sl_sched_tenant_find(c->sched, qtenant);
        if (t < 0)
            return ctl_field_errf(fe, 400, "invalid_field", "tenant",
                                  "tenant: unknown tenant \"%.63s\"",
                                  qtenant);
        if (!admin && t != tenant)
            return ctl_field_errf(fe, 403, "forbidden", "tenant",
                                  "tenant: this token sees only its own tenant's secrets");
    }
    if (t < 0)
        return ctl_field_errf(fe, admin ? 400 : 403, admin ? "invalid_field" : "forbidden", "tenant",
                              admin ? "tenant: the admin token names the tenant whose secrets it means "
                              "with ?tenant=NAME" : "tenant: secrets belong to tenants; use a "
                              "tenant's token");
    const char *tn = sl_sched_tenant_name(c->sched, t);
    if (name && !sl_secret_name_ok(name))
        return ctl_field_errf(fe, 404, "not_found", "name",
                              "no secret or config map \"%.63s\"", name);
    if (strcmp(method, "POST") == 0) {
        if (name)
            return ctl_field_errf(fe, 405, "method_not_allowed", NULL,
                                  "POST /v1/secrets creates one; the name goes in the body");
        return create(c, tn, body, out, fe);
    }
    lister_t l = {c, out, 0};
    if (strcmp(method, "GET") == 0) {
        if (!name) {
            ctl_buf_puts(out, "{\"tenant\":");
            ctl_buf_jstr(out, tn);
            ctl_buf_puts(out, ",\"secrets\":[");
        }
        if (ctl_store_secrets_read(c->store, tn, name, secret_row, &l) < 0) {
            ctl_buf_fini(out);
            ctl_buf_init(out);
            return ctl_field_errf(fe, 500, "internal", NULL, "the store cannot be read: %s",
                                  ctl_store_errmsg(c->store));
        }
        if (name && l.n == 0)
            return ctl_field_errf(fe, 404, "not_found", "name",
                                  "no secret or config map \"%.63s\"", name);
        ctl_buf_puts(out, name ? "\n" : "]}\n");
        return 200;
    }
    if (strcmp(method, "DELETE") == 0 && name) {
        if (ctl_secret_delete(c, tn, name) != 0)
            return ctl_field_errf(fe, 404, "not_found", "name",
                                  "no secret or config map \"%.63s\"", name);
        ctl_buf_puts(out, "{\"deleted\":");
        ctl_buf_jstr(out, name);
        ctl_buf_puts(out, "}\n");
        return 200;
    }
    return ctl_field_errf(fe, 405, "method_not_allowed", NULL,
                          "DELETE names a secret: /v1/secrets/{name}");
}

void ctl_secret_warnings(ctl_t *c, ctl_job_t *j) {
    json_t *refs = json_object_get(j->spec, "secrets"), *warn = json_array();
    char err[256];
    if (refs)
        ctl_secrets_check(c, json_string_value(json_object_get(j->spec, "tenant")), refs, warn, err,
                          sizeof err);
    json_decref(j->warnings);
    j->warnings = NULL;
    if (json_array_size(warn) > 0) {
        size_t i;
        json_t *w;
        json_array_foreach(warn, i, w) sl_log(SL_LOG_INFO, "api", "job=%llu warning: %s",
                                              (unsigned long long)j->id, json_string_value(w));
        j->warnings = json_incref(warn);
    }
    json_decref(warn);
}
