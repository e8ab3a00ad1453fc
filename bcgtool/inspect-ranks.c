/*
 * inspect-ranks.c - bcgtool inspect's view of a tensor-parallel plan: its
 * ranks side by side, with the collectives each rank runs, in which form
 * (a breakpoint, or inside a graph), what they move a step, and whether
 * the ranks' graphs agree.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "ops/op.h"

/* Of variant V of PLAN: its collectives, those run as breakpoints, and the
 * bytes their outputs hold (what each rank receives a step). */
static void inspect_variant_collectives(const plan_t *plan, uint32_t v, uint32_t *n,
                                        uint32_t *eager, uint64_t *bytes)
{
	const struct plan_variant *var = plan_get_variant(plan, v);

	*n = *eager = 0;
	*bytes = 0;
	for (uint32_t i = 0; i < var->nitems; i++) {
		const struct plan_item *it = &var->items[i];
		if (it->kind == PLAN_ITEM_BREAK) {
			const struct plan_breakpoint *b = plan_get_breakpoint(plan, it->index);
			if (b->op == PLAN_NONE || !op_is_collective(plan, b->op))
				continue;
			(*n)++;
			(*eager)++;
			*bytes += plan_tensor_bytes(plan, plan_get_op(plan, b->op)->out[0], var->tokens);
		} else {
			const struct plan_segment *s = plan_get_segment(plan, it->index);
			for (uint32_t op = s->op_first; op < s->op_first + s->op_count; op++) {
				if (!op_is_collective(plan, op))
					continue;
				(*n)++;
				*bytes += plan_tensor_bytes(plan, plan_get_op(plan, op)->out[0],
				                            var->tokens);
			}
		}
	}
}

/* Whether rank R's segments carry rank 0's fingerprints, segment for
 * segment: 1 same, 0 differ, -1 nothing to compare (no nodes: host). */
static int inspect_same_graphs(const plan_t *r0, const plan_t *r)
{
	uint32_t n = plan_count_segments(r0);
	int any = 0;

	if (plan_count_segments(r) != n)
		return 0;
	for (uint32_t s = 0; s < n; s++) {
		uint64_t a = plan_get_segment(r0, s)->fingerprint, b = plan_get_segment(r, s)->fingerprint;
		if (a != b)
			return 0;
		any |= a != 0;
	}
	return any ? 1 : -1;
}

void inspect_ranks(struct inspect *in)
{
	const plan_t *plan = in->plan;
	const struct plan_dist *d = plan_get_dist(plan);
	struct table *tb;
	char a[32];

	if (d->world < 2)
		return;
	inspect_title(in, "ranks (%u, tensor-parallel)", d->world);
	tb = table_new("rrrrrrrrl");
	table_cell(tb, "rank");
	table_cell(tb, "variant");
	table_cell(tb, "segments");
	table_cell(tb, "breakpoints");
	table_cell(tb, "collectives");
	table_cell(tb, "eager");
	table_cell(tb, "captured");
	table_cell(tb, "bytes a step");
	table_cell(tb, "graphs");
	table_end_row(tb, NULL);
	for (uint32_t r = 0; r < d->world; r++) {
		const plan_t *rp = plan_get_rank(plan, r);
		int same = rp != NULL ? inspect_same_graphs(plan, rp) : 0;
		if (rp == NULL)
			continue;
		for (uint32_t v = 0; v < plan_count_variants(rp); v++) {
			const struct plan_variant *var = plan_get_variant(rp, v);
			uint32_t nseg = 0, nbp = 0, n, eager;
			uint64_t bytes;
			if (!inspect_wanted(in, v))
				continue;
			for (uint32_t i = 0; i < var->nitems; i++)
				var->items[i].kind == PLAN_ITEM_SEGMENT ? nseg++ : nbp++;
			inspect_variant_collectives(rp, v, &n, &eager, &bytes);
			table_cell(tb, "%u", r);
			table_cell(tb, "%lld", (long long)var->tokens);
			table_cell(tb, "%u", nseg);
			table_cell(tb, "%u", nbp);
			table_cell(tb, "%u", n);
			table_cell(tb, "%u", eager);
			table_cell(tb, "%u", n - eager);
			table_cell(tb, "%s", bcg_human_bytes(bytes, a, sizeof a));
			table_cell(tb, "%s", r == 0 ? "-" : same > 0 ? "rank 0's" :
			           same < 0 ? "no nodes" : "DIFFER");
			table_end_row(tb, NULL);
		}
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}
