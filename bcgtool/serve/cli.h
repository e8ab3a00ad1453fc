/*
 * serve/cli.h - the serving options of replay and bench, and what the two
 * commands do with a trace.
 *
 *   --trace FILE      requests from a JSON Lines file (formats/trace.md)
 *   --synthetic SPEC  requests from the generator
 *   --policy P        full_and_breakable, breakable, full or eager
 *   --sched SPEC      the scheduler's limits and KV cache
 *
 * The commands list SERVE_CLI_LONGOPTS in their option tables and pass
 * every option they do not know to serve_cli_option().
 */
#ifndef BCG_SERVE_CLI_H
#define BCG_SERVE_CLI_H

#include <getopt.h>
#include <stdint.h>

#include "cmd.h"
#include "plan.h"

enum {
	SERVE_OPT_TRACE = 0x300,
	SERVE_OPT_SYNTHETIC,
	SERVE_OPT_POLICY,
	SERVE_OPT_SCHED,
};

#define SERVE_CLI_LONGOPTS                                                 \
	{ "trace", required_argument, NULL, SERVE_OPT_TRACE },             \
	{ "synthetic", required_argument, NULL, SERVE_OPT_SYNTHETIC },     \
	{ "policy", required_argument, NULL, SERVE_OPT_POLICY },           \
	{ "sched", required_argument, NULL, SERVE_OPT_SCHED }

struct serve_cli {
	const char *trace;       /* --trace FILE */
	const char *synthetic;   /* --synthetic SPEC */
	int         policy;      /* -1: not given */
	const char *sched;       /* --sched SPEC */
};

void serve_cli_init(struct serve_cli *c);

/* Handle option OPT (with ARG) if it is a serving option: 1 handled, 0 not
 * one, -1 a usage error (reported). */
int serve_cli_option(const struct cmd_entry *self, struct serve_cli *c, int opt,
                     const char *arg);

/* Whether a trace was asked for; -1 after reporting a usage error (both
 * sources, or serving options without a source). */
int serve_cli_active(const struct cmd_entry *self, const struct serve_cli *c);

/* Common options of a trace run. */
struct serve_cmd_opts {
	const char *backend;
	uint64_t    warmup;
	int         check;
	int         nvtx;
	int         json;
	int         tune;       /* bench: choose implementations by measurement */
	uint32_t    features;   /* bench: PLAN_FEATURE_* */
	int         quiet;      /* a tensor-parallel rank other than 0: serve,
	                           print nothing (rank 0 prints) */
};

/* replay --trace: instantiate every variant of PLAN (read from PATH) and
 * run the trace on them. Returns the exit status. */
int serve_cmd_replay(const struct cmd_entry *self, const plan_t *plan, const char *path,
                     const struct serve_cli *c, const struct serve_cmd_opts *o);

/* bench --trace: capture SCRIPT's sizes in breakable and full mode and run
 * the trace under each policy (only --policy's when given). Returns the
 * exit status. */
int serve_cmd_bench(const struct cmd_entry *self, const char *script,
                    const struct serve_cli *c, const struct serve_cmd_opts *o);

#endif /* BCG_SERVE_CLI_H */
