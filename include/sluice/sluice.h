/* sluice.h - the whole public API of libsluice (the pure scheduling core). */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include "sluice/alloc.h"
#include "sluice/cluster.h"
#include "sluice/constraint.h"
#include "sluice/error.h"
#include "sluice/fair.h"
#include "sluice/hash.h"
#include "sluice/heap.h"
#include "sluice/job.h"
#include "sluice/list.h"
#include "sluice/ordmap.h"
#include "sluice/policy.h"
#include "sluice/preempt.h"
#include "sluice/resources.h"
#include "sluice/resv.h"
#include "sluice/rng.h"
#include "sluice/sched.h"
#include "sluice/topology.h"
#include "sluice/version.h"
#include "sluice/workload.h"

#endif
