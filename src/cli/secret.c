/*
 * secret.c - `sluice secret create|list|show|delete` (docs/cli.md,
 * docs/secrets.md): the tenant's secrets and config maps, in kubectl's
 * shapes (`kubectl create secret generic NAME --from-literal K=V
 * --from-file [K=]PATH`).
 *
 * A value can come from a file, so that it is never on a command line
 * (where `ps` and shell histories show it). File values go as base64
 * (binary_data), literals as text (data). Nothing the server answers
 * holds a value, and nothing here prints one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "seal.h"
#include "secretref.h"
#include "sluice/alloc.h"

/* The path of a request: base, plus ?tenant= when --tenant was given. */
static void path_of(cli_t *c, const char *name, char *buf, size_t len) {
    const char *t = cli_get(c, "tenant");
    snprintf(buf, len, "/v1/secrets%s%s%s%s", name ? "/" : "", name ? name : "",
             t ? "?tenant=" : "", t ? t : "");
}

static void size_text(long long n, char *buf, size_t len) {
    if (n < 1024) snprintf(buf, len, "%lld bytes", n);
    else if (n < 1024 * 1024) snprintf(buf, len, "%.1f KiB", (double)n / 1024);
    else snprintf(buf, len, "%.1f MiB", (double)n / (1024 * 1024));
}

/* Reads a whole file (at most 16 MiB) into a new buffer. */
static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *b = sl_xmalloc(cap);
    size_t got;
    while ((got = fread(b + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            if (cap >= 16 * 1024 * 1024) break;
            cap *= 2;
            b = sl_xrealloc(b, cap);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        sl_free(b);
        return NULL;
    }
    *n = len;
    return b;
}

static int create(cli_t *c, const char *name) {
    if (!sl_secret_name_ok(name))
        return cli_usage_error(c, "\"%s\" is not a name: 1 to %d lower-case letters, digits, "
                               "'-' and '.', starting and ending with a letter or digit", name,
                               SL_SECRET_NAME_MAX);
    const char **lits = NULL, **files = NULL;
    int nl = cli_multi(c, "from-literal", &lits), nf = cli_multi(c, "from-file", &files);
    json_t *data = json_object(), *bin = json_object();
    int rc = CLI_OK;
    for (int i = 0; i < nl && rc == CLI_OK; i++) {
        const char *eq = strchr(lits[i], '=');
        char key[SL_SECRET_KEY_MAX + 1];
        if (eq == NULL || (size_t)(eq - lits[i]) > SL_SECRET_KEY_MAX) {
            rc = cli_usage_error(c, "--from-literal %s: give KEY=VALUE", lits[i]);
            break;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - lits[i]), lits[i]);
        if (!sl_secret_key_ok(key) || json_object_get(data, key))
            rc = cli_usage_error(c, "--from-literal: \"%s\" is not a key (letters, digits, "
                                 "'-', '.' and '_'), or is given twice", key);
        else
            json_object_set_new(data, key, json_string(eq + 1));
    }
    for (int i = 0; i < nf && rc == CLI_OK; i++) {
        const char *eq = strchr(files[i], '='), *path = eq ? eq + 1 : files[i];
        char key[SL_SECRET_KEY_MAX + 1];
        const char *base = strrchr(path, '/');
        if (eq) snprintf(key, sizeof key, "%.*s", (int)(eq - files[i]), files[i]);
        else snprintf(key, sizeof key, "%s", base ? base + 1 : path);
        if (!sl_secret_key_ok(key) || json_object_get(data, key) || json_object_get(bin, key)) {
            rc = cli_usage_error(c, "--from-file: \"%s\" is not a key (letters, digits, '-', "
                                 "'.' and '_'), or is given twice; give KEY=PATH", key);
            break;
        }
        size_t n = 0;
        unsigned char *v = read_file(path, &n);
        if (v == NULL) {
            rc = cli_usage_error(c, "--from-file: cannot read %s", path);
            break;
        }
        char *b64 = sl_base64_encode(v, n);
        sl_wipe(v, n);
        sl_free(v);
        json_object_set_new(bin, key, json_string(b64));
        sl_wipe(b64, strlen(b64));
        sl_free(b64);
    }
    if (rc != CLI_OK) {
        json_decref(data);
        json_decref(bin);
        return rc;
    }
    json_t *body = json_pack("{s:s, s:s, s:o, s:o}", "name", name, "type",
                             cli_has(c, "config-map") ? "config_map" : "secret", "data", data,
                             "binary_data", bin);
    char path[400];
    path_of(c, NULL, path, sizeof path);
    json_t *out = NULL;
    rc = cli_call(c, "POST", path, body, &out);
    json_decref(body);
    if (rc == CLI_OK) {
        if (c->json) cli_print_json(out);
        else printf("%s %s created (%zu keys)\n", cli_has(c, "config-map") ? "config map" :
                    "secret", name, json_array_size(json_object_get(out, "keys")));
    }
    json_decref(out);
    return rc;
}

static void print_keys(json_t *keys, const char *indent) {
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k) {
        char sz[32];
        size_text((long long)json_integer_value(json_object_get(k, "size")), sz, sizeof sz);
        printf("%s%-32s %s\n", indent, json_string_value(json_object_get(k, "key")), sz);
    }
}

static int list_or_show(cli_t *c, const char *name) {
    char path[400];
    path_of(c, name, path, sizeof path);
    json_t *out = NULL;
    int rc = cli_call(c, "GET", path, NULL, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
    } else if (name) {
        char at[64];
        cli_local_time(json_number_value(json_object_get(out, "created")), at, sizeof at);
        printf("name:     %s\ntype:     %s\ncreated:  %s\nkeys (values are never shown):\n",
               json_string_value(json_object_get(out, "name")),
               json_string_value(json_object_get(out, "type")), at);
        print_keys(json_object_get(out, "keys"), "  ");
    } else {
        json_t *a = json_object_get(out, "secrets"), *s;
        size_t i;
        if (json_array_size(a) == 0)
            printf("no secrets or config maps for tenant %s\n",
                   json_string_value(json_object_get(out, "tenant")));
        else
            printf("%-32s %-10s %5s %12s  %s\n", "NAME", "TYPE", "KEYS", "SIZE", "CREATED");
        json_array_foreach(a, i, s) {
            long long total = 0;
            size_t k;
            json_t *x;
            json_array_foreach(json_object_get(s, "keys"), k, x)
                total += json_integer_value(json_object_get(x, "size"));
            char at[64], sz[32];
            cli_local_time(json_number_value(json_object_get(s, "created")), at, sizeof at);
            size_text(total, sz, sizeof sz);
            printf("%-32s %-10s %5zu %12s  %s\n", json_string_value(json_object_get(s, "name")),
                   json_string_value(json_object_get(s, "type")),
                   json_array_size(json_object_get(s, "keys")), sz, at);
        }
    }
    json_decref(out);
    return CLI_OK;
}

static int delete_one(cli_t *c, const char *name) {
    char path[400];
    path_of(c, name, path, sizeof path);
    json_t *out = NULL;
    int rc = cli_call(c, "DELETE", path, NULL, &out);
    if (rc == CLI_OK && c->json) cli_print_json(out);
    else if (rc == CLI_OK) printf("%s deleted\n", name);
    json_decref(out);
    return rc;
}

int cli_cmd_secret(cli_t *c) {
    const char *sub = c->npos > 0 ? c->pos[0] : NULL;
    if (sub == NULL)
        return cli_usage_error(c, "give create NAME, list, show NAME or delete NAME");
    if (strcmp(sub, "list") == 0) {
        if (c->npos > 1) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[1]);
        return list_or_show(c, NULL);
    }
    if (strcmp(sub, "create") && strcmp(sub, "show") && strcmp(sub, "delete"))
        return cli_usage_error(c, "unknown subcommand \"%s\" (create, list, show, delete)", sub);
    if (c->npos != 2) return cli_usage_error(c, "%s: give one name", sub);
    if (sub[0] == 'c') return create(c, c->pos[1]);
    return sub[0] == 's' ? list_or_show(c, c->pos[1]) : delete_one(c, c->pos[1]);
}
