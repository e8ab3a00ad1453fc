/*
 * batch.c - the serving batch of a script (formats/op-script.md, "Batch
 * feeds"): the feeds that carry it agree on the request dim, and the paged
 * ops agree on one cache geometry, so that one batch -- the scheduler's or
 * the default one -- describes every op of a step.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The declaration node of plan tensor T, for error positions. */
static yaml_node_t *batch_node(const struct sp *p, uint32_t t)
{
	for (uint32_t i = 0; i < p->ntensors; i++)
		if (t >= p->tensors[i].first && t < p->tensors[i].first + p->tensors[i].count)
			return p->tensors[i].node;
	return NULL;
}

static int batch_feeds(struct sp *p)
{
	uint32_t feed[PLAN_FEED_SEQ_POSITIONS + 1], first = PLAN_NONE;
	const plan_t *plan = p->plan;
	const struct plan_tensor *seq, *t;
	int64_t reqs;

	for (int k = 0; k <= PLAN_FEED_SEQ_POSITIONS; k++)
		feed[k] = PLAN_NONE;
	for (uint32_t i = 0; i < plan_count_tensors(plan); i++) {
		int k = plan_get_tensor(plan, i)->feed.kind;
		if (k < PLAN_FEED_SEQ_LENS || k > PLAN_FEED_SEQ_POSITIONS)
			continue;
		if (feed[k] != PLAN_NONE)
			return sp_error(p, batch_node(p, i), "feed %s is given twice: tensors '%s' and "
			                "'%s'", plan_feed_name(k), plan_get_tensor(plan, feed[k])->name,
			                plan_get_tensor(plan, i)->name);
		feed[k] = i;
		if (first == PLAN_NONE)
			first = i;
	}
	if (first == PLAN_NONE)
		return 0;
	if (feed[PLAN_FEED_SEQ_LENS] == PLAN_NONE)
		return sp_error(p, batch_node(p, first), "feed %s needs a seq_lens feed in the "
		                "script: it gives the request dim and the lengths",
		                plan_feed_name(plan_get_tensor(plan, first)->feed.kind));
	seq = plan_get_tensor(plan, feed[PLAN_FEED_SEQ_LENS]);
	reqs = seq->shape[0].size;
	if (dims_check_requests(p, reqs, seq->name) != 0)
		return -1;
	if (feed[PLAN_FEED_QUERY_START] != PLAN_NONE &&
	    (t = plan_get_tensor(plan, feed[PLAN_FEED_QUERY_START]))->shape[0].size != reqs + 1)
		return sp_error(p, batch_node(p, feed[PLAN_FEED_QUERY_START]), "feed query_start "
		                "needs %lld rows, one more than the %lld of seq_lens '%s'; '%s' has "
		                "%lld", (long long)(reqs + 1), (long long)reqs, seq->name, t->name,
		                (long long)t->shape[0].size);
	if (feed[PLAN_FEED_BLOCK_TABLE] != PLAN_NONE &&
	    (t = plan_get_tensor(plan, feed[PLAN_FEED_BLOCK_TABLE]))->shape[0].size != reqs)
		return sp_error(p, batch_node(p, feed[PLAN_FEED_BLOCK_TABLE]), "feed block_table "
		                "needs %lld rows, one per request of seq_lens '%s'; '%s' has %lld",
		                (long long)reqs, seq->name, t->name, (long long)t->shape[0].size);
	if (feed[PLAN_FEED_SLOTS] != PLAN_NONE && feed[PLAN_FEED_BLOCK_TABLE] == PLAN_NONE)
		return sp_error(p, batch_node(p, feed[PLAN_FEED_SLOTS]), "feed slots needs a "
		                "block_table feed in the script: the slots follow its blocks");
	return 0;
}

/* The cache operands of a paged op, or 0 when OP is not one. */
static int batch_caches(const plan_t *plan, const struct plan_op *o, uint32_t *cache)
{
	if (strcmp(o->kind, "paged_kv_write") == 0) {
		cache[0] = o->out[0];
		return 1;
	}
	if (strcmp(o->kind, "rope_paged_kv_write") == 0) {
		cache[0] = o->out[1];
		cache[1] = o->out[2];
		return 2;
	}
	if (strcmp(o->kind, "paged_attention") == 0) {
		cache[0] = o->in[1];
		cache[1] = o->in[2];
		return 2;
	}
	(void)plan;
	return 0;
}

static int batch_geometry(struct sp *p)
{
	const plan_t *plan = p->plan;
	uint32_t first = PLAN_NONE, first_cache = PLAN_NONE;

	for (uint32_t i = 0; i < plan_count_ops(plan); i++) {
		const struct plan_op *o = plan_get_op(plan, i);
		uint32_t cache[2];
		int n = batch_caches(plan, o, cache);
		for (int c = 0; c < n; c++) {
			const struct plan_tensor *t = plan_get_tensor(plan, cache[c]), *f;
			char a[160], b[160];
			if (first == PLAN_NONE) {
				first = i;
				first_cache = cache[c];
				continue;
			}
			f = plan_get_tensor(plan, first_cache);
			if (t->shape[0].size == f->shape[0].size && t->shape[1].size == f->shape[1].size)
				continue;
			sp_op_desc(o->name, o->kind, i, a, sizeof a);
			sp_op_desc(plan_get_op(plan, first)->name, plan_get_op(plan, first)->kind, first,
			           b, sizeof b);
			return sp_error_at(p, o->line, o->col, "%s: its cache '%s' has %lld blocks of "
			                   "%lld, but the cache '%s' of %s has %lld of %lld: a script has "
			                   "one cache geometry", a, t->name, (long long)t->shape[0].size,
			                   (long long)t->shape[1].size, f->name, b,
			                   (long long)f->shape[0].size, (long long)f->shape[1].size);
		}
	}
	return 0;
}

int batch_check(struct sp *p)
{
	if (batch_feeds(p) != 0)
		return -1;
	return batch_geometry(p);
}
