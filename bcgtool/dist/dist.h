/*
 * dist/dist.h - running the ranks of a tensor-parallel command.
 *
 * A command that takes --tp N (or finds itself started by an external
 * launcher) hands its per-rank work to dist_run(): RANK_MAIN runs once per
 * rank with that rank's communicator, and dist_run returns the worst exit
 * status of the ranks (0, 1, 2, 3), after reporting any rank that failed.
 *
 *  - host backend: ranks are threads of this process (dist/host-group.c),
 *    sharing one host group;
 *  - cuda backend: ranks are processes, one per GPU (dist/launch.c). This
 *    process forks them before it touches CUDA; rank r uses device r;
 *    rank 0 makes the NCCL unique id and it travels to the others through
 *    pipes; each rank's stdout and stderr come back line by line, each
 *    line prefixed "[rank R] ", but for rank 0's stdout: the command's
 *    result (a table, JSON) as with one GPU. A rank that exits with an error, dies or
 *    stops answering for TIMEOUT seconds takes the others down: they abort
 *    their communicators and exit 3 naming the rank and the collective.
 *  - external launcher (RANK, WORLD_SIZE, LOCAL_RANK in the environment;
 *    the unique id through the file BCG_DIST_STORE): this process is one
 *    rank; dist_run runs RANK_MAIN once.
 */
#ifndef BCG_DIST_DIST_H
#define BCG_DIST_DIST_H

#include <stddef.h>

#include "comm.h"

enum dist_transport {
	DIST_HOST = 1,               /* threads, host collectives */
	DIST_NCCL = 2,               /* processes, NCCL */
};

struct dist_transport_ops;       /* dist/internal.h */

struct dist_opts {
	int         world;           /* ranks, >= 1 */
	int         transport;       /* enum dist_transport */
	double      timeout_s;       /* a collective, or a rank, silent this long: fault */
	const char *what;            /* the command, for messages ("capture") */
	int         nccl_mem;        /* enum dist_nccl_mem: every rank's comm gets it */
	/* How processes meet: NULL for NCCL (the tests pass a transport of
	 * their own, so that the launcher runs without a GPU). */
	const struct dist_transport_ops *via;
};

/* One rank's work: 0, or an exit status 1..3 (its messages already
 * printed). COMM is NULL when WORLD is 1. */
typedef int (*dist_rank_fn)(struct dist_comm *comm, void *arg);

int dist_run(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg);

/* The two ways dist_run runs WORLD > 1 ranks (it picks by transport). */
int dist_run_threads(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg);   /* threads.c */
int dist_run_processes(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg); /* launch.c */

/* Whether this process was started by an external launcher (WORLD_SIZE
 * set): then *WORLD and *RANK are its; else 0. -1 with MSG when the
 * variables are there but wrong. */
int dist_external(int *world, int *rank, char *msg, size_t len);
/* dist_run's way under an external launcher: this process is one rank. */
int dist_run_external(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg);

/* The host transport: WORLD ranks in one process (dist/host-group.c). */
struct dist_host_group;
int  dist_host_group_new(struct dist_host_group **out, int world, double timeout_s,
                         char *msg, size_t len);
struct dist_comm *dist_host_group_comm(struct dist_host_group *g, int rank);
void dist_host_group_free(struct dist_host_group *g);

/* The GPUs of this machine, counted by a child process, so that this
 * one stays free of CUDA: a process that forks ranks (dist_run on cuda)
 * must not have touched CUDA before, since a forked child cannot use its
 * parent's CUDA. 0 GPUs in a build without CUDA. 0, or -1 with MSG. */
int dist_gpu_count(int *count, char *msg, size_t len);

/* The communicator of the rank this thread runs while its rank_main runs
 * (every launcher sets it); NULL otherwise: one rank. An engine opened
 * then launches its collectives through it; the CUDA backend's graphs that
 * hold collectives are followed by its watchdog. */
struct dist_comm *dist_self(void);
void dist_self_set(struct dist_comm *comm);      /* the launchers: around rank_main */
/* The launchers, before rank_main: dist_self_set(COMM), and a rank other
 * than 0 shows no progress (a run's progress is rank 0's). */
void dist_rank_enter(struct dist_comm *comm);

/* Whether this build has NCCL; its version (ncclGetVersion) or 0. */
int dist_have_nccl(void);
int dist_nccl_version(void);
/* Whether NCCL VERSION (ncclGetVersion()) and this build's nccl.h have
 * symmetric memory windows (2.27 or later): 0, else -1 with MSG saying
 * which is too old, or that the build has no NCCL. BCG_TEST_NCCL_VERSION
 * stands for VERSION in the tests. */
int dist_symmetric_check(int version, char *msg, size_t len);

#endif /* BCG_DIST_DIST_H */
