/*
 * k8s.h - Kubernetes manifests as Sluice submissions, for spec.c: a
 * batch/v1 Job (k8s.c) and a Kubeflow kubeflow.org/v1 PyTorchJob
 * (k8s_kubeflow.c). docs/jobspec.md, "Kubernetes", is the table of what
 * becomes what.
 *
 * Each reads the whole manifest under root (a mapping whose apiVersion and
 * kind spec.c has already checked), records every problem in k->s with
 * its path and goes on, and fills k->job. 0, or -1 when it recorded a
 * problem.
 */
#ifndef SLUICE_CLI_K8S_H
#define SLUICE_CLI_K8S_H

#include "k8s_pod.h"

int cli_k8s_job(cli_k8s_t *k, yaml_node_t *root);
int cli_k8s_pytorchjob(cli_k8s_t *k, yaml_node_t *root);
/* A Kubeflow MPIJob (mpi-operator's v2beta1 or v1): an allocation of the
 * Workers' nodes whose command is the Launcher's (docs/jobspec.md). */
int cli_k8s_mpijob(cli_k8s_t *k, yaml_node_t *root);

#endif
