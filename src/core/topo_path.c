/*
 * topo_path.c - a node's topology path in its labels, and level names.
 *
 * The path lives in the labels the node registered with, so that it needs
 * no field of its own in the protocol, the store or the cluster: the
 * cluster only counts the nodes that have one (sl_cluster_topo_count), so
 * that placement pays nothing for topology on a cluster without it.
 */
#include <string.h>

#include "sluice/error.h"
#include "sluice/topology.h"

static const char *const level_names[SL_TOPO_NLEVELS] = {"any", "host", "rack", "block"};

const char *sl_topo_level_name(int level) {
    return level >= 0 && level < SL_TOPO_NLEVELS ? level_names[level] : "?";
}

int sl_topo_level_parse(const char *s, int *out) {
    if (!s) return SL_EINVAL;
    for (int i = 0; i < SL_TOPO_NLEVELS; i++)
        if (strcmp(s, level_names[i]) == 0) {
            *out = i;
            return 0;
        }
    if (strcmp(s, "node") == 0) {
        *out = SL_TOPO_HOST;
        return 0;
    }
    return SL_EINVAL;
}

bool sl_topo_path(const char *labels, const char **path, size_t *len) {
    static const size_t klen = sizeof SL_TOPO_LABEL - 1;
    const char *p = labels;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > klen && memcmp(p, SL_TOPO_LABEL, klen) == 0 && p[klen] == '=') {
            if (n == klen + 1) return false;
            *path = p + klen + 1;
            *len = n - klen - 1;
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

bool sl_topo_path_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= 200 || s[0] == '/' || s[n - 1] == '/' || strstr(s, "//")) return false;
    for (const char *q = s; *q; q++) {
        char c = *q;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-' || c == '/';
        if (!ok) return false;
    }
    return true;
}

size_t sl_topo_block_len(const char *path, size_t len) {
    while (len > 0 && path[len - 1] != '/') len--;
    return len > 0 ? len - 1 : 0;
}
