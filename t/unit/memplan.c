/*
 * memplan.c - the memory planner never lets two live tensors overlap.
 *
 * Random programs (tensors of every role over a token dim, ops touching
 * random tensors) are planned for several capture sizes; then, by brute
 * force over the op sequence, every pair of tensors alive at the same op is
 * checked for overlap at the largest size, and every variant's sizes for
 * fitting their reserved space. Liveness is recomputed here from the op
 * lists, independently of the planner's.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/memplan.h"
#include "plan.h"
#include "tap.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

/* A program of NT tensors and NOPS ops over dims T (tokens) and H. */
static plan_t *random_program(uint32_t nt, uint32_t nops)
{
	plan_t *p = plan_new();
	struct plan_dim t = { .name = "T", .value = 64, .flags = PLAN_DIM_TOKENS };
	struct plan_dim h = { .name = "H", .value = 96 };
	struct plan_var v = { .name = "kv", .start = 1, .step = 1, .limit = 100 };
	char name[32];

	plan_add_dim(p, &t, NULL, NULL);
	plan_add_dim(p, &h, NULL, NULL);
	plan_add_var(p, &v, NULL, NULL);
	for (uint32_t i = 0; i < nt; i++) {
		struct plan_tensor pt = { .name = name, .rank = 2 };
		static const int roles[] = { PLAN_ROLE_WEIGHT, PLAN_ROLE_INPUT, PLAN_ROLE_OUTPUT,
		                             PLAN_ROLE_STATE, PLAN_ROLE_ACTIVATION, PLAN_ROLE_ACTIVATION,
		                             PLAN_ROLE_ACTIVATION, PLAN_ROLE_ACTIVATION };
		snprintf(name, sizeof name, "t%u", i);
		pt.role = roles[rnd(8)];
		pt.dtype = 1 + (int)rnd(4);
		/* Token-sized or fixed first axis, and an odd-sized second axis
		 * so sizes are rarely aligned. */
		pt.shape[0].dim = rnd(2) ? 0 : PLAN_NONE;
		pt.shape[0].size = 1 + rnd(7);
		pt.shape[1].dim = rnd(3) ? PLAN_NONE : 1;
		pt.shape[1].size = 1 + rnd(300);
		plan_add_tensor(p, &pt, NULL, NULL);
	}
	for (uint32_t i = 0; i < nops; i++) {
		uint32_t in[3], out[1];
		struct plan_op op = { .kind = "add", .nin = 1 + rnd(3), .nout = 1, .in = in, .out = out };
		for (uint32_t k = 0; k < op.nin; k++)
			in[k] = rnd(nt);
		out[0] = rnd(nt);
		plan_add_op(p, &op, NULL, NULL);
	}
	return p;
}

static int overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

/* Check one planned program; returns the number of violations. */
static unsigned check_program(const plan_t *p, const int64_t *tokens, uint32_t ntok)
{
	uint32_t nt = plan_count_tensors(p), nops = plan_count_ops(p);
	const struct plan_layout *lay = plan_get_layout(p);
	uint32_t *first = calloc(nt, sizeof *first), *last = calloc(nt, sizeof *last);
	int64_t maxt = 0;
	unsigned bad = 0;

	for (uint32_t i = 0; i < ntok; i++)
		if (tokens[i] > maxt)
			maxt = tokens[i];
	/* Liveness from scratch. */
	for (uint32_t t = 0; t < nt; t++)
		first[t] = UINT32_MAX, last[t] = 0;
	for (uint32_t i = 0; i < nops; i++) {
		const struct plan_op *o = plan_get_op(p, i);
		for (uint32_t k = 0; k < o->nin + o->nout; k++) {
			uint32_t t = k < o->nin ? o->in[k] : o->out[k - o->nin];
			if (first[t] == UINT32_MAX)
				first[t] = i;
			last[t] = i;
		}
	}
	for (uint32_t a = 0; a < nt; a++) {
		const struct plan_tensor *ta = plan_get_tensor(p, a);
		if (ta->offset % lay->alignment != 0 || ta->offset + ta->bytes > lay->arena_bytes)
			bad++;
		/* An activation no op touches gets no space at all. */
		for (uint32_t i = 0; i < ntok; i++)
			if (plan_tensor_bytes(p, a, tokens[i]) > ta->bytes &&
			    !(ta->role == PLAN_ROLE_ACTIVATION && first[a] == UINT32_MAX))
				bad++;
		if (ta->bytes != plan_tensor_bytes(p, a, maxt) && first[a] != UINT32_MAX)
			bad++;
	}
	/* Every pair alive at the same op (persistent ones always are). */
	for (uint32_t i = 0; i < nops; i++) {
		for (uint32_t a = 0; a < nt; a++) {
			const struct plan_tensor *ta = plan_get_tensor(p, a);
			int alive_a = ta->role != PLAN_ROLE_ACTIVATION || (first[a] <= i && i <= last[a]);
			if (!alive_a)
				continue;
			for (uint32_t b = a + 1; b < nt; b++) {
				const struct plan_tensor *tb = plan_get_tensor(p, b);
				int alive_b = tb->role != PLAN_ROLE_ACTIVATION ||
				              (first[b] <= i && i <= last[b]);
				if (alive_b && overlaps(ta->offset, ta->bytes, tb->offset, tb->bytes)) {
					if (bad < 5)
						diag("op %u: %s [%llu,+%llu) overlaps %s [%llu,+%llu)", i,
						     ta->name, (unsigned long long)ta->offset,
						     (unsigned long long)ta->bytes, tb->name,
						     (unsigned long long)tb->offset,
						     (unsigned long long)tb->bytes);
					bad++;
				}
			}
		}
	}
	/* The var mirrors: inside the arena, clear of every tensor. */
	for (uint32_t v = 0; v < plan_count_vars(p); v++) {
		uint64_t off = plan_get_var(p, v)->offset;
		if (off % lay->alignment != 0 || off + 4 > lay->arena_bytes)
			bad++;
		for (uint32_t a = 0; a < nt; a++) {
			const struct plan_tensor *ta = plan_get_tensor(p, a);
			if (overlaps(off, 4, ta->offset, ta->bytes))
				bad++;
		}
	}
	free(first);
	free(last);
	return bad;
}

int main(void)
{
	static const int64_t tokens[] = { 1, 2, 4, 8, 64 };
	unsigned total_bad = 0, reused = 0;

	rng_state = 0x5eed;
	for (int round = 0; round < 200; round++) {
		plan_t *p = random_program(4 + rnd(40), 1 + rnd(60));
		struct memplan mp;
		char msg[256];
		if (memplan_place(p, tokens, 5, &mp, msg, sizeof msg) != 0) {
			ok(0, "round %d: memplan_place failed: %s", round, msg);
			plan_free(p);
			continue;
		}
		total_bad += check_program(p, tokens, 5);
		if (mp.arena_bytes < mp.unshared_bytes)
			reused++;
		for (uint32_t i = 0; i < 5; i++)
			if (mp.peak_bytes[i] > mp.arena_bytes)
				total_bad++;
		memplan_release(&mp);
		plan_free(p);
	}
	is_int(total_bad, 0, "200 random programs: no two live tensors overlap, all fit, all aligned");
	ok(reused > 100, "activation space is reused in most programs (%u of 200)", reused);

	/* A chain a -> b -> c -> d of equal activations needs two slots. */
	{
		plan_t *p = plan_new();
		struct plan_dim t = { .name = "T", .value = 4, .flags = PLAN_DIM_TOKENS };
		char name[4] = "a";
		uint32_t idx[4];
		struct memplan mp;
		char msg[256];
		int64_t four = 4;

		plan_add_dim(p, &t, NULL, NULL);
		for (int i = 0; i < 4; i++) {
			struct plan_tensor pt = {
				.name = name, .dtype = PLAN_DTYPE_F32, .rank = 2,
				.role = PLAN_ROLE_ACTIVATION,
				.shape = { { .dim = 0 }, { .dim = PLAN_NONE, .size = 64 } },
			};
			name[0] = (char)('a' + i);
			plan_add_tensor(p, &pt, &idx[i], NULL);
		}
		for (int i = 0; i < 3; i++) {
			struct plan_op op = { .kind = "copy", .nin = 1, .nout = 1,
			                      .in = &idx[i], .out = &idx[i + 1] };
			plan_add_op(p, &op, NULL, NULL);
		}
		ok(memplan_place(p, &four, 1, &mp, msg, sizeof msg) == 0, "a chain plans");
		/* Each tensor is 4*64*4 = 1024 bytes: two live at a time. */
		is_int(mp.arena_bytes, 2048, "a chain of four activations needs two slots");
		is_int(mp.unshared_bytes, 4096, "without reuse it would need four");
		ok(plan_get_tensor(p, idx[0])->offset == plan_get_tensor(p, idx[2])->offset,
		   "the first and third share space");
		memplan_release(&mp);
		plan_free(p);
	}
	return tap_done();
}
