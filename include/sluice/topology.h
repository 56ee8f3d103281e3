/*
 * topology.h - where nodes sit (blocks of racks), and gangs placed to span
 * the fewest of them.
 *
 * A node declares its place as a path of group names, outermost first,
 * in its labels: "topology=BLOCK/RACK" (sluice-agent --topology BLOCK/RACK
 * adds that label). The path's last element names the node's rack; the
 * path without it names its block; so "b1/r3" and "b2/r3" are different
 * racks, and a one-element path "r3" is a rack in the cluster's one
 * unnamed block. A node without the label is a rack and a block of its own.
 *
 * The levels a job can name, innermost first: host (one node), rack,
 * block. A job may require a level (its gang starts only inside one group
 * of that level, and waits otherwise) or prefer one; every gang that needs
 * more than one node is placed to span the fewest racks that can hold it,
 * then the fewest blocks (topology.c explains how).
 */
#ifndef SLUICE_TOPOLOGY_H
#define SLUICE_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/cluster.h"

/* The label key that holds a node's path. */
#define SL_TOPO_LABEL "topology"

/* Levels, as sl_task_req_t's topo_required / topo_preferred hold them. */
typedef enum sl_topo_level {
    SL_TOPO_ANY = 0,   /* no constraint */
    SL_TOPO_HOST = 1,  /* one node */
    SL_TOPO_RACK = 2,  /* one rack: nodes whose paths are equal */
    SL_TOPO_BLOCK = 3  /* one block: paths equal but for the last element */
} sl_topo_level_t;

#define SL_TOPO_NLEVELS 4

/* "any", "host", "rack", "block"; "?" for a bad level. Can't fail. */
const char *sl_topo_level_name(int level);

/* Parses a level's name as above ("node" is accepted for host). Returns 0,
 * or SL_EINVAL (nothing written) for another word. O(1). */
int sl_topo_level_parse(const char *s, int *out);

/*
 * The topology path in a node's labels ("k=v,k=v", as sl_node_spec_t
 * keeps them): true with *path pointing into labels and *len its length
 * (> 0) when a non-empty "topology=" label is present; false otherwise
 * (labels may be NULL). Pure; O(length of labels).
 */
bool sl_topo_path(const char *labels, const char **path, size_t *len);

/* Whether s is a path a node may declare: 1..199 bytes of group names
 * (letters, digits, '.', '_', '-') joined by single '/', nothing that would
 * break the labels' "k=v,k=v" form. Pure; O(length). */
bool sl_topo_path_ok(const char *s);

/* The length of the block part of a path (up to, not including, its last
 * '/'; 0 for a one-element path). O(len). */
size_t sl_topo_block_len(const char *path, size_t len);

/*
 * The number of distinct groups of `level` (SL_TOPO_HOST, _RACK or _BLOCK)
 * that n placements span; a node without topology is a group of its own.
 * For reports and tests. Can't fail; O(n^2 + labels), no allocation.
 */
int32_t sl_topo_groups_spanned(const sl_cluster_t *cl, const sl_place_t *pls, int32_t n,
                               int level);

#endif
