/* dist/launch.c - ranks as processes (in progress). */
#include "config.h"

#include <stdio.h>

#include "dist.h"

int dist_run_processes(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	(void)rank_main;
	(void)arg;
	fprintf(stderr, "bcgtool: %s: ranks as processes are not built yet\n", opts->what);
	return 3;
}
