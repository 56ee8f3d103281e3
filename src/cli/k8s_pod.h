/*
 * k8s_pod.h - a Kubernetes object's metadata and a pod template as fields
 * of a Sluice submission (docs/jobspec.md, "Kubernetes"), for k8s.c and
 * k8s_kubeflow.c.
 */
#ifndef SLUICE_CLI_K8S_POD_H
#define SLUICE_CLI_K8S_POD_H

#include "k8s_container.h"

/* metadata at path: name and generateName (the job's name when top),
 * namespace, labels, annotations (Kueue's topology, the pod-group ones of
 * Kueue, Volcano, the coscheduling plugin and sluice.io/gang: k->gang). */
int cli_k8s_meta(cli_k8s_t *k, const char *path, yaml_node_t *meta, bool top);

/* A pod template {metadata, spec} at path. *restart gets the pod's
 * restartPolicy (NULL when absent; the caller checks it). */
int cli_k8s_template(cli_k8s_t *k, const char *path, yaml_node_t *tpl, const char **restart);

/* After the whole manifest: the env[].valueFrom.fieldRef variables get
 * the job's name and namespace. */
int cli_k8s_finish(cli_k8s_t *k);

#endif
