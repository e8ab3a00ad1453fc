/*
 * serve/scheduler.c - continuous batching: admit, chunk, preempt, retire.
 */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/scheduler.h"

void serve_sched_release(struct serve_sched *s)
{
	if (s->r != NULL)
		for (uint32_t i = 0; s->trace != NULL && i < s->trace->n; i++)
			kv_list_release(&s->r[i].blocks);
	free(s->r);
	free(s->waiting);
	free(s->running);
	free(s->batch_reqs);
	free(s->batch.query_start);
	free(s->batch.seq_len);
	free(s->batch.block_table);
	free(s->batch.request_id);
	free(s->batch.position);
	free(s->batch.slot);
	kv_pool_release(&s->pool);
	memset(s, 0, sizeof *s);
}

static int serve_sched_fail(struct serve_sched *s, struct serve_diag *why, const char *msg)
{
	serve_sched_release(s);
	why->line = why->col = 0;
	snprintf(why->msg, sizeof why->msg, "%s", msg);
	return -1;
}

int serve_sched_init(struct serve_sched *s, const struct serve_trace *t,
                     const struct serve_sched_opts *o, struct serve_diag *why)
{
	uint64_t per_req = (uint64_t)o->max_blocks * o->block_size;
	struct serve_batch *b = &s->batch;
	uint32_t n = t->n;
	char msg[256];

	memset(s, 0, sizeof *s);
	if (o->num_blocks == 0 || o->block_size == 0 || o->max_blocks == 0 || o->max_reqs == 0 ||
	    o->token_budget == 0)
		return serve_sched_fail(s, why, "the scheduler needs blocks, requests and tokens");
	for (uint32_t i = 0; i < n; i++) {
		const struct serve_request *q = &t->req[i];
		/* The last sampled token is never written to the cache. */
		uint64_t need = (uint64_t)q->prompt_len + q->output_len - 1;
		uint64_t blocks = (need + o->block_size - 1) / o->block_size;
		if (need > per_req || blocks > o->num_blocks) {
			snprintf(msg, sizeof msg,
			         "request %" PRIu64 " needs %" PRIu64 " KV positions; the cache holds %" PRIu64
			         " a request (%u blocks of %u) and %" PRIu64 " in all",
			         q->id, need, per_req, o->max_blocks, o->block_size,
			         (uint64_t)o->num_blocks * o->block_size);
			return serve_sched_fail(s, why, msg);
		}
	}
	s->o = *o;
	if (s->o.chunk == 0 || s->o.chunk > o->token_budget)
		s->o.chunk = o->token_budget;
	if (s->o.pad_tokens < o->token_budget)
		s->o.pad_tokens = o->token_budget;
	if (s->o.pad_reqs < o->max_reqs)
		s->o.pad_reqs = o->max_reqs;
	s->trace = t;
	if (kv_pool_init(&s->pool, o->num_blocks, o->block_size) != 0 ||
	    (s->r = calloc(n ? n : 1, sizeof *s->r)) == NULL ||
	    (s->waiting = calloc(n ? n : 1, sizeof *s->waiting)) == NULL ||
	    (s->running = calloc(o->max_reqs, sizeof *s->running)) == NULL ||
	    (s->batch_reqs = calloc(o->max_reqs, sizeof *s->batch_reqs)) == NULL)
		return serve_sched_fail(s, why, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (kv_list_init(&s->r[i].blocks, o->max_blocks) != 0)
			return serve_sched_fail(s, why, "out of memory");
	b->max_blocks = o->max_blocks;
	b->block_size = o->block_size;
	b->query_start = calloc((size_t)s->o.pad_reqs + 1, sizeof *b->query_start);
	b->seq_len = calloc(s->o.pad_reqs, sizeof *b->seq_len);
	b->block_table = calloc((size_t)s->o.pad_reqs * o->max_blocks, sizeof *b->block_table);
	b->request_id = calloc(s->o.pad_reqs, sizeof *b->request_id);
	b->position = calloc(s->o.pad_tokens, sizeof *b->position);
	b->slot = calloc(s->o.pad_tokens, sizeof *b->slot);
	if (b->query_start == NULL || b->seq_len == NULL || b->block_table == NULL ||
	    b->request_id == NULL || b->position == NULL || b->slot == NULL)
		return serve_sched_fail(s, why, "out of memory");
	return 0;
}

/* Tokens the request knows: its prompt and what it has generated. */
static uint32_t known_tokens(const struct serve_sched *s, uint32_t i)
{
	return s->trace->req[i].prompt_len + s->r[i].generated;
}

/* Move every request that has arrived by now to the waiting queue. */
static void serve_sched_arrivals(struct serve_sched *s)
{
	while (s->next < s->trace->n && s->trace->req[s->next].arrival_us <= s->clock_us) {
		s->r[s->next].state = SERVE_REQ_WAITING;
		s->waiting[s->nwaiting++] = s->next++;
	}
}

/* Free the last running request's blocks and put it first in the queue. */
static uint32_t serve_sched_preempt_last(struct serve_sched *s)
{
	uint32_t v = s->running[--s->nrunning];
	struct serve_sched_req *q = &s->r[v];

	kv_pool_free(&s->pool, &q->blocks);
	q->computed = 0;
	q->scheduled = 0;
	q->preempted++;
	q->state = SERVE_REQ_WAITING;
	memmove(s->waiting + 1, s->waiting, s->nwaiting * sizeof *s->waiting);
	s->waiting[0] = v;
	s->nwaiting++;
	s->stats.preemptions++;
	return v;
}

static uint32_t min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a < b ? a : b;
	return m < c ? m : c;
}

/* Write the scheduled requests' rows into the batch. */
static void serve_sched_fill(struct serve_sched *s, uint32_t nreqs)
{
	struct serve_batch *b = &s->batch;
	uint32_t row = 0, bs = s->o.block_size;
	int uniform = 1;

	for (uint32_t k = 0; k < nreqs; k++) {
		uint32_t i = s->batch_reqs[k];
		struct serve_sched_req *q = &s->r[i];
		uint32_t *table = &b->block_table[(size_t)k * b->max_blocks];

		b->query_start[k] = row;
		b->seq_len[k] = q->computed + q->scheduled;
		b->request_id[k] = s->trace->req[i].id;
		memcpy(table, q->blocks.ids, q->blocks.n * sizeof *table);
		memset(table + q->blocks.n, 0, (b->max_blocks - q->blocks.n) * sizeof *table);
		for (uint32_t j = 0; j < q->scheduled; j++, row++) {
			uint32_t pos = q->computed + j;
			b->position[row] = (int32_t)pos;
			b->slot[row] = (int32_t)(q->blocks.ids[pos / bs] * bs + pos % bs);
		}
		if (q->scheduled != 1)
			uniform = 0;
	}
	b->query_start[nreqs] = row;
	b->key.tokens = row;
	b->key.requests = nreqs;
	b->key.uniform_decode = uniform && nreqs > 0;
}

int serve_sched_next(struct serve_sched *s)
{
	uint32_t budget = s->o.token_budget, nb = 0, preempted = 0;

	serve_sched_arrivals(s);
	if (s->nrunning == 0 && s->nwaiting == 0) {
		if (s->next == s->trace->n)
			return 1;
		s->stats.idle_us += s->trace->req[s->next].arrival_us - s->clock_us;
		s->clock_us = s->trace->req[s->next].arrival_us;
		serve_sched_arrivals(s);
	}

	/* Running requests, in admission order. Preemption takes from the
	 * end, which this step has not reached yet (or the request itself). */
	for (uint32_t k = 0; k < s->nrunning && budget > 0;) {
		uint32_t i = s->running[k];
		struct serve_sched_req *q = &s->r[i];
		uint32_t n = min3(known_tokens(s, i) - q->computed, budget, s->o.chunk);
		int self = 0;

		while (kv_pool_grow(&s->pool, &q->blocks, i, (uint64_t)q->computed + n) != 0) {
			preempted = 1;
			if (serve_sched_preempt_last(s) == i) {
				self = 1;
				break;
			}
		}
		if (self)
			break;
		q->scheduled = n;
		budget -= n;
		s->batch_reqs[nb++] = i;
		k++;
	}

	/* Waiting requests, first come first served. */
	while (!preempted && s->nwaiting > 0 && s->nrunning < s->o.max_reqs && budget > 0) {
		uint32_t i = s->waiting[0];
		struct serve_sched_req *q = &s->r[i];
		uint32_t n = min3(known_tokens(s, i) - q->computed, budget, s->o.chunk);

		if (kv_pool_grow(&s->pool, &q->blocks, i, (uint64_t)q->computed + n) != 0)
			break;
		memmove(s->waiting, s->waiting + 1, --s->nwaiting * sizeof *s->waiting);
		q->state = SERVE_REQ_RUNNING;
		q->scheduled = n;
		budget -= n;
		s->running[s->nrunning++] = i;
		s->batch_reqs[nb++] = i;
	}

	serve_sched_fill(s, nb);
	s->pending = 1;
	s->stats.tokens += s->batch.key.tokens;
	if (nb > s->stats.max_reqs)
		s->stats.max_reqs = nb;
	if (s->batch.key.tokens > s->stats.max_tokens)
		s->stats.max_tokens = s->batch.key.tokens;
	return 0;
}

void serve_sched_pad(struct serve_sched *s, uint32_t tokens, uint32_t reqs)
{
	struct serve_batch *b = &s->batch;
	uint32_t nt = b->key.tokens, nr = b->key.requests;

	if (tokens > s->o.pad_tokens)
		tokens = s->o.pad_tokens;
	if (reqs > s->o.pad_reqs)
		reqs = s->o.pad_reqs;
	for (uint32_t t = nt; t < tokens; t++) {
		b->position[t] = 0;
		b->slot[t] = SERVE_SLOT_PAD;
	}
	for (uint32_t r = nr; r < reqs; r++) {
		b->query_start[r + 1] = nt;
		b->seq_len[r] = 0;
		b->request_id[r] = 0;
		memset(&b->block_table[(size_t)r * b->max_blocks], 0,
		       b->max_blocks * sizeof *b->block_table);
	}
}

void serve_sched_finish(struct serve_sched *s)
{
	uint32_t kept = 0;

	if (!s->pending)
		return;
	for (uint32_t k = 0; k < s->batch.key.requests; k++) {
		uint32_t i = s->batch_reqs[k];
		struct serve_sched_req *q = &s->r[i];

		q->computed += q->scheduled;
		q->scheduled = 0;
		if (q->computed < known_tokens(s, i))
			continue;   /* a prompt chunk that is not the last */
		if (q->generated == 0)
			q->first_step = s->stats.steps;
		q->generated++;
		s->stats.generated++;
		if (q->generated == s->trace->req[i].output_len) {
			q->state = SERVE_REQ_FINISHED;
			q->finish_step = s->stats.steps;
			kv_pool_free(&s->pool, &q->blocks);
			s->nfinished++;
		}
	}
	/* Drop the finished from the running list, keeping the order. */
	for (uint32_t k = 0; k < s->nrunning; k++)
		if (s->r[s->running[k]].state == SERVE_REQ_RUNNING)
			s->running[kept++] = s->running[k];
	s->nrunning = kept;
	s->pending = 0;
	s->stats.steps++;
	s->clock_us += s->o.step_us;
}

int serve_sched_parse(const char *spec, struct serve_sched_opts *o, char *why, size_t whylen)
{
	static const struct {
		const char *key;
		size_t      off;
		int         wide;     /* a uint64_t field */
		uint64_t    min, max;
	} keys[] = {
		{ "budget", offsetof(struct serve_sched_opts, token_budget), 0, 1, 1u << 20 },
		{ "requests", offsetof(struct serve_sched_opts, max_reqs), 0, 1, 1u << 16 },
		{ "chunk", offsetof(struct serve_sched_opts, chunk), 0, 0, 1u << 20 },
		{ "blocks", offsetof(struct serve_sched_opts, num_blocks), 0, 1, 1u << 24 },
		{ "block-size", offsetof(struct serve_sched_opts, block_size), 0, 1, 1u << 16 },
		{ "step-us", offsetof(struct serve_sched_opts, step_us), 1, 0, 3600000000ull },
	};
	const char *p = spec;

	if (*p == '\0') {
		snprintf(why, whylen, "empty scheduler spec");
		return -1;
	}
	while (*p != '\0') {
		const char *end = strchr(p, ','), *eq, *val;
		size_t n = end ? (size_t)(end - p) : strlen(p), kl, k;
		uint64_t v = 0;
		int bad = 0;

		if ((eq = memchr(p, '=', n)) == NULL) {
			snprintf(why, whylen, "'%.*s' is not KEY=VALUE", (int)n, p);
			return -1;
		}
		kl = (size_t)(eq - p);
		for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
			if (strlen(keys[k].key) == kl && memcmp(p, keys[k].key, kl) == 0)
				break;
		if (k == sizeof keys / sizeof keys[0]) {
			snprintf(why, whylen, "unknown key '%.*s' (budget, requests, chunk, blocks, "
			         "block-size, step-us)", (int)kl, p);
			return -1;
		}
		val = eq + 1;
		if (val == p + n || p + n - val > 20)
			bad = 1;
		for (const char *c = val; !bad && c < p + n; c++) {
			if (*c < '0' || *c > '9')
				bad = 1;
			else
				v = v * 10 + (uint64_t)(*c - '0');
		}
		if (bad || v < keys[k].min || v > keys[k].max) {
			snprintf(why, whylen, "%s takes a whole number from %" PRIu64 " to %" PRIu64,
			         keys[k].key, keys[k].min, keys[k].max);
			return -1;
		}
		if (keys[k].wide)
			*(uint64_t *)(void *)((char *)o + keys[k].off) = v;
		else
			*(uint32_t *)(void *)((char *)o + keys[k].off) = (uint32_t)v;
		p += n + (end != NULL);
		if (end != NULL && *p == '\0') {
			snprintf(why, whylen, "a comma ends the spec");
			return -1;
		}
	}
	return 0;
}
