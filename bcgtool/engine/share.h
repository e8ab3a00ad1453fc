/*
 * share.h - executables shared between segments of different sizes.
 *
 * A plan holds one variant per capture size, and each variant's segments
 * are captured alone. Where a segment of one size has the same topology
 * as one of another -- the same node types in the same order, each kernel
 * node launching the same function with the same launch attributes, the
 * same edges with their types and ports -- the two can run on one
 * executable, updated to the size asked for before its launch
 * (cudaGraphExecUpdate), instead of one executable each. Launch shapes,
 * shared memory and parameters may differ: the update carries them.
 *
 * One variant's segments never share with each other: a step launches
 * them all, and one executable updated back and forth between them would
 * cost an update a launch. A group takes one segment of each variant (the
 * pool's TAG names the variant being captured), so a variant with several
 * segments of one topology (the layers between breakpoints) has as many
 * groups of that key, taken in order by the next variant's.
 *
 * The key is never a name: two kernels of one name are different
 * functions when their identities differ, and a node whose attributes
 * could not all be read back (backend_capture.opaque) never shares, since
 * an update would not carry what was not seen.
 *
 * The pool here is plain C over backend_capture records, so that its
 * keying is tested without a GPU (t/unit/share.c); the backend does the
 * instantiation and updates (backend.h, graph_instantiate).
 */
#ifndef BCG_ENGINE_SHARE_H
#define BCG_ENGINE_SHARE_H

#include <stdint.h>

#include "backend.h"

/* What became of one segment's executable. */
enum share_status {
	SHARE_OFF = 0,       /* sharing was not asked for */
	SHARE_OWN,           /* asked, but nothing else has its topology (yet),
	                        or it cannot share (opaque): its own */
	SHARE_FIRST,         /* the first of a group: the executable is made
	                        from it */
	SHARE_JOINED,        /* runs on the executable of an earlier segment */
	SHARE_REFUSED        /* matched a group, but the backend refused the
	                        update: its own executable (the fallback) */
};

const char *share_status_name(int status);

/* One group: the key of its first segment and the executable. */
struct share_group {
	uint64_t                 hash;
	uint32_t                 nkeys;
	struct backend_node_key *keys;
	uint32_t                 nedges;
	struct plan_edge        *edges;
	struct backend_exec     *exec;      /* the pool's reference */
	uint32_t                 segments;  /* that run on it */
	uint32_t                 refusals;  /* segments of its key refused the
	                                       update (their own executables) */
	uint32_t                 first;     /* the caller's name for its first
	                                       segment (a plan segment index) */
	uint32_t                 tag;       /* the last variant that took it */
};

struct share_pool {
	uint32_t            ngroups;
	uint32_t            cap;
	struct share_group *groups;
	uint32_t            tag;       /* the variant being captured: set a new
	                                  one (share_next_variant) before each */
	uint32_t            opaque;    /* segments that could not share */
	char                opaque_why[96];  /* the first one's reason */
};

/* A new variant is being captured: groups may be taken again. */
void share_next_variant(struct share_pool *p);

/* Group GI is taken by the variant being captured. */
void share_take(struct share_pool *p, int gi);

/* Whether C can share at all: a segment with keys and none opaque. */
int share_capturable(const struct backend_capture *c);

/* Whether A and B have the same key (both capturable). */
int share_key_equal(const struct backend_capture *a, const struct backend_capture *b);

/* The hash of C's key: equal keys, equal hashes. */
uint64_t share_key_hash(const struct backend_capture *c);

/* The first group whose key is C's that the variant being captured has
 * not taken, or -1. */
int share_find(const struct share_pool *p, const struct backend_capture *c);

/* A new group with C's key (copied), no executable yet, taken by the
 * variant being captured; its index, or -1 when out of memory (or C
 * cannot share). */
int share_add(struct share_pool *p, const struct backend_capture *c);

/* Drop every group (and, when BE is not NULL, the pool's references to
 * the executables). */
void share_pool_release(struct share_pool *p, const struct backend_ops *be, struct backend *b);

#endif /* BCG_ENGINE_SHARE_H */
