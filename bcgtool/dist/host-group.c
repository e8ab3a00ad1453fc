/*
 * dist/host-group.c - the host transport of dist/comm.h: the ranks are
 * threads of one process, and a collective is two meetings of them.
 *
 * At the first meeting every rank has posted its buffer; each then reads
 * every rank's buffer (in rank order: the sums of all_reduce are taken in
 * f32 from rank 0 up, so every rank gets the same bits) into a buffer of
 * its own. At the second meeting nobody reads any more, and each rank
 * writes its result where it belongs. A rank that does not come to a
 * meeting within the timeout fails the group: every rank waiting there,
 * and every later collective, gets an error naming the rank that did not
 * arrive and the collective in progress.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist.h"
#include "ops/numeric.h"
#include "plan.h"

enum { HG_ALL_REDUCE = 1, HG_ALL_GATHER, HG_BARRIER };

struct hg_slot {
	int         kind;          /* HG_* of the collective posted */
	const void *send;
	uint64_t    count;
	int         dtype;
	const char *current;       /* the op, as comm->current said */
};

struct hg_comm {
	struct dist_comm        base;
	struct dist_host_group *g;
	void                   *tmp;       /* the rank's result before it lands */
	size_t                  tmp_bytes;
};

struct dist_host_group {
	int             world;
	double          timeout_s;
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	uint64_t        gen;               /* meetings completed */
	int             arrived;
	int            *here;              /* by rank: at the meeting in progress */
	int             failed;            /* the group gave up: why in why */
	char            why[320];
	struct hg_slot *slot;              /* by rank */
	struct hg_comm *comm;              /* by rank */
};

static const char *hg_kind_name(int kind)
{
	return kind == HG_ALL_REDUCE ? "all_reduce" : kind == HG_ALL_GATHER ? "all_gather"
	                                                                     : "barrier";
}

static int hg_error(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int hg_error(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (msg != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "all_reduce of o.3/all_reduce" */
static void hg_what(const struct hg_comm *c, int kind, char *buf, size_t len)
{
	if (c->base.current != NULL)
		snprintf(buf, len, "%s of %s", hg_kind_name(kind), c->base.current);
	else
		snprintf(buf, len, "%s", hg_kind_name(kind));
}

/* Meet the other ranks; the caller holds nothing. */
static int hg_meet(struct hg_comm *c, int kind, char *msg, size_t len)
{
	struct dist_host_group *g = c->g;
	int rank = c->base.rank, rc = 0;
	struct timespec deadline;
	char what[200];

	hg_what(c, kind, what, sizeof what);
	clock_gettime(CLOCK_REALTIME, &deadline);
	{
		double whole = (double)(long long)g->timeout_s;
		deadline.tv_sec += (time_t)whole;
		deadline.tv_nsec += (long)((g->timeout_s - whole) * 1e9);
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&g->mu);
	if (g->failed) {
		rc = hg_error(msg, len, "rank %d: %s: %s", rank, what, g->why);
		goto out;
	}
	uint64_t gen = g->gen;
	g->here[rank] = 1;
	if (++g->arrived == g->world) {
		g->arrived = 0;
		memset(g->here, 0, (size_t)g->world * sizeof *g->here);
		g->gen++;
		pthread_cond_broadcast(&g->cv);
		goto out;
	}
	while (g->gen == gen && !g->failed) {
		int e = pthread_cond_timedwait(&g->cv, &g->mu, &deadline);
		if (e == ETIMEDOUT && g->gen == gen && !g->failed) {
			int missing = -1;
			for (int r = 0; r < g->world && missing < 0; r++)
				if (!g->here[r])
					missing = r;
			snprintf(g->why, sizeof g->why, "rank %d did not arrive within %g s", missing,
			         g->timeout_s);
			g->failed = 1;
			pthread_cond_broadcast(&g->cv);
		}
	}
	if (g->gen == gen)
		rc = hg_error(msg, len, "rank %d: %s: %s", rank, what, g->why);
out:
	pthread_mutex_unlock(&g->mu);
	return rc;
}

/* After the first meeting: every rank posted the same collective. */
static int hg_agree(struct hg_comm *c, char *msg, size_t len)
{
	struct dist_host_group *g = c->g;
	const struct hg_slot *me = &g->slot[c->base.rank];

	for (int r = 0; r < g->world; r++) {
		const struct hg_slot *o = &g->slot[r];
		if (o->kind != me->kind || o->count != me->count || o->dtype != me->dtype) {
			char what[200];
			hg_what(c, me->kind, what, sizeof what);
			return hg_error(msg, len, "rank %d: %s of %llu elements: rank %d is in %s of "
			                "%llu elements (%s): the ranks' programs differ", c->base.rank,
			                what, (unsigned long long)me->count, r, hg_kind_name(o->kind),
			                (unsigned long long)o->count, o->current ? o->current : "?");
		}
	}
	return 0;
}

static int hg_tmp(struct hg_comm *c, size_t bytes, char *msg, size_t len)
{
	void *n;

	if (bytes <= c->tmp_bytes)
		return 0;
	if ((n = realloc(c->tmp, bytes)) == NULL)
		return hg_error(msg, len, "rank %d: out of memory", c->base.rank);
	c->tmp = n;
	c->tmp_bytes = bytes;
	return 0;
}

static float hg_load(const void *p, int dtype, uint64_t i)
{
	switch (dtype) {
	case PLAN_DTYPE_F16: return bcg_f16_to_f32(((const uint16_t *)p)[i]);
	case PLAN_DTYPE_BF16: return bcg_bf16_to_f32(((const uint16_t *)p)[i]);
	default: return ((const float *)p)[i];
	}
}

static void hg_store(void *p, int dtype, uint64_t i, float v)
{
	switch (dtype) {
	case PLAN_DTYPE_F16: ((uint16_t *)p)[i] = bcg_f32_to_f16(v); break;
	case PLAN_DTYPE_BF16: ((uint16_t *)p)[i] = bcg_f32_to_bf16(v); break;
	default: ((float *)p)[i] = v; break;
	}
}

/* Post, meet, agree, compute into tmp (COMPUTE), meet, land (LAND). */
static int hg_run(struct hg_comm *c, int kind, const void *send, uint64_t count, int dtype,
                  char *msg, size_t len)
{
	struct hg_slot *me = &c->g->slot[c->base.rank];

	me->kind = kind;
	me->send = send;
	me->count = count;
	me->dtype = dtype;
	me->current = c->base.current;
	if (hg_meet(c, kind, msg, len) != 0)
		return -1;
	if (hg_agree(c, msg, len) != 0) {
		c->base.ops->abort(&c->base);
		return -1;
	}
	return 0;
}

static int hg_all_reduce(struct dist_comm *base, void *buf, uint64_t count, int dtype,
                         void *stream, char *msg, size_t len)
{
	struct hg_comm *c = (struct hg_comm *)base;
	struct dist_host_group *g = c->g;
	size_t es = plan_dtype_size(dtype);
	int rc;

	(void)stream;
	if (dtype != PLAN_DTYPE_F32 && dtype != PLAN_DTYPE_F16 && dtype != PLAN_DTYPE_BF16)
		return hg_error(msg, len, "rank %d: all_reduce of %s: not a float", base->rank,
		                plan_dtype_name(dtype));
	rc = hg_tmp(c, (size_t)count * es, msg, len);
	/* a rank short of memory still meets the others, then fails */
	if (hg_run(c, HG_ALL_REDUCE, buf, rc == 0 ? count : 0, dtype, msg, len) != 0 || rc != 0)
		return -1;
	for (uint64_t i = 0; i < count; i++) {
		float sum = 0.0f;
		for (int r = 0; r < g->world; r++)
			sum += hg_load(g->slot[r].send, dtype, i);
		hg_store(c->tmp, dtype, i, sum);
	}
	if (hg_meet(c, HG_ALL_REDUCE, msg, len) != 0)
		return -1;
	memcpy(buf, c->tmp, (size_t)count * es);
	return 0;
}

static int hg_all_gather(struct dist_comm *base, const void *send, void *recv, uint64_t count,
                         int dtype, void *stream, char *msg, size_t len)
{
	struct hg_comm *c = (struct hg_comm *)base;
	struct dist_host_group *g = c->g;
	size_t bytes = (size_t)count * plan_dtype_size(dtype);

	(void)stream;
	if (hg_run(c, HG_ALL_GATHER, send, count, dtype, msg, len) != 0)
		return -1;
	for (int r = 0; r < g->world; r++)
		memcpy((unsigned char *)recv + (size_t)r * bytes, g->slot[r].send, bytes);
	return hg_meet(c, HG_ALL_GATHER, msg, len);
}

static int hg_barrier(struct dist_comm *base, char *msg, size_t len)
{
	/* Met twice, as the collectives are: after the first meeting every
	 * rank reads the others' slots (hg_agree), and a rank that left at
	 * once could post its next collective over its slot before a slower
	 * one has read it. */
	if (hg_run((struct hg_comm *)base, HG_BARRIER, NULL, 0, 0, msg, len) != 0)
		return -1;
	return hg_meet((struct hg_comm *)base, HG_BARRIER, msg, len);
}

static void hg_abort(struct dist_comm *base)
{
	struct dist_host_group *g = ((struct hg_comm *)base)->g;

	pthread_mutex_lock(&g->mu);
	if (!g->failed) {
		snprintf(g->why, sizeof g->why, "rank %d gave up on the group", base->rank);
		g->failed = 1;
	}
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* A rank's communicator lives as long as its group. */
static void hg_destroy(struct dist_comm *base)
{
	(void)base;
}

static const struct dist_comm_ops hg_ops = {
	.name = "host",
	.all_reduce = hg_all_reduce,
	.all_gather = hg_all_gather,
	.barrier = hg_barrier,
	.abort = hg_abort,
	.destroy = hg_destroy,
};

int dist_host_group_new(struct dist_host_group **out, int world, double timeout_s, char *msg,
                        size_t len)
{
	struct dist_host_group *g;

	*out = NULL;
	if (world < 1 || timeout_s <= 0)
		return hg_error(msg, len, "a host group of %d ranks, timeout %g s", world, timeout_s);
	if ((g = calloc(1, sizeof *g)) == NULL ||
	    (g->here = calloc((size_t)world, sizeof *g->here)) == NULL ||
	    (g->slot = calloc((size_t)world, sizeof *g->slot)) == NULL ||
	    (g->comm = calloc((size_t)world, sizeof *g->comm)) == NULL) {
		if (g != NULL) {
			free(g->here);
			free(g->slot);
		}
		free(g);
		return hg_error(msg, len, "out of memory");
	}
	g->world = world;
	g->timeout_s = timeout_s;
	if (pthread_mutex_init(&g->mu, NULL) != 0) {
		free(g->here);
		free(g->slot);
		free(g->comm);
		free(g);
		return hg_error(msg, len, "cannot make a mutex");
	}
	if (pthread_cond_init(&g->cv, NULL) != 0) {
		pthread_mutex_destroy(&g->mu);
		free(g->here);
		free(g->slot);
		free(g->comm);
		free(g);
		return hg_error(msg, len, "cannot make a condition variable");
	}
	for (int r = 0; r < world; r++) {
		struct hg_comm *c = &g->comm[r];
		c->base.ops = &hg_ops;
		c->base.world = world;
		c->base.rank = r;
		c->base.device = -1;
		c->g = g;
	}
	*out = g;
	return 0;
}

struct dist_comm *dist_host_group_comm(struct dist_host_group *g, int rank)
{
	return rank >= 0 && rank < g->world ? &g->comm[rank].base : NULL;
}

void dist_host_group_free(struct dist_host_group *g)
{
	if (g == NULL)
		return;
	for (int r = 0; r < g->world; r++)
		free(g->comm[r].tmp);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g->here);
	free(g->slot);
	free(g->comm);
	free(g);
}
