/*
 * specdoc.h - one YAML document of a spec file being turned into a
 * submission (spec.c, k8s.c, k8s_pod.c, k8s_kubeflow.c), and the helpers
 * they share to read its nodes.
 *
 * Problems are collected, not returned one at a time: every reader records
 * each problem it finds with the field's path (cli_spec_fail) and goes on
 * with the next field, so that one answer lists all of them. A reader
 * returns -1 when the subtree it read had a problem (already recorded),
 * 0 otherwise; callers use it only to skip what depends on that value.
 * Warnings (fields accepted that have no meaning here) are collected the
 * same way and printed by the caller; the job is still submitted.
 *
 * A YAML null (`args:`, `~`, `null`) is the field's absence, as Kubernetes
 * reads it: cli_spec_next skips such keys, so no reader sees them.
 */
#ifndef SLUICE_CLI_SPECDOC_H
#define SLUICE_CLI_SPECDOC_H

#include <stdbool.h>

#include <jansson.h>
#include <yaml.h>

#include "jobspec.h"

typedef struct cli_spec {
    yaml_document_t doc;
    json_t *errors;    /* strings "PATH: message", owned by the caller */
    json_t *warnings;  /* strings, owned by the caller */
} cli_spec_t;

/* Records "PATH: message" (path may be NULL or ""). Returns -1. */
int cli_spec_fail(cli_spec_t *s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records a warning "PATH: message". */
void cli_spec_warn(cli_spec_t *s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

yaml_node_t *cli_spec_node(cli_spec_t *s, int id);
/* The value of a scalar node, NULL for a mapping or a list. */
const char *cli_spec_scalar(yaml_node_t *n);
/* Whether n is YAML's null: a plain scalar "", "~", "null", "Null", "NULL". */
bool cli_spec_is_null(yaml_node_t *n);
/* "a mapping", "a list" or "a scalar". */
const char *cli_spec_kind(yaml_node_t *n);
/* 0 when n is of type t, else records "PATH: must be a mapping, not a list". */
int cli_spec_want(cli_spec_t *s, const char *path, yaml_node_t *n, yaml_node_type_t t);

/*
 * Iterates a mapping's keys, skipping null values: `*pr` starts NULL;
 * each call moves it to the next pair and sets *key (the key's text),
 * *val and path ("PARENT.KEY", len bytes). Returns 1 for a pair to read,
 * 0 at the end. A key that is not a scalar is recorded and skipped.
 */
int cli_spec_next(cli_spec_t *s, yaml_node_t *map, const char *parent, yaml_node_pair_t **pr,
                  const char **key, yaml_node_t **val, char *path, size_t len);
/* The number of items of a list node (0 for anything else). */
int cli_spec_len(yaml_node_t *n);
/* Item i of a list node. */
yaml_node_t *cli_spec_item(cli_spec_t *s, yaml_node_t *n, int i);

int cli_spec_string(cli_spec_t *s, const char *path, yaml_node_t *n, const char **out);
int cli_spec_int(cli_spec_t *s, const char *path, yaml_node_t *n, long long lo, long long hi,
                 long long *out);
/* true/false (also "True", "FALSE"). */
int cli_spec_bool(cli_spec_t *s, const char *path, yaml_node_t *n, bool *out);
/* A list of scalars appended to arr as strings. */
int cli_spec_strings(cli_spec_t *s, const char *path, yaml_node_t *n, json_t *arr);
/* A scalar as the JSON value of field f, checked by the job-spec table
 * (a new reference in *out). */
int cli_spec_field(cli_spec_t *s, const char *path, yaml_node_t *n, const sl_jobspec_field_t *f,
                   json_t **out);
/* A scalar as a whole number in field id's range. */
int cli_spec_field_int(cli_spec_t *s, const char *path, yaml_node_t *n, sl_jobspec_id_t id,
                       long long *out);
/* Appends item to the list field k of job (created when absent). */
void cli_spec_append(json_t *job, const char *k, json_t *item);
/* Appends text to the string field k of job, joined by sep. */
void cli_spec_append_text(json_t *job, const char *k, const char *sep, const char *text);

#endif
