/* dist/threads.c - ranks as threads of this process (in progress). */
#include "config.h"

#include <stdio.h>

#include "dist.h"

int dist_run_threads(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	(void)rank_main;
	(void)arg;
	fprintf(stderr, "bcgtool: %s: ranks as threads are not built yet\n", opts->what);
	return 3;
}
