/*
 * volcfg.h - the operator's volumes: which node paths a job's volumes may
 * name (docs/config.md "volumes"), and a job's volumes resolved under them
 * for its launch (volcfg.c).
 *
 *     volumes:
 *       host_path_prefixes: [/datasets, /scratch]
 *       claims: {imagenet: /mnt/pvc/imagenet}
 *       nfs: {"nfs1:/export/data": /mnt/nfs1/data}
 *       csi:
 *         gcsfuse.csi.storage.gke.io:
 *           attribute: bucketName
 *           paths: {my-bucket: /mnt/gcs/my-bucket}
 *
 * A host_path must lie under a prefix; a pvc must be a claim listed here;
 * an nfs volume's server and path must be an export listed here or lie
 * below one (its node path then the same distance below the mapped
 * path); a csi volume's driver must be listed here, and the value of its
 * driver's identifying attribute (a bucket's name) one of its paths. Read from the config file by ctl_sitecfg_load (sitecfg.h).
 */
#ifndef SLUICE_CTL_VOLCFG_H
#define SLUICE_CTL_VOLCFG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "volume.h"
#include "yamldoc.h"

typedef struct ctl_vol_map {
    char *key;   /* a claim's name, or "SERVER:/EXPORT" */
    char *path;  /* its absolute node path */
} ctl_vol_map_t;

/* A CSI driver's volumes: the attribute that names one (bucketName) and
 * each name's node path (key: the attribute's value). */
typedef struct ctl_vol_csi {
    char *driver;
    char *attribute;
    ctl_vol_map_t *paths;
    size_t npaths;
} ctl_vol_csi_t;

/* Owns every string it holds; zeroed: no volume but empty_dir allowed. */
typedef struct ctl_vol_cfg {
    char **prefixes;
    size_t nprefixes;
    ctl_vol_map_t *claims;
    size_t nclaims;
    ctl_vol_map_t *nfs;
    size_t nnfs;
    ctl_vol_csi_t *csi;
    size_t ncsi;
} ctl_vol_cfg_t;

/* Frees what v holds and zeroes it; accepts a zeroed v. Can't fail. */
void ctl_volcfg_fini(ctl_vol_cfg_t *v);

/* Reads the volumes: section node (NULL or null: none) of the config file
 * path into v (zeroed). 0, or -1 with "FILE:LINE: message" in err (an
 * unknown key, a path that is not absolute or has a .. part, a claim,
 * export, driver or attribute value given twice, an export key that is
 * not SERVER:/PATH, a csi driver without attribute or paths). On failure
 * v holds what was read so far (fini it). */
int ctl_volcfg_load(ctl_vol_cfg_t *v, const sl_yaml_node_t *node, const char *path, char *err,
                    size_t errlen);

/*
 * Resolves vols (a spec's `volumes`, which passed sl_volumes_check) under
 * v into out[0..n) (n = its length; out may be NULL to check only): a
 * host_path under its longest matching prefix (base: the prefix; sub: the
 * rest, then the sub_path), a pvc, an nfs and a csi volume at their
 * mapped node paths (sub: the sub_path), an empty_dir of medium Memory a tmpfs of its
 * size_limit (none: mem_bytes, the task's memory, which its pages count
 * against), another empty_dir the job's directory of that volume. The
 * strings of out point into vols or into owned[i] (n pointers the caller
 * frees with sl_free; may be NULL only with out NULL). Every problem is
 * said, "volumes[I].KEY: message" joined by "; ". 0, or SL_EINVAL with
 * err. O(volumes x configured entries).
 */
int ctl_volcfg_resolve(const ctl_vol_cfg_t *v, json_t *vols, int64_t mem_bytes,
                       sl_proto_volume_t *out, char **owned, char *err, size_t errlen);

#endif
