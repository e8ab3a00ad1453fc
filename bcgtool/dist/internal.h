/*
 * dist/internal.h - what the rank launcher, the external launcher, the
 * watchdog and the transports share inside dist/.
 */
#ifndef BCG_DIST_INTERNAL_H
#define BCG_DIST_INTERNAL_H

#include <stddef.h>

#include "comm.h"
#include "dist.h"

/* The most bytes a transport's unique id may take (NCCL's: 128). */
#define DIST_ID_MAX 256

/*
 * How the processes of a group meet: NCCL's unique id and communicators
 * (dist/nccl.c), or a transport of a test's. Each function returns 0, or
 * -1 with one sentence in MSG.
 */
struct dist_transport_ops {
	const char *name;
	size_t      id_size;         /* bytes of the unique id, <= DIST_ID_MAX */
	/* The GPUs of this machine. The launcher calls it in a child process
	 * of its own, so that the process that forks the ranks never
	 * touches CUDA. */
	int (*devices)(int *count, char *msg, size_t len);
	/* Rank 0: the id the ranks meet by. */
	int (*make_id)(void *id, char *msg, size_t len);
	/* Rank RANK of WORLD, on DEVICE, joins the group of ID; gives up
	 * after TIMEOUT_S seconds. */
	int (*make_comm)(struct dist_comm **out, int world, int rank, int device, const void *id,
	                 double timeout_s, char *msg, size_t len);
};

/* The CUDA devices of this process (cudaGetDeviceCount; 0 without CUDA):
 * what dist_gpu_count runs in its child (dist/nccl.c). */
int dist_cuda_devices(int *count, char *msg, size_t len);

/* NCCL's transport, or NULL in a build without NCCL (dist/nccl.c). */
const struct dist_transport_ops *dist_nccl_transport(void);

/* The message of a command that needs NCCL in a build without it. */
#define DIST_NO_NCCL "this build has no NCCL: rebuild with NCCL for --tp on GPUs"

/* Seconds on the monotonic clock. */
double dist_now(void);

/*
 * The watchdog of one rank's process: a thread that asks the comm's
 * pending() every few milliseconds. A collective pending longer than
 * TIMEOUT_S, or pending once a notice says another rank is gone, ends
 * the process: a message naming this rank and the collective, the
 * communicator aborted, _exit(3). So does the notice alone, TIMEOUT_S
 * after it came, if the process is still there. NOTICE_FD (or -1): the launcher's
 * lines "R TEXT\n", rank R having failed so ("died of signal 9").
 */
struct dist_watchdog;
int  dist_watchdog_start(struct dist_watchdog **out, struct dist_comm *comm, double timeout_s,
                         int notice_fd, char *msg, size_t len);
void dist_watchdog_stop(struct dist_watchdog *w);
/* Whether this process's watchdog has fired (it aborts the communicator,
 * which lets a wait of another thread return as if the work were done,
 * then exits 3): 1 from before the abort on. dist_fired_wait() never
 * returns once it has fired (the watchdog ends the process); else it
 * returns at once. */
int  dist_fired(void);
void dist_fired_wait(void);

/*
 * The environment of an external launcher: WORLD_SIZE, RANK and
 * LOCAL_RANK (or Open MPI's OMPI_COMM_WORLD_SIZE, _RANK, _LOCAL_RANK),
 * and BCG_DIST_STORE, the file that carries the unique id.
 */
struct dist_env {
	int         world;
	int         rank;
	int         local_rank;      /* the CUDA device */
	const char *store;           /* NULL when WORLD is 1 */
	const char *world_var;       /* the names read, for messages */
	const char *rank_var;
	const char *local_var;
};
/* 1 when an external launcher started this process, 0 when not (no
 * WORLD_SIZE), -1 with MSG when its variables are wrong. */
int dist_env_read(struct dist_env *env, char *msg, size_t len);

/*
 * The file store of the unique id: rank 0 puts it (a temporary file
 * renamed over PATH); the others get it, waiting for the file up to
 * TIMEOUT_S seconds. The file says the world it is for, which must match.
 */
int dist_store_put(const char *path, int world, const void *id, size_t size, char *msg,
                   size_t len);
int dist_store_get(const char *path, int world, void *id, size_t size, double timeout_s,
                   char *msg, size_t len);

#endif /* BCG_DIST_INTERNAL_H */
