/*
 * http.c - the CLI's HTTP client: libcurl, one easy handle reused for every
 * request of a run (so `queue` and `logs --follow` keep one connection).
 *
 * Connection failures (refused, timeout, DNS) map to exit code 3 so that a
 * script can tell "the server said no" (1) from "no server" (3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli.h"

static CURL *handle;

typedef struct buf {
    char *p;
    size_t n;
} buf_t;

static size_t write_cb(char *data, size_t size, size_t nmemb, void *arg) {
    buf_t *b = arg;
    size_t len = size * nmemb;
    char *np = realloc(b->p, b->n + len + 1);
    if (!np) return 0;
    b->p = np;
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

int cli_http(cli_t *c, const char *method, const char *path, json_t *body, long *status,
             json_t **out, char **text) {
    int rc = CLI_EUNREACHABLE;
    char *url = NULL, *data = NULL, *auth = NULL;
    struct curl_slist *hdrs = NULL;
    buf_t b = {0};
    *out = NULL;
    if (text) *text = NULL;
    if (!handle) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        handle = curl_easy_init();
        if (!handle) {
            fprintf(stderr, "sluice: cannot initialise libcurl\n");
            return CLI_EUNREACHABLE;
        }
    }
    CURL *h = handle;
    curl_easy_reset(h);
    if (asprintf(&url, "%s%s", c->server, path) < 0) abort();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sluice/" CLI_VERSION);
    if (c->token && *c->token) {
        if (asprintf(&auth, "Authorization: Bearer %s", c->token) < 0) abort();
        hdrs = curl_slist_append(hdrs, auth);
    }
    hdrs = curl_slist_append(hdrs, "Expect:");
    if (body) {
        data = json_dumps(body, JSON_COMPACT);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, data);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(data));
    } else if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode e = curl_easy_perform(h);
    if (e != CURLE_OK) {
        if (!c->quiet_unreachable)
            fprintf(stderr, "sluice: cannot reach %s: %s\n", c->server, curl_easy_strerror(e));
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    if (b.n > 0) {
        json_error_t jerr;
        *out = json_loadb(b.p, b.n, 0, &jerr);
    }
    if (!*out && text && b.p) {
        *text = b.p;
        b.p = NULL;
    }
    rc = CLI_OK;
out:
    curl_slist_free_all(hdrs);
    free(url);
    free(data);
    free(auth);
    free(b.p);
    return rc;
}

int cli_call(cli_t *c, const char *method, const char *path, json_t *body, json_t **out) {
    long status = 0;
    char *text = NULL;
    int rc = cli_http(c, method, path, body, &status, out, &text);
    if (rc != CLI_OK) return rc;
    if (status >= 200 && status < 300) {
        free(text);
        return CLI_OK;
    }
    const char *msg = NULL;
    json_t *err = json_object_get(*out, "error");
    if (json_is_object(err)) msg = json_string_value(json_object_get(err, "message"));
    else if (json_is_string(err)) msg = json_string_value(err);
    if (c->json && *out) {
        cli_print_json(*out);
    } else if (msg) {
        fprintf(stderr, "sluice %s: %s (HTTP %ld)\n", c->cmd->name, msg, status);
    } else {
        fprintf(stderr, "sluice %s: server answered HTTP %ld%s%.200s\n", c->cmd->name, status,
                text ? ": " : "", text ? text : "");
    }
    if (status == 401 && !c->token)
        fprintf(stderr, "sluice: no token: pass --token, set SLUICE_TOKEN, or run `sluice up` here\n");
    free(text);
    json_decref(*out);
    *out = NULL;
    return CLI_ESERVER;
}

void cli_http_cleanup(void) {
    if (handle) {
        curl_easy_cleanup(handle);
        handle = NULL;
        curl_global_cleanup();
    }
}
