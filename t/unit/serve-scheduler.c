/*
 * serve-scheduler.c - continuous batching.
 *
 * Small schedules worked out by hand (chunked prefill, preemption by
 * recompute, the request limit, the clock jumping to an arrival); then
 * synthetic traces under tight and loose caches, where every batch is
 * checked against a model of each request the test keeps from the batches
 * alone: budget and request limit respected, rows consistent, no block in
 * two requests, positions continuing where the request left off (or from 0
 * after a preemption), first come first served, and every request finishing
 * with exactly its output length.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "serve/scheduler.h"
#include "tap.h"

struct key {
	uint32_t tokens, requests;
	int uniform;
};

static struct serve_sched_opts opts(uint32_t blocks, uint32_t bs, uint32_t maxb, uint32_t reqs,
                              uint32_t budget, uint32_t chunk)
{
	struct serve_sched_opts o = { .num_blocks = blocks, .block_size = bs, .max_blocks = maxb,
	                        .max_reqs = reqs, .token_budget = budget, .chunk = chunk,
	                        .step_us = 1000 };
	return o;
}

/* Run T to the end; compare the keys with WANT (N of them). */
static void expect_keys(const struct serve_trace *t, const struct serve_sched_opts *o,
                        const struct key *want, uint32_t n, const char *what,
                        uint32_t *seq_out, struct serve_sched_stats *st)
{
	struct serve_sched s;
	struct serve_diag d;
	uint32_t steps = 0, bad = 0;

	if (serve_sched_init(&s, t, o, &d) != 0) {
		ok(0, "%s: init (%s)", what, d.msg);
		return;
	}
	while (serve_sched_next(&s) == 0) {
		const struct serve_batch_key *k = &s.batch.key;
		if (steps >= n || k->tokens != want[steps].tokens || k->requests != want[steps].requests ||
		    k->uniform_decode != want[steps].uniform) {
			diag("%s: step %u: got (%u, %u, %d)", what, steps, k->tokens, k->requests,
			     k->uniform_decode);
			bad++;
		}
		if (seq_out != NULL && steps < n)
			seq_out[steps] = s.batch.seq_len[0];
		steps++;
		serve_sched_finish(&s);
	}
	is_int(steps, n, "%s: %u steps", what, n);
	is_int(bad, 0, "%s: the batches worked out by hand", what);
	is_int(s.pool.nfree, o->num_blocks, "%s: every block free at the end", what);
	if (st != NULL)
		*st = s.stats;
	serve_sched_release(&s);
}

static void test_chunked_prefill(void)
{
	struct serve_request r = { .id = 1, .prompt_len = 10, .output_len = 3 };
	struct serve_trace t = { 1, &r };
	struct serve_sched_opts o = opts(8, 4, 4, 4, 4, 0);
	static const struct key want[] = { { 4, 1, 0 }, { 4, 1, 0 }, { 2, 1, 0 }, { 1, 1, 1 },
	                                   { 1, 1, 1 } };
	uint32_t seq[5];

	expect_keys(&t, &o, want, 5, "a 10-token prompt, budget 4", seq, NULL);
	ok(seq[0] == 4 && seq[1] == 8 && seq[2] == 10 && seq[3] == 11 && seq[4] == 12,
	   "sequence lengths 4, 8, 10, 11, 12");
	o.chunk = 3;
	static const struct key want3[] = { { 3, 1, 0 }, { 3, 1, 0 }, { 3, 1, 0 }, { 1, 1, 1 },
	                                    { 1, 1, 1 }, { 1, 1, 1 } };
	expect_keys(&t, &o, want3, 6, "chunks of 3 (the last of 1 is uniform)", NULL, NULL);
}

static void test_preemption(void)
{
	struct serve_request r[2] = { { .id = 0, .prompt_len = 3, .output_len = 4 },
	                              { .id = 1, .prompt_len = 3, .output_len = 4 } };
	struct serve_trace t = { 2, r };
	struct serve_sched_opts o = opts(4, 2, 4, 4, 16, 0);
	/* Worked out in the comment of each step:
	 * 1: both prompts (2 blocks each, none left);
	 * 2: both decode (positions 3, 4 fit);
	 * 3: A needs a third block: B is preempted, A decodes alone;
	 * 4: A decodes its last token and retires;
	 * 5: B computes its prompt and its two tokens again (5);
	 * 6: B decodes its last. */
	static const struct key want[] = { { 6, 2, 0 }, { 2, 2, 1 }, { 1, 1, 1 }, { 1, 1, 1 },
	                                   { 5, 1, 0 }, { 1, 1, 1 } };
	struct serve_sched_stats st;

	expect_keys(&t, &o, want, 6, "preemption by recompute", NULL, &st);
	is_int(st.preemptions, 1, "one preemption");
	is_int(st.generated, 8, "8 tokens generated");
	is_int(st.tokens, 16, "16 tokens scheduled (6 + 2 + 1 + 1 + 5 + 1)");
}

static void test_request_limit(void)
{
	struct serve_request r[3] = { { .id = 0, .prompt_len = 2, .output_len = 2 },
	                              { .id = 1, .prompt_len = 2, .output_len = 3 },
	                              { .id = 2, .prompt_len = 2, .output_len = 1 } };
	struct serve_trace t = { 3, r };
	struct serve_sched_opts o = opts(16, 4, 4, 2, 64, 0);
	/* 1: prompts of 0 and 1; 2: both decode, 0 retires; 3: 1 decodes and 2
	 * is admitted (its one token is sampled by its prompt: it retires). */
	static const struct key want[] = { { 4, 2, 0 }, { 2, 2, 1 }, { 3, 2, 0 } };

	expect_keys(&t, &o, want, 3, "two requests at most", NULL, NULL);
}

static void test_clock(void)
{
	struct serve_request r[2] = { { .id = 0, .arrival_us = 0, .prompt_len = 1, .output_len = 2 },
	                              { .id = 1, .arrival_us = 1000000, .prompt_len = 1,
	                                .output_len = 1 } };
	struct serve_trace t = { 2, r };
	struct serve_sched_opts o = opts(16, 4, 4, 4, 64, 0);
	static const struct key want[] = { { 1, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 } };
	struct serve_sched_stats st;

	expect_keys(&t, &o, want, 3, "a late arrival", NULL, &st);
	is_int(st.idle_us, 1000000 - 2000, "the clock jumps over the idle time");
}

static void test_too_long(void)
{
	struct serve_request r[2] = { { .id = 5, .prompt_len = 10, .output_len = 7 },
	                              { .id = 6, .prompt_len = 16, .output_len = 2 } };
	struct serve_trace t = { 2, r };
	struct serve_sched_opts o = opts(100, 4, 4, 4, 64, 0);
	struct serve_sched s;
	struct serve_diag d;

	ok(serve_sched_init(&s, &t, &o, &d) == -1, "a request longer than a block table is refused");
	is_str(d.msg, "request 6 needs 17 KV positions; the cache holds 16 a request "
	       "(4 blocks of 4) and 400 in all", "with the request and the sizes");
	o = opts(3, 4, 8, 4, 64, 0);
	ok(serve_sched_init(&s, &t, &o, &d) == -1, "a request longer than the whole cache is refused");
	is_str(d.msg, "request 5 needs 16 KV positions; the cache holds 32 a request "
	       "(8 blocks of 4) and 12 in all", "with the request and the sizes");
}

/* The test's model of one request, from the batches alone. */
struct model {
	uint32_t computed;
	uint32_t generated;
	int      seen;
	int      done;
};

static void run_checked(const struct serve_trace *t, const struct serve_sched_opts *o,
                        const char *what, uint64_t *hash_out)
{
	struct serve_sched s;
	struct serve_diag d;
	struct model *m = calloc(t->n, sizeof *m);
	uint32_t *owner = calloc(o->num_blocks, sizeof *owner);
	uint64_t steps = 0, preempt = 0, hash = 1469598103934665603ull;
	uint32_t bad_budget = 0, bad_rows = 0, bad_blocks = 0, bad_pos = 0, bad_order = 0;
	uint32_t bad_arrival = 0, bad_done = 0, bad_uniform = 0, next_new = 0, max_reqs = 0;
	uint32_t bs = o->block_size;

	if (serve_sched_init(&s, t, o, &d) != 0 || m == NULL || owner == NULL) {
		ok(0, "%s: init (%s)", what, d.msg);
		free(m);
		free(owner);
		return;
	}
	while (serve_sched_next(&s) == 0) {
		const struct serve_batch *b = &s.batch;
		uint32_t nr = b->key.requests, all_one = 1;

		if (b->key.tokens > o->token_budget || nr > o->max_reqs || nr == 0)
			bad_budget++;
		if (nr > max_reqs)
			max_reqs = nr;
		if (b->query_start[0] != 0 || b->query_start[nr] != b->key.tokens)
			bad_rows++;
		/* Blocks: no block in the tables of two requests of the batch, nor
		 * held by any other request (their lists, gathered here). */
		memset(owner, 0xff, o->num_blocks * sizeof *owner);
		for (uint32_t i = 0; i < t->n; i++)
			for (uint32_t k = 0; k < s.r[i].blocks.n; k++) {
				if (owner[s.r[i].blocks.ids[k]] != UINT32_MAX)
					bad_blocks++;
				owner[s.r[i].blocks.ids[k]] = i;
			}
		for (uint32_t k = 0; k < nr; k++) {
			uint32_t q0 = b->query_start[k], q1 = b->query_start[k + 1], ql = q1 - q0;
			uint32_t L = b->seq_len[k], idx = (uint32_t)b->request_id[k];
			const struct serve_request *rq = &t->req[idx];
			struct model *mm = &m[idx];
			const uint32_t *tab = &b->block_table[(size_t)k * b->max_blocks];

			if (q1 <= q0 || ql > s.o.chunk)
				bad_rows++;
			if (ql != 1)
				all_one = 0;
			if (mm->done || rq->arrival_us > s.clock_us)
				bad_arrival++;
			if (!mm->seen) {
				/* First come first served: first appearances in trace order. */
				if (idx != next_new)
					bad_order++;
				next_new = idx + 1;
				mm->seen = 1;
			}
			if (L - ql == 0 && mm->computed > 0) {
				preempt++;   /* started over */
				mm->computed = 0;
			}
			if (L - ql != mm->computed || L > rq->prompt_len + mm->generated)
				bad_pos++;
			for (uint32_t j = 0; j < ql; j++) {
				uint32_t pos = mm->computed + j;
				int32_t slot = b->slot[q0 + j];
				if (b->position[q0 + j] != (int32_t)pos ||
				    slot != (int32_t)(tab[pos / bs] * bs + pos % bs))
					bad_pos++;
			}
			for (uint32_t k2 = 0; k2 < (L + bs - 1) / bs; k2++)
				if (tab[k2] >= o->num_blocks || owner[tab[k2]] != idx)
					bad_blocks++;
			mm->computed = L;
			if (L == rq->prompt_len + mm->generated) {
				mm->generated++;
				if (mm->generated == rq->output_len)
					mm->done = 1;
			}
		}
		if (b->key.uniform_decode != all_one)
			bad_uniform++;
		for (uint32_t j = 0; j < b->key.tokens; j++)
			hash = (hash ^ (uint32_t)b->slot[j]) * 1099511628211ull;
		hash = (hash ^ b->key.tokens ^ ((uint64_t)nr << 32)) * 1099511628211ull;
		steps++;
		serve_sched_finish(&s);
	}
	for (uint32_t i = 0; i < t->n; i++)
		if (!m[i].done || m[i].generated != t->req[i].output_len)
			bad_done++;
	is_int(bad_budget, 0, "%s: token budget and request limit respected", what);
	is_int(bad_rows, 0, "%s: query rows consistent, chunks within the limit", what);
	is_int(bad_blocks, 0, "%s: no block held twice, tables name the owner's blocks", what);
	is_int(bad_pos, 0, "%s: positions and slots continue each request", what);
	is_int(bad_order, 0, "%s: admitted first come, first served", what);
	is_int(bad_arrival, 0, "%s: nothing scheduled before its arrival or after it ended", what);
	is_int(bad_uniform, 0, "%s: uniform decode exactly when every request has one token", what);
	is_int(bad_done, 0, "%s: every request finished with exactly its output length", what);
	is_int(s.stats.preemptions, preempt, "%s: preemptions as the batches show (%llu)", what,
	       (unsigned long long)preempt);
	is_int(s.stats.steps, steps, "%s: steps counted", what);
	is_int(s.pool.nfree, o->num_blocks, "%s: every block free at the end", what);
	diag("%s: %llu steps, %llu preemptions, at most %u requests", what,
	     (unsigned long long)steps, (unsigned long long)preempt, max_reqs);
	*hash_out = hash;
	serve_sched_release(&s);
	free(m);
	free(owner);
}

static void test_synthetic(void)
{
	struct serve_synth sy;
	struct serve_trace t;
	char why[256];
	uint64_t h1, h2, h3;
	struct serve_sched_opts tight = opts(40, 16, 32, 64, 128, 48);
	struct serve_sched_opts loose = opts(4096, 16, 64, 64, 256, 0);

	serve_synth_defaults(&sy);
	ok(serve_synth_parse("requests=300,rate=200,prompt=uniform:1:200,output=exp:60:300,seed=3",
	                     &sy, why, sizeof why) == 0 && serve_trace_synthesize(&sy, &t) == 0,
	   "a synthetic trace of 300 requests");
	run_checked(&t, &tight, "40 blocks", &h1);
	run_checked(&t, &tight, "40 blocks again", &h2);
	ok(h1 == h2, "the same trace and options give the same batches");
	run_checked(&t, &loose, "4096 blocks", &h3);
	ok(h3 != h1, "other options, other batches");
	serve_trace_release(&t);
}

static void test_parse(void)
{
	struct serve_sched_opts o = opts(1, 1, 1, 1, 1, 1);
	char why[256];

	ok(serve_sched_parse("budget=256,requests=64,chunk=0,blocks=4096,block-size=16,"
	                     "step-us=2500000000", &o, why, sizeof why) == 0, "a full spec parses");
	ok(o.token_budget == 256 && o.max_reqs == 64 && o.chunk == 0 && o.num_blocks == 4096 &&
	   o.block_size == 16 && o.step_us == 2500000000ull && o.max_blocks == 1,
	   "every key lands in its field; others are kept");
#define BAD(spec, msg)                                                               \
	do {                                                                         \
		ok(serve_sched_parse(spec, &o, why, sizeof why) == -1, "'%s' fails", spec); \
		is_str(why, msg, "'%s': message", spec);                              \
	} while (0)
	BAD("", "empty scheduler spec");
	BAD("budget", "'budget' is not KEY=VALUE");
	BAD("speed=1", "unknown key 'speed' (budget, requests, chunk, blocks, block-size, step-us)");
	BAD("budget=0", "budget takes a whole number from 1 to 1048576");
	BAD("requests=65537", "requests takes a whole number from 1 to 65536");
	BAD("blocks=1x", "blocks takes a whole number from 1 to 16777216");
	BAD("step-us=", "step-us takes a whole number from 0 to 3600000000");
	BAD("chunk=4,", "a comma ends the spec");
#undef BAD
}

/* The shipped traces do what samples/README.md says, with a budget of 128
 * tokens, 64 requests and replay's default step of 5 ms: 256 requests of mixed lengths, batches of 64
 * requests, mostly uniform decode (decode-heavy) or mostly mixed (mixed). */
static void test_samples(void)
{
	static const struct {
		const char *name;
		int         decode_heavy;
	} traces[] = { { "decode-heavy.jsonl", 1 }, { "mixed.jsonl", 0 } };
	const char *src = getenv("BCG_SRC_DIR");
	char path[4096];

	if (src == NULL) {
		tap_skip(2 * 7, "BCG_SRC_DIR is not set");
		return;
	}
	for (size_t i = 0; i < 2; i++) {
		struct serve_sched_opts o = opts(100000, 16, 128, 64, 128, 0);
		struct serve_trace t;
		struct serve_diag d;
		struct serve_sched s;
		uint64_t uniform = 0, full64 = 0;
		uint32_t pmin = UINT32_MAX, pmax = 0, omin = UINT32_MAX, omax = 0;
		const char *n = traces[i].name;

		o.step_us = 5000;   /* replay's default */
		snprintf(path, sizeof path, "%s/samples/traces/%s", src, n);
		if (serve_trace_read(path, &t, &d) != 0) {
			ok(0, "%s: %u:%u: %s", n, d.line, d.col, d.msg);
			tap_skip(6, "no trace");
			continue;
		}
		ok(t.n >= 256, "%s: %u requests", n, t.n);
		for (uint32_t k = 0; k < t.n; k++) {
			pmin = t.req[k].prompt_len < pmin ? t.req[k].prompt_len : pmin;
			pmax = t.req[k].prompt_len > pmax ? t.req[k].prompt_len : pmax;
			omin = t.req[k].output_len < omin ? t.req[k].output_len : omin;
			omax = t.req[k].output_len > omax ? t.req[k].output_len : omax;
		}
		ok(pmax >= 4 * pmin && omax >= 2 * omin, "%s: prompts %u..%u, outputs %u..%u", n,
		   pmin, pmax, omin, omax);
		if (serve_sched_init(&s, &t, &o, &d) != 0) {
			ok(0, "%s: %s", n, d.msg);
			tap_skip(4, "no schedule");
			serve_trace_release(&t);
			continue;
		}
		while (serve_sched_next(&s) == 0) {
			uniform += s.batch.key.uniform_decode;
			full64 += s.batch.key.requests == 64;
			serve_sched_finish(&s);
		}
		is_int(s.nfinished, t.n, "%s: every request finished", n);
		is_int(s.stats.max_reqs, 64, "%s: batches reach 64 requests", n);
		ok(full64 >= 20, "%s: %llu batches of 64 requests", n, (unsigned long long)full64);
		if (traces[i].decode_heavy)
			ok(uniform * 4 >= s.stats.steps * 3, "%s: %llu of %llu steps uniform decode", n,
			   (unsigned long long)uniform, (unsigned long long)s.stats.steps);
		else
			ok(uniform * 2 <= s.stats.steps, "%s: %llu of %llu steps uniform decode", n,
			   (unsigned long long)uniform, (unsigned long long)s.stats.steps);
		ok(s.stats.preemptions == 0, "%s: no preemption in a large cache", n);
		serve_sched_release(&s);
		serve_trace_release(&t);
	}
}

int main(void)
{
	test_parse();
	test_samples();
	test_chunked_prefill();
	test_preemption();
	test_request_limit();
	test_clock();
	test_too_long();
	test_synthetic();
	return tap_done();
}
