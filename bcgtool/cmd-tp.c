/*
 * cmd-tp.c - --tp N for run and capture (cmd-tp.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cmd-tp.h"
#include "engine/engine.h"
#include "engine/shard.h"
#include "util.h"

int cmd_tp_parse(const struct cmd_entry *self, const char *arg, int *world)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (arg[0] == '\0' || *end != '\0' || errno == ERANGE || v < 1 || v > CMD_TP_MAX) {
		cmd_usage_error(self, "--tp takes a number of ranks from 1 to %d, not '%s'",
		                CMD_TP_MAX, arg);
		return -1;
	}
	*world = (int)v;
	return 0;
}

int cmd_tp_parse_timeout(const struct cmd_entry *self, const char *arg, double *timeout_s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (arg[0] == '\0' || *end != '\0' || errno == ERANGE || !(v > 0) || v > 86400) {
		cmd_usage_error(self, "--timeout takes seconds, more than 0 and at most 86400, "
		                "not '%s'", arg);
		return -1;
	}
	*timeout_s = v;
	return 0;
}

int cmd_tp_parse_nccl_mem(const struct cmd_entry *self, const char *arg, int *mem)
{
	if (strcmp(arg, "default") == 0)
		*mem = DIST_NCCL_MEM_DEFAULT;
	else if (strcmp(arg, "symmetric") == 0)
		*mem = DIST_NCCL_MEM_SYMMETRIC;
	else {
		cmd_usage_error(self, "--nccl-mem takes default or symmetric, not '%s'", arg);
		return -1;
	}
	return 0;
}

int cmd_tp_nccl_mem(const struct cmd_entry *self, int mem, int world, const char *backend,
                    struct dist_opts *o)
{
	char msg[256];

	if (o != NULL)
		o->nccl_mem = DIST_NCCL_MEM_DEFAULT;
	if (mem != DIST_NCCL_MEM_SYMMETRIC)
		return BCG_EXIT_OK;
	if (world <= 1) {
		cmd_usage_error(self, "--nccl-mem symmetric places the operands of collectives, and "
		                "one rank has none: it needs --tp 2 or more");
		return BCG_EXIT_USAGE;
	}
	if (backend == NULL)
		return BCG_EXIT_OK;
	if (strcmp(backend, "host") == 0) {
		/* the host transport has no NCCL: threads meet at a barrier */
		bcg_note("--nccl-mem symmetric: the host backend's ranks have no NCCL; their "
		         "collectives' operands stay in the arena (default)");
		return BCG_EXIT_OK;
	}
	if (dist_symmetric_check(dist_nccl_version(), msg, sizeof msg) != 0) {
		bcg_error("%s", msg);
		return dist_have_nccl() ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
	}
	if (o != NULL)
		o->nccl_mem = mem;
	return BCG_EXIT_OK;
}

/* The sizes the rank programs are checked at: the script's variants. */
static int64_t *cmd_tp_sizes(const struct script *s)
{
	int64_t *t = calloc(s->nvariants ? s->nvariants : 1, sizeof *t);

	for (uint32_t i = 0; t != NULL && i < s->nvariants; i++)
		t[i] = s->variants[i].tokens;
	return t;
}

int cmd_tp_shard(const struct script *s, const char *path, int world, int rank, plan_t **out)
{
	struct shard_error err;
	int64_t *sizes = cmd_tp_sizes(s);
	unsigned line = 0, col = 0;
	int rc;

	*out = NULL;
	if (sizes == NULL) {
		bcg_error("out of memory");
		return BCG_EXIT_RUNTIME;
	}
	rc = shard_plan(s->program, (uint32_t)world, (uint32_t)rank, sizes, s->nvariants, out,
	                &err);
	free(sizes);
	if (rc == 0)
		return BCG_EXIT_OK;
	if (strcmp(err.msg, "out of memory") == 0) {
		bcg_error("out of memory");
		return BCG_EXIT_RUNTIME;
	}
	line = err.line;
	col = err.col;
	if (line == 0 && err.tensor != PLAN_NONE && s->tensor_line != NULL) {
		line = s->tensor_line[err.tensor];
		col = s->tensor_col[err.tensor];
	}
	bcg_error_at(path, line, col, "--tp %d: %s", world, err.msg);
	return BCG_EXIT_USAGE;
}

int cmd_tp_check(const struct script *s, const char *path, int world)
{
	for (int r = 0; r < world; r++) {
		plan_t *p = NULL;
		int rc = cmd_tp_shard(s, path, world, r, &p);
		plan_free(p);
		if (rc != BCG_EXIT_OK)
			return rc;
	}
	return BCG_EXIT_OK;
}

const char *cmd_tp_opts(struct dist_opts *o, const char *what, const char *backend, int world,
                        double timeout_s)
{
	memset(o, 0, sizeof *o);
	o->world = world;
	o->what = what;
	o->timeout_s = timeout_s;
	o->transport = strcmp(backend, "host") == 0 ? DIST_HOST : DIST_NCCL;
	/* auto: the GPUs when there are any (processes refuse a world larger
	 * than the GPUs present), else host threads. Counted in a child
	 * process: this one must stay free of CUDA to fork the ranks. */
	if (strcmp(backend, "auto") == 0 && world > 1) {
		int gpus = 0;
		char msg[256];
		if (backend_find("cuda") == NULL || dist_gpu_count(&gpus, msg, sizeof msg) != 0 ||
		    gpus == 0) {
			/* said once here, not by every rank's engine */
			bcg_note("no GPU found; the %d ranks run on the host backend, as threads",
			         world);
			o->transport = DIST_HOST;
			return "host";
		}
	}
	return backend;
}

const char *cmd_tp_prefix(const struct dist_comm *comm, char *buf, size_t len)
{
	if (comm == NULL || comm->world <= 1)
		return "";
	snprintf(buf, len, "rank %d: ", comm->rank);
	return buf;
}

void cmd_tp_report(struct engine_error *err, const plan_t *program, const char *path,
                   const struct dist_comm *comm)
{
	char pre[32];
	const char *p = cmd_tp_prefix(comm, pre, sizeof pre);

	if (p[0] != '\0') {
		char msg[sizeof err->msg];
		/* the prefix is under 32 bytes (cmd_tp_prefix's buffer) */
		snprintf(msg, sizeof msg, "%.31s%.*s", p, (int)(sizeof msg - 32), err->msg);
		snprintf(err->msg, sizeof err->msg, "%s", msg);
	}
	engine_report(err, program, path);
}
