/*
 * dist/dist.c - dist_run: one rank runs in place; several run as threads
 * (host) or processes (NCCL).
 */
#include "config.h"

#include <stdio.h>

#include "dist.h"

int dist_run(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	if (opts->world == 1)
		return rank_main(NULL, arg);
	if (opts->world < 1) {
		fprintf(stderr, "bcgtool: %s: a world of %d ranks\n", opts->what, opts->world);
		return 2;
	}
	if (opts->transport == DIST_HOST)
		return dist_run_threads(opts, rank_main, arg);
	return dist_run_processes(opts, rank_main, arg);
}
