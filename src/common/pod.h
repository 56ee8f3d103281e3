/*
 * pod.h - the job spec's `containers` (pod.c): several containers in each
 * of a job's tasks, as the containers of one Kubernetes pod
 * (docs/containers.md "Pods", docs/jobspec.md).
 *
 * In the spec, `containers` is a list of 1 to SL_POD_CONTAINERS_MAX
 * objects
 *
 *     {"name": "server", "image": "vllm/vllm-openai:v0.6.0",
 *      "command": ["vllm", "serve", "m"], "args": ["--port", "8000"],
 *      "env": {"K": "V"},
 *      "workdir": "/srv", "volumes": ["/results"], "gpus": 1,
 *      "role": "init" | "sidecar"}
 *
 * name and image required; command absent: the image's entrypoint and
 * command; args (only without command, as Kubernetes' args alone): the
 * image's entrypoint and these instead of its command; env the container's own variables (over the job's env);
 * volumes the paths of the job's `volumes` this container sees (absent:
 * every one); gpus how many of the task's GPUs this container sees (when
 * any container gives gpus, every container sees only its own, absent
 * being 0, and they add up to the job's gpus; when none does, each sees
 * them all); role (absent: one of the pod's containers) "init", a
 * Kubernetes init container, run to its end before the next container
 * starts (its failure fails the task), or "sidecar", a native sidecar
 * (an init container of restartPolicy Always), started before the next
 * and stopped (SIGTERM) once every other container has ended; the init
 * containers and sidecars come first. A job with `containers` has no
 * `image` or `command` of its own: every task runs all of them, together,
 * in one cgroup.
 */
#ifndef SLUICE_COMMON_POD_H
#define SLUICE_COMMON_POD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The most containers of one task. */
#define SL_POD_CONTAINERS_MAX 16
/* The longest container name (a Kubernetes DNS label). */
#define SL_POD_NAME_MAX 63

/*
 * Checks a spec's `containers` value v (not null) by shape: a list of 1
 * to SL_POD_CONTAINERS_MAX objects, each with a `name` (1 to 63 of a-z,
 * 0-9 and "-", not starting or ending with "-"; no two the same), an
 * `image` (1 to 1024 characters), and where given `command` or `args`
 * (not both; a non-empty list of strings), `env` (an object of valid variable names to strings),
 * `workdir` (an absolute path), `volumes` (a list of absolute paths, no
 * two the same), `gpus` (a whole number from 0 to 64), `role` ("init" or
 * "sidecar", none after a container without one, and at least one
 * container without one); no other key. Every
 * problem is said, each as "containers[I].KEY: message", joined by "; "
 * (cut to errlen). Returns 0, or SL_EINVAL with the messages in err.
 * Reads only; O(containers^2 + volumes^2).
 */
int sl_pod_check(json_t *v, char *err, size_t errlen);

/*
 * Checks containers (having passed sl_pod_check) against the rest of the
 * spec: each container's `volumes` path is the `path` of one of volumes
 * (the spec's `volumes`, NULL when it has none), and when any container
 * gives gpus, their sum is gpus (the job's). Messages as sl_pod_check's.
 * Returns 0 or SL_EINVAL. Reads only.
 */
int sl_pod_rules(json_t *containers, json_t *volumes, int64_t gpus, char *err, size_t errlen);

/* Whether container c (of a list that passed sl_pod_check) sees the
 * volume at path: its `volumes` lists it, or it has none. */
int sl_pod_sees(json_t *c, const char *path);

/* The first GPU (an offset among the task's) and the number of GPUs that
 * container i of cs sees, of a task with ngpus: i's own share, after
 * those of the containers before it, when any container gives gpus;
 * otherwise all of them (0 and ngpus). Can't fail: a share past ngpus is
 * cut to it. */
void sl_pod_gpus(json_t *cs, size_t i, size_t ngpus, size_t *first, size_t *n);

#endif
