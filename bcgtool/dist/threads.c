/*
 * dist/threads.c - ranks as threads of this process (the host backend):
 * one host group (dist/host-group.c), one thread a rank. A rank that
 * fails gives up on the group, so that the others, blocked in a
 * collective or on their way to one, fail at once instead of at the
 * timeout.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist.h"
#include "util.h"

struct rank_thread {
	pthread_t         tid;
	int               started;
	int               rc;
	struct dist_comm *comm;
	dist_rank_fn      fn;
	void             *arg;
};

static void *rank_thread_main(void *p)
{
	struct rank_thread *t = p;

	dist_rank_enter(t->comm);
	t->rc = t->fn(t->comm, t->arg);
	dist_self_set(NULL);
	if (t->rc != 0)
		t->comm->ops->abort(t->comm);
	return NULL;
}

int dist_run_threads(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	struct dist_host_group *g = NULL;
	struct rank_thread *t;
	char msg[256];
	int worst = 0;

	if ((t = calloc((size_t)opts->world, sizeof *t)) == NULL) {
		fprintf(stderr, "bcgtool: %s: out of memory\n", opts->what);
		return 3;
	}
	if (dist_host_group_new(&g, opts->world, opts->timeout_s, msg, sizeof msg) != 0) {
		fprintf(stderr, "bcgtool: %s: %s\n", opts->what, msg);
		free(t);
		return 3;
	}
	for (int r = 0; r < opts->world; r++) {
		t[r].comm = dist_host_group_comm(g, r);
		/* opts->nccl_mem is not passed on: the host transport has no
		 * NCCL and no symmetric memory, so its collectives' operands
		 * stay in the arena, and a plan says so (the command said
		 * that --nccl-mem symmetric is a no-op here: cmd-tp.c) */
		t[r].fn = rank_main;
		t[r].arg = arg;
		if (bcg_thread_start(&t[r].tid, rank_thread_main, &t[r]) != 0) {
			fprintf(stderr, "bcgtool: %s: cannot start the thread of rank %d\n", opts->what,
			        r);
			t[r].comm->ops->abort(t[r].comm);
			worst = 3;
			break;
		}
		t[r].started = 1;
	}
	for (int r = 0; r < opts->world; r++) {
		if (!t[r].started)
			continue;
		pthread_join(t[r].tid, NULL);
		if (t[r].rc > worst)
			worst = t[r].rc;
	}
	dist_host_group_free(g);
	free(t);
	return worst;
}
