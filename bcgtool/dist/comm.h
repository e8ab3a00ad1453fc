/*
 * dist/comm.h - one rank's communicator: what the collective op kinds
 * (all_reduce, all_gather) call, whatever carries the bytes.
 *
 * Two transports implement it:
 *  - host (dist/host-group.c): ranks are threads of one process; the
 *    collectives meet at a barrier and sum in rank order, in f32;
 *  - nccl (dist/nccl.c): ranks are processes, one per GPU; the collectives
 *    are NCCL's, ordered on the op's CUDA stream.
 * Every function returns 0, or -1 with one sentence in MSG naming the
 * rank, the collective and what went wrong.
 */
#ifndef BCG_DIST_COMM_H
#define BCG_DIST_COMM_H

#include <stddef.h>
#include <stdint.h>

struct dist_comm;

/* Where a rank's engine puts the operands of its collectives (the inputs
 * and outputs of all_reduce and all_gather): in its arena (default), or
 * in symmetric memory (sym_alloc below), which NCCL 2.27 and later runs
 * with its low-latency kernels. The values are the plan's (plan.h:
 * plan_dist.nccl_mem). */
enum dist_nccl_mem {
	DIST_NCCL_MEM_DEFAULT = 0,
	DIST_NCCL_MEM_SYMMETRIC = 1,
};
/* The first NCCL with symmetric memory windows (ncclGetVersion()). */
#define DIST_NCCL_SYMMETRIC_MIN 22700

struct dist_comm_ops {
	const char *name;            /* "host", "nccl" */
	/* BUF, COUNT elements of DTYPE (enum plan_dtype, a float), becomes
	 * the elementwise sum over the ranks of their BUF. STREAM: the
	 * cudaStream_t the launch is ordered on (NULL on the host). */
	int  (*all_reduce)(struct dist_comm *c, void *buf, uint64_t count, int dtype,
	                   void *stream, char *msg, size_t len);
	/* RECV, WORLD * COUNT elements, becomes every rank's SEND (COUNT
	 * elements) one after the other, rank 0's first. */
	int  (*all_gather)(struct dist_comm *c, const void *send, void *recv, uint64_t count,
	                   int dtype, void *stream, char *msg, size_t len);
	/* Returns once every rank has called it (host-side; no GPU work). */
	int  (*barrier)(struct dist_comm *c, char *msg, size_t len);
	/* Give up on the group: wake every rank blocked in a collective with
	 * an error (ncclCommAbort on NCCL). Safe from another thread. */
	void (*abort)(struct dist_comm *c);
	void (*destroy)(struct dist_comm *c);
	/* Whether a collective of this rank has been launched and is not
	 * known to have completed: 1 with *SINCE (dist_now() seconds) and
	 * its name in WHAT, else 0. The rank's watchdog asks it from its own
	 * thread. NULL: the transport keeps its own time (host). */
	int  (*pending)(struct dist_comm *c, double *since, char *what, size_t len);
	/* After work that holds collectives was launched on STREAM (a graph
	 * with captured collectives): the watchdog waits for STREAM's work
	 * so far under the name WHAT. NULL: nothing to do. */
	int  (*watch)(struct dist_comm *c, void *stream, const char *what, char *msg,
	              size_t len);
	/* Symmetric memory (--nccl-mem symmetric): *P gets BYTES of the
	 * rank's device memory from ncclMemAlloc, registered with the
	 * communicator as one window (NCCL_WIN_COLL_SYMMETRIC), so that
	 * NCCL's low-latency symmetric kernels run the collectives whose
	 * operands lie in it, at the same offset on every rank. Collective:
	 * every rank calls it, in the same order, with the same BYTES and
	 * LAYOUT (a hash of what the caller places there), which are checked
	 * across the ranks first. One window a communicator at a time.
	 * NULL: the transport has no such memory (host). */
	int  (*sym_alloc)(struct dist_comm *c, uint64_t bytes, uint64_t layout, void **p,
	                  char *msg, size_t len);
	/* The window deregistered (collective, as its registration; skipped
	 * once the communicator is aborted), then the memory freed. */
	void (*sym_free)(struct dist_comm *c, void *p);
};

/* Every transport's communicator begins with this. */
struct dist_comm {
	const struct dist_comm_ops *ops;
	int                         world;
	int                         rank;
	int                         device;     /* the CUDA device; -1 on host */
	int32_t                     nccl_version; /* ncclGetVersion(); 0 on host */
	int                         nccl_mem;   /* enum dist_nccl_mem: where the
	                                           engine puts the collectives'
	                                           operands (dist_opts.nccl_mem) */
	const char                 *current;    /* the op whose collective is in
	                                           progress ("o.3/all_reduce"),
	                                           for messages; NULL between */
};

static inline int dist_all_reduce(struct dist_comm *c, void *buf, uint64_t count, int dtype,
                                  void *stream, char *msg, size_t len)
{
	return c->ops->all_reduce(c, buf, count, dtype, stream, msg, len);
}

static inline int dist_all_gather(struct dist_comm *c, const void *send, void *recv,
                                  uint64_t count, int dtype, void *stream, char *msg,
                                  size_t len)
{
	return c->ops->all_gather(c, send, recv, count, dtype, stream, msg, len);
}

static inline int dist_barrier(struct dist_comm *c, char *msg, size_t len)
{
	return c->ops->barrier(c, msg, len);
}

static inline int dist_watch(struct dist_comm *c, void *stream, const char *what, char *msg,
                             size_t len)
{
	if (c == NULL || c->ops->watch == NULL)
		return 0;
	return c->ops->watch(c, stream, what, msg, len);
}

static inline void dist_comm_destroy(struct dist_comm *c)
{
	if (c != NULL)
		c->ops->destroy(c);
}

#endif /* BCG_DIST_COMM_H */
