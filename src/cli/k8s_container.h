/*
 * k8s_container.h - a Kubernetes pod's container and volumes as fields of
 * a Sluice submission (docs/jobspec.md, "Kubernetes"), for k8s_pod.c.
 *
 * A cli_k8s_t is one manifest's conversion in progress: the submission
 * being built, the problems and warnings (its cli_spec_t), and what is
 * known only once the whole manifest is read (the job's name and
 * namespace, which env[].valueFrom.fieldRef asks for).
 */
#ifndef SLUICE_CLI_K8S_CONTAINER_H
#define SLUICE_CLI_K8S_CONTAINER_H

#include <stdbool.h>

#include "specdoc.h"

typedef struct cli_k8s {
    cli_spec_t *s;
    json_t *job;          /* the submission being built (borrowed) */
    json_t *fieldrefs;    /* {VAR: "metadata.name" | "metadata.namespace"} (owned) */
    const char *tenant;   /* --tenant: the namespace when the manifest names none */
    bool kueue;           /* a kueue.x-k8s.io/queue-name label: Kueue would admit it */
    int gang;             /* 1: a pod group was asked for (Kueue, Volcano, coscheduling,
                           * sluice.io/gang: "true"); 0: sluice.io/gang: "false"; -1: neither */
} cli_k8s_t;

/* containers[0] at path: image, command + args, env, envFrom, resources,
 * volumeMounts (kept in *mounts, a new list, for cli_k8s_volumes),
 * workingDir, securityContext. */
int cli_k8s_container(cli_k8s_t *k, const char *path, yaml_node_t *c, json_t **mounts);

/* The pod's volumes (at path, may be NULL) and the container's mounts as
 * the submission's `volumes` and `secrets` (secret and configMap volumes). */
int cli_k8s_volumes(cli_k8s_t *k, const char *path, yaml_node_t *vols, json_t *mounts);

/* securityContext (a pod's or a container's) at path. */
int cli_k8s_security(cli_k8s_t *k, const char *path, yaml_node_t *sc, bool container);

#endif
