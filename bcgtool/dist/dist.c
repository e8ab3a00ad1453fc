/*
 * dist/dist.c - dist_run: one rank runs in place; several run as threads
 * (host) or processes (NCCL); under an external launcher this process is
 * one rank.
 */
#include "config.h"

#include <stdio.h>

#include "dist.h"
#include "internal.h"

int dist_run(const struct dist_opts *opts, dist_rank_fn rank_main, void *arg)
{
	struct dist_env env;
	char msg[512];
	int ext = dist_env_read(&env, msg, sizeof msg);

	if (ext < 0) {
		fprintf(stderr, "bcgtool: %s: %s\n", opts->what, msg);
		return 2;
	}
	if (ext == 1) {
		if (opts->world != env.world) {
			fprintf(stderr, "bcgtool: %s: %d rank%s asked for, but the launcher's %s=%d\n",
			        opts->what, opts->world, opts->world == 1 ? "" : "s", env.world_var,
			        env.world);
			return 2;
		}
		if (env.world > 1 && opts->transport == DIST_HOST) {
			fprintf(stderr, "bcgtool: %s: an external launcher's ranks (%s=%d) run on GPUs: "
			        "the host backend runs its ranks as threads of one process\n",
			        opts->what, env.world_var, env.world);
			return 2;
		}
		return dist_run_external(opts, rank_main, arg);
	}
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
