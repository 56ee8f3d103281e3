/*
 * volcfg.c - the volumes: section of the config and a job's volumes
 * resolved under it (volcfg.h).
 *
 * The controller decides only by text, as it cannot see the nodes: a
 * host_path is matched against the prefixes at '/' boundaries (the spec's
 * check already refused ".." parts, so the text cannot climb out), and
 * what is below the matched prefix travels apart from it ("base" and
 * "sub" of the wire's volume), so that the agent can open the prefix and
 * walk the rest without following a symbolic link (src/agent/volumes.c):
 * a link a tenant planted below an allowed prefix is refused there.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cfgread.h"
#include "base/volcfg.h"
#include "quantity.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

static void maps_free(ctl_vol_map_t *m, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sl_free(m[i].key);
        sl_free(m[i].path);
    }
    sl_free(m);
}

void ctl_volcfg_fini(ctl_vol_cfg_t *v) {
    for (size_t i = 0; i < v->nprefixes; i++)
        sl_free(v->prefixes[i]);
    sl_free(v->prefixes);
    maps_free(v->claims, v->nclaims);
    maps_free(v->nfs, v->nnfs);
    for (size_t i = 0; i < v->ncsi; i++) {
        sl_free(v->csi[i].driver);
        sl_free(v->csi[i].attribute);
        maps_free(v->csi[i].paths, v->csi[i].npaths);
    }
    sl_free(v->csi);
    memset(v, 0, sizeof *v);
}

/* ---- the config ---- */

typedef ctl_cfg_rd_t rd_t; /* config.h: errors as PATH:LINE: message */

/* An absolute node path without . or .. parts ("/" allowed), its
 * trailing slashes dropped, as a new string; NULL when it is not one. */
static char *node_path(const sl_yaml_node_t *n) {
    if (n == NULL || n->kind != SL_YAML_SCALAR || n->value == NULL || n->value[0] != '/')
        return NULL;
    char *p = sl_xstrdup(n->value);
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        p[--len] = '\0';
    if (len > 1 && !sl_volume_rel_ok(p + 1)) {
        sl_free(p);
        return NULL;
    }
    return p;
}

/* What a map's keys are: a claim's name, SERVER:/EXPORT, or the value of
 * a CSI driver's attribute (any text without control characters). */
enum { MAP_CLAIMS, MAP_NFS, MAP_CSI };

static int load_map(rd_t *r, const sl_yaml_node_t *m, const char *what, int kind,
                    ctl_vol_map_t **out, size_t *nout) {
    static const char *const names[] = {"claim names", "\"SERVER:/EXPORT\"", "attribute values"};
    bool nfs = kind == MAP_NFS;
    if (sl_yaml_is_null(m))
        return 0;
    if (m->kind != SL_YAML_MAP)
        return ctl_cfg_fail(r, m, "volumes.%s must be a mapping of %s to node paths", what, names[kind]);
    *out = sl_xcalloc(m->n ? m->n : 1, sizeof **out);
    for (size_t i = 0; i < m->n; i++) {
        const sl_yaml_node_t *k = m->items[2 * i], *v = m->items[2 * i + 1];
        const char *key = k->value ? k->value : "";
        const char *colon = strchr(key, ':');
        if (key[0] == '\0' || (nfs && (colon == NULL || colon == key || colon[1] != '/')) ||
            (kind == MAP_CLAIMS && strchr(key, '/')))
            return ctl_cfg_fail(r, k, "volumes.%s: \"%s\" is not %s", what, key,
                        nfs ? "SERVER:/EXPORT (nfs1:/export/data)"
                            : kind == MAP_CLAIMS ? "a claim's name (no /)" : "a value");
        for (size_t j = 0; j < *nout; j++)
            if (strcmp((*out)[j].key, key) == 0)
                return ctl_cfg_fail(r, k, "volumes.%s: \"%s\" is given twice", what, key);
        char *p = node_path(v);
        if (p == NULL)
            return ctl_cfg_fail(r, v, "volumes.%s.%s: must be an absolute node path without . or .. "
                        "parts", what, key);
        (*out)[*nout].key = sl_xstrdup(key);
        (*out)[(*nout)++].path = p;
    }
    return 0;
}

/* volumes.csi: DRIVER -> {attribute: NAME, paths: {VALUE: /node/path}}. */
static int load_csi(rd_t *r, ctl_vol_cfg_t *v, const sl_yaml_node_t *m) {
    if (sl_yaml_is_null(m))
        return 0;
    if (m->kind != SL_YAML_MAP)
        return ctl_cfg_fail(r, m, "volumes.csi must be a mapping of CSI driver names to {attribute, paths}");
    v->csi = sl_xcalloc(m->n ? m->n : 1, sizeof *v->csi);
    for (size_t i = 0; i < m->n; i++) {
        const sl_yaml_node_t *k = m->items[2 * i], *d = m->items[2 * i + 1];
        const char *drv = k->value ? k->value : "";
        if (drv[0] == '\0')
            return ctl_cfg_fail(r, k, "volumes.csi: a driver's name is empty");
        for (size_t j = 0; j < v->ncsi; j++)
            if (strcmp(v->csi[j].driver, drv) == 0)
                return ctl_cfg_fail(r, k, "volumes.csi: \"%s\" is given twice", drv);
        if (d == NULL || d->kind != SL_YAML_MAP)
            return ctl_cfg_fail(r, d ? d : k, "volumes.csi.%s must be a mapping {attribute, paths}", drv);
        ctl_vol_csi_t *c = &v->csi[v->ncsi++];
        c->driver = sl_xstrdup(drv);
        const sl_yaml_node_t *paths = NULL;
        for (size_t j = 0; j < d->n; j++) {
            const sl_yaml_node_t *dk = d->items[2 * j], *dv = d->items[2 * j + 1];
            const char *key = dk->value ? dk->value : "";
            if (strcmp(key, "attribute") == 0) {
                if (dv->kind != SL_YAML_SCALAR || dv->value == NULL || dv->value[0] == '\0')
                    return ctl_cfg_fail(r, dv, "volumes.csi.%s.attribute must be the name of the volume "
                                "attribute that names a volume (bucketName)", drv);
                sl_free(c->attribute);
                c->attribute = sl_xstrdup(dv->value);
            } else if (strcmp(key, "paths") == 0) {
                paths = dv;
            } else {
                return ctl_cfg_fail(r, dk, "volumes.csi.%s: unknown key \"%s\" (known: attribute, paths)",
                            drv, key);
            }
        }
        if (c->attribute == NULL)
            return ctl_cfg_fail(r, d, "volumes.csi.%s: needs attribute (the volume attribute that names "
                        "a volume, bucketName)", drv);
        char what[320];
        snprintf(what, sizeof what, "csi.%s.paths", drv);
        if (paths == NULL || sl_yaml_is_null(paths))
            return ctl_cfg_fail(r, d, "volumes.%s: required (each volume's node path)", what);
        if (load_map(r, paths, what, MAP_CSI, &c->paths, &c->npaths) < 0)
            return -1;
    }
    return 0;
}

int ctl_volcfg_load(ctl_vol_cfg_t *v, const sl_yaml_node_t *node, const char *path, char *err,
                    size_t errlen) {
    rd_t r = {path, err, errlen};
    if (node == NULL || sl_yaml_is_null(node))
        return 0;
    if (node->kind != SL_YAML_MAP)
        return ctl_cfg_fail(&r, node, "volumes must be a mapping (host_path_prefixes, claims, nfs, csi)");
    for (size_t i = 0; i < node->n; i++) {
        const sl_yaml_node_t *k = node->items[2 * i], *val = node->items[2 * i + 1];
        const char *key = k->value ? k->value : "";
        if (strcmp(key, "host_path_prefixes") == 0) {
            if (sl_yaml_is_null(val))
                continue;
            if (val->kind != SL_YAML_SEQ)
                return ctl_cfg_fail(&r, val, "volumes.host_path_prefixes must be a sequence of absolute "
                            "paths");
            v->prefixes = sl_xcalloc(val->n ? val->n : 1, sizeof *v->prefixes);
            for (size_t j = 0; j < val->n; j++) {
                char *p = node_path(val->items[j]);
                if (p == NULL)
                    return ctl_cfg_fail(&r, val->items[j], "volumes.host_path_prefixes[%zu]: must be an "
                                "absolute path without . or .. parts", j);
                v->prefixes[v->nprefixes++] = p;
            }
        } else if (strcmp(key, "claims") == 0) {
            if (load_map(&r, val, "claims", MAP_CLAIMS, &v->claims, &v->nclaims) < 0)
                return -1;
        } else if (strcmp(key, "nfs") == 0) {
            if (load_map(&r, val, "nfs", MAP_NFS, &v->nfs, &v->nnfs) < 0)
                return -1;
        } else if (strcmp(key, "csi") == 0) {
            if (load_csi(&r, v, val) < 0)
                return -1;
        } else {
            return ctl_cfg_fail(&r, k, "volumes: unknown key \"%s\" (known: host_path_prefixes, claims, "
                        "nfs, csi)", key);
        }
    }
    return 0;
}

/* ---- a job's volumes ---- */

/* How far p lies below prefix at a '/' boundary: the rest after the
 * prefix and its slash ("" for p itself), or NULL when not below. */
static const char *below(const char *p, const char *prefix) {
    size_t n = strlen(prefix);
    if (n == 1 && prefix[0] == '/')
        return p + 1;
    if (strncmp(p, prefix, n) != 0 || (p[n] != '\0' && p[n] != '/'))
        return NULL;
    return p[n] ? p + n + 1 : p + n;
}

typedef sl_volume_errs_t errs_t; /* volume.h: volumes[I].KEY: message; ... */

/* The keys of a map joined by ", " into buf ("none" for none). */
static const char *keys_of(const ctl_vol_map_t *m, size_t n, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", m[i].key);
    if (n == 0)
        snprintf(buf, len, "none");
    return buf;
}

/* rest, then "/" and sub when both are given, as a new string (NULL when
 * neither is). */
static char *join_sub(const char *rest, const char *sub) {
    bool r = rest && rest[0], s = sub && sub[0];
    if (!r && !s)
        return NULL;
    size_t n = (r ? strlen(rest) : 0) + (s ? strlen(sub) : 0) + 2;
    char *out = sl_xmalloc(n);
    snprintf(out, n, "%s%s%s", r ? rest : "", r && s ? "/" : "", s ? sub : "");
    size_t len = strlen(out);
    while (len > 0 && out[len - 1] == '/')
        out[--len] = '\0';
    return out;
}

/* The node path of a csi volume x (checked by shape), or NULL with its
 * problem added: a driver the config lacks, an attribute it lacks, a
 * value not mapped. list: scratch for the names the message lists. */
static const char *resolve_csi(const ctl_vol_cfg_t *v, errs_t *e, size_t i, json_t *x, char *list,
                               size_t len) {
    const char *drv = json_string_value(json_object_get(x, "driver"));
    const ctl_vol_csi_t *c = NULL;
    size_t o = 0;
    list[0] = '\0';
    for (size_t d = 0; d < v->ncsi; d++) {
        if (strcmp(v->csi[d].driver, drv) == 0)
            c = &v->csi[d];
        if (o < len)
            o += (size_t)snprintf(list + o, len - o, "%s%s", d ? ", " : "", v->csi[d].driver);
    }
    if (c == NULL) {
        sl_volume_err_add(e, i, "csi.driver", "CSI driver %s is not one the cluster maps to its nodes "
            "(volumes.csi: %s)", drv, v->ncsi ? list : "none");
        return NULL;
    }
    const char *val = json_string_value(json_object_get(json_object_get(x, "attributes"),
                                                        c->attribute));
    if (val == NULL) {
        sl_volume_err_add(e, i, "csi.attributes",
                          "needs %s: the cluster maps %s's volumes by it", c->attribute, drv);
        return NULL;
    }
    for (size_t p = 0; p < c->npaths; p++)
        if (strcmp(c->paths[p].key, val) == 0)
            return c->paths[p].path;
    sl_volume_err_add(e, i, "csi",
                      "%s %s \"%s\" is not mapped to a node path (volumes.csi.%s.paths: %s)",
                      drv, c->attribute, val, drv, keys_of(c->paths, c->npaths, list, len));
    return NULL;
}

int ctl_volcfg_resolve(const ctl_vol_cfg_t *v, json_t *vols, int64_t mem_bytes,
                       sl_proto_volume_t *out, char **owned, char *err, size_t errlen) {
    errs_t e = {err, errlen, 0, 0, NULL};
    if (errlen)
        err[0] = '\0';
    size_t i;
    json_t *vol;
    char list[400];
    json_array_foreach(vols, i, vol) {
        const char *src = sl_volume_source(vol);
        const char *sub = json_string_value(json_object_get(vol, "sub_path"));
        json_t *x = json_object_get(vol, src ? src : "");
        sl_proto_volume_t r = {.path = json_string_value(json_object_get(vol, "path")),
                               .read_only = json_is_true(json_object_get(vol, "read_only")),
                               .index = (int32_t)i};
        const char *base = NULL, *rest = NULL;
        if (src == NULL)
            continue; /* the shape check refused it */
        if (strcmp(src, "empty_dir") == 0) {
            const char *medium = json_string_value(json_object_get(x, "medium"));
            json_t *lim = json_object_get(x, "size_limit");
            char t[64], qerr[128];
            int64_t b = 0;
            if (json_is_integer(lim))
                snprintf(t, sizeof t, "%lld", (long long)json_integer_value(lim));
            else
                snprintf(t, sizeof t, "%s", json_is_string(lim) ? json_string_value(lim) : "");
            if (t[0] && sl_qty_parse(t, SL_QTY_MEM, &b, qerr, sizeof qerr) < 0)
                b = 0;
            if (medium && strcmp(medium, "Memory") == 0) {
                r.kind = SL_VOLUME_TMPFS;
                r.size = b > 0 ? b : mem_bytes;
                if (sub && sub[0])
                    sl_volume_err_add(&e, i, "sub_path", "not with a medium Memory empty_dir (each task's "
                        "tmpfs is its own)");
                if (r.size <= 0)
                    sl_volume_err_add(&e, i, "empty_dir.size_limit", "required: the job asks for no memory");
            } else {
                r.kind = SL_VOLUME_EMPTY_DIR;
                r.size = b;
                rest = "";
            }
        } else if (strcmp(src, "host_path") == 0) {
            const char *hp = json_string_value(x);
            size_t best = 0;
            for (size_t p = 0; p < v->nprefixes; p++) {
                const char *b = below(hp, v->prefixes[p]);
                if (b && (base == NULL || strlen(v->prefixes[p]) > best)) {
                    base = v->prefixes[p];
                    rest = b;
                    best = strlen(base);
                }
            }
            if (base == NULL) {
                size_t o = 0;
                list[0] = '\0';
                for (size_t p = 0; p < v->nprefixes && o < sizeof list; p++)
                    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", p ? ", " : "",
                                          v->prefixes[p]);
                sl_volume_err_add(&e, i, "host_path", "%s is not under a path the cluster allows "
                    "(volumes.host_path_prefixes: %s)", hp, v->nprefixes ? list : "none");
            }
        } else if (strcmp(src, "pvc") == 0) {
            const char *claim = json_string_value(x);
            for (size_t c = 0; c < v->nclaims && !base; c++)
                if (strcmp(v->claims[c].key, claim) == 0)
                    base = v->claims[c].path;
            if (base == NULL)
                sl_volume_err_add(&e, i, "pvc", "unknown claim \"%s\" (volumes.claims: %s)", claim,
                    keys_of(v->claims, v->nclaims, list, sizeof list));
            rest = "";
        } else if (strcmp(src, "csi") == 0) {
            base = resolve_csi(v, &e, i, x, list, sizeof list);
            rest = "";
        } else {
            const char *server = json_string_value(json_object_get(x, "server"));
            const char *path = json_string_value(json_object_get(x, "path"));
            size_t best = 0, sl = strlen(server);
            for (size_t c = 0; c < v->nnfs; c++) {
                const char *k = v->nfs[c].key;
                const char *b = strncmp(k, server, sl) == 0 && k[sl] == ':' ? below(path, k + sl + 1)
                                                                            : NULL;
                if (b && (base == NULL || strlen(k) > best)) {
                    base = v->nfs[c].path;
                    rest = b;
                    best = strlen(k);
                }
            }
            if (base == NULL)
                sl_volume_err_add(&e, i, "nfs", "%s:%s is not an export the cluster maps to its nodes "
                    "(volumes.nfs: %s)", server, path, keys_of(v->nfs, v->nnfs, list, sizeof list));
        }
        if (out == NULL)
            continue;
        owned[i] = rest ? join_sub(rest, sub) : NULL;
        r.base = r.kind == SL_VOLUME_BIND ? base : NULL;
        r.sub = owned[i];
        if (r.kind == SL_VOLUME_BIND && base == NULL)
            r.error = "not allowed by the cluster's volumes config";
        out[i] = r;
    }
    return e.n ? SL_EINVAL : 0;
}
