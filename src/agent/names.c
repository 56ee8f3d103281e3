/*
 * names.c - a task's names on its node (names.h). One place decides them,
 * so that the job directory, the log, the status file and the cgroup of a
 * task always agree, before and after an agent restart (state.json keeps
 * each task's instance, from which its names follow).
 */
#include <stdio.h>

#include "names.h"

void agent_job_name(const char *instance, uint64_t job, char *buf, size_t len) {
    if (instance != NULL && instance[0] != '\0')
        snprintf(buf, len, "%s.%llu", instance, (unsigned long long)job);
    else
        snprintf(buf, len, "%llu", (unsigned long long)job);
}

void agent_task_key(const char *instance, uint64_t job, int32_t task, char *buf, size_t len) {
    char name[AGENT_NAME_MAX];
    agent_job_name(instance, job, name, sizeof name);
    snprintf(buf, len, "%s.%d", name, (int)task);
}
