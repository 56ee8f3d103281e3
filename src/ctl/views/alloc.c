/*
 * alloc.c - allocations (alloc.h): which task runs the batch step, the
 * step token, the API's URL for srun.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "domain/nodes.h"
#include "sluice/error.h"
#include "views/alloc.h"

bool ctl_job_is_allocation(const ctl_job_t *j) {
    return json_is_true(json_object_get(j->spec, "allocation"));
}

int32_t ctl_alloc_batch_task(ctl_t *c, const ctl_job_t *j) {
    int32_t best = 0;
    for (int32_t k = 1; k < j->ntasks; k++) {
        const char *a = ctl_node_name(c, j->tasks[k].node), *b = ctl_node_name(c, j->tasks[best].node);
        if (a && b && strcmp(a, b) < 0)
            best = k;
    }
    return best;
}

void ctl_alloc_tasks_per_node(ctl_t *c, const ctl_job_t *j, char *buf, size_t len) {
    const char *names[256];
    int32_t counts[256], nn = 0;
    for (int32_t k = 0; k < j->ntasks; k++) {
        const char *name = ctl_node_name(c, j->tasks[k].node);
        int32_t at = -1;
        for (int32_t i = 0; i < nn && at < 0; i++)
            if (strcmp(names[i], name ? name : "") == 0)
                at = i;
        if (at < 0 && nn < 256) {
            /* insertion in name order */
            at = nn++;
            while (at > 0 && strcmp(names[at - 1], name ? name : "") > 0) {
                names[at] = names[at - 1];
                counts[at] = counts[at - 1];
                at--;
            }
            names[at] = name ? name : "";
            counts[at] = 0;
        }
        if (at >= 0)
            counts[at]++;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < nn && n < len;) {
        int32_t e = i;
        while (e + 1 < nn && counts[e + 1] == counts[i])
            e++;
        n += (size_t)snprintf(buf + n, len - n, e > i ? "%s%d(x%d)" : "%s%d", n ? "," : "", counts[i],
                              e - i + 1);
        i = e + 1;
    }
}

int ctl_step_token(ctl_t *c, const ctl_job_t *j, char *out, size_t outlen) {
    static unsigned char random_key[32];
    static bool have_random;
    const char *ct = c->cfg.cluster_token;
    const unsigned char *key = (const unsigned char *)ct;
    int keylen = ct ? (int)strlen(ct) : 0;
    if (ct == NULL || *ct == '\0' || ctl_token_is_hashed(ct)) {
        if (!have_random && RAND_bytes(random_key, sizeof random_key) != 1)
            return SL_EIO;
        have_random = true;
        key = random_key;
        keylen = sizeof random_key;
    }
    char msg[96];
    int n = snprintf(msg, sizeof msg, "sluice-step:%llu:%lld", (unsigned long long)j->id,
                     (long long)j->start_us);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (outlen <= CTL_STEP_TOKEN_LEN ||
        HMAC(EVP_sha256(), key, keylen, (const unsigned char *)msg, (size_t)n, mac, &maclen) == NULL ||
        maclen != 32)
        return SL_EIO;
    memcpy(out, "step-", 5);
    for (unsigned i = 0; i < maclen; i++)
        snprintf(out + 5 + 2 * i, 3, "%02x", mac[i]);
    return 0;
}

const char *ctl_step_server(ctl_t *c, char *buf, size_t len) {
    snprintf(buf, len, "%s://%s", c->cfg.tls_cert ? "https" : "http",
             c->cfg.listen ? c->cfg.listen : "127.0.0.1:7070");
    return buf;
}
