/*
 * attrib.c - join a profile's kernels to the plan's ops (see attrib.h).
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "backend.h"
#include "util.h"

static int fail(char *msg, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *msg, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return rc;
}

static const char *keepf(struct profile *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *keepf(struct profile *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	p->strings = xreallocarray(p->strings, p->nstrings + 1, sizeof *p->strings);
	p->strings[p->nstrings] = xstrdup(buf);
	return p->strings[p->nstrings++];
}

void profile_release(struct profile *p)
{
	for (uint32_t s = 0; s < p->nsteps; s++) {
		free(p->steps[s].items);
		free(p->steps[s].item_gpu);
	}
	free(p->steps);
	free(p->item_names);
	free(p->kattr);
	free(p->ops);
	for (uint32_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	memset(p, 0, sizeof *p);
}

/* The NVTX names replay gives a variant's items: "seg K first..last" (K
 * counts the variant's segments) and "break NAME". A recorded plan's
 * replay (bcgtool/record) names a segment "seg S FIRST..LAST", S the
 * plan's segment index and FIRST and LAST its first and last kernels'
 * raw names, each cut at 140 bytes, and a break "break NAME". */
static char (*variant_names(const plan_t *plan, uint32_t v))[PROF_ITEM_NAME_MAX]
{
	const struct plan_variant *pv = plan_get_variant(plan, v);
	char (*names)[PROF_ITEM_NAME_MAX] = xcalloc(pv->nitems + 1, sizeof *names);
	char a[64], b[64];
	uint32_t k = 0;

	for (uint32_t i = 0; i < pv->nitems && plan_get_origin(plan) == PLAN_ORIGIN_RECORDED; i++) {
		if (pv->items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(plan, pv->items[i].index);
			const char *first = "", *last = "";
			for (uint32_t n = 0; n < s->nnodes; n++)
				if (s->nodes[n].type == PLAN_NODE_KERNEL) {
					if (first[0] == '\0')
						first = s->nodes[n].kernel;
					last = s->nodes[n].kernel;
				}
			snprintf(names[i], sizeof names[i], "seg %u %.140s..%.140s",
			         pv->items[i].index, first, last);
		} else {
			snprintf(names[i], sizeof names[i], "break %s",
			         plan_get_breakpoint(plan, pv->items[i].index)->name);
		}
	}
	for (uint32_t i = 0; i < pv->nitems && plan_get_origin(plan) != PLAN_ORIGIN_RECORDED; i++) {
		if (pv->items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(plan, pv->items[i].index);
			plan_op_label(plan, s->op_first, a, sizeof a);
			plan_op_label(plan, s->op_first + s->op_count - 1, b, sizeof b);
			snprintf(names[i], sizeof names[i], "seg %u %s..%s", k++, a, b);
		} else {
			const struct plan_breakpoint *bp = plan_get_breakpoint(plan, pv->items[i].index);
			plan_op_label(plan, bp->op, a, sizeof a);
			snprintf(names[i], sizeof names[i], "break %s", a);
		}
	}
	return names;
}

/* A step's range: "step N" (*RANK -1) or, of a rank of a tensor-parallel
 * replay, "rank R step N". */
static int parse_step(const struct nsys_range *r, int64_t *number, int *rank)
{
	long long n, k;
	int end = 0;

	*rank = -1;
	if (sscanf(r->text, "step %lld%n", &n, &end) == 1 && r->text[end] == '\0' && n >= 0) {
		*number = n;
		return 1;
	}
	end = 0;
	if (sscanf(r->text, "rank %lld step %lld%n", &k, &n, &end) == 2 && r->text[end] == '\0' &&
	    n >= 0 && k >= 0 && k <= 65535 && strncmp(r->text, "rank ", 5) == 0 &&
	    r->text[5] >= '0' && r->text[5] <= '9') {
		*number = n;
		*rank = (int)k;
		return 1;
	}
	return 0;
}

/* A step of the rank RANK (-1: a replay of one rank). */
static int is_step_of(const struct nsys_range *r, int rank, int64_t *number)
{
	int k;

	return parse_step(r, number, &k) && k == rank;
}

static int is_item(const struct nsys_range *r)
{
	return strncmp(r->text, "seg ", 4) == 0 || strncmp(r->text, "break ", 6) == 0;
}

/* The steps with their item ranges, in the report's order. */
struct raw_step {
	const struct nsys_range  *range;
	const char               *phase;
	int64_t                   number;
	const struct nsys_range **items;
	uint32_t                  nitems;
};

static const struct nsys_range *enclosing_range(const struct nsys_trace *t, size_t at,
                                                int64_t start, int64_t end, int64_t tid)
{
	/* The innermost range on TID that holds [START, END], ranges before
	 * AT in start order (the one at AT excluded). */
	for (size_t i = at; i-- > 0;) {
		const struct nsys_range *r = &t->ranges[i];
		if (r->tid == tid && r->start <= start && r->end >= end)
			return r;
	}
	return NULL;
}

static const char *enclosing(const struct nsys_trace *t, size_t at, int64_t start, int64_t end,
                             int64_t tid)
{
	const struct nsys_range *r = enclosing_range(t, at, start, end, tid);

	return r != NULL ? r->text : "";
}

static uint32_t find_steps(const struct nsys_trace *t, int rank, struct raw_step **out)
{
	struct raw_step *steps = NULL;
	const struct nsys_range *phase = NULL;
	size_t prev_at = 0;
	uint32_t n = 0;

	for (size_t i = 0; i < t->nranges; i++) {
		const struct nsys_range *r = &t->ranges[i];
		struct raw_step *s;
		int64_t number;

		if (!is_step_of(r, rank, &number))
			continue;
		steps = xreallocarray(steps, n + 1, sizeof *steps);
		s = &steps[n++];
		memset(s, 0, sizeof *s);
		s->range = r;
		s->number = number;
		/* Steps come in runs inside one phase range. Ranges are nested,
		 * so a range before the previous step that holds this one holds
		 * the previous one too: the innermost is one that starts after
		 * the previous step, else the previous step's if it holds this
		 * one, else found the long way. */
		{
			const struct nsys_range *p = NULL;
			int same = n > 1 && steps[n - 2].range->tid == r->tid;
			if (same)
				for (size_t q = i; q-- > prev_at + 1 && p == NULL;)
					if (t->ranges[q].tid == r->tid && t->ranges[q].start <= r->start &&
					    t->ranges[q].end >= r->end)
						p = &t->ranges[q];
			if (p == NULL && phase != NULL && phase->tid == r->tid &&
			    phase->start <= r->start && phase->end >= r->end && same)
				p = phase;
			/* (none held the previous step: none before it holds this one) */
			if (p == NULL && (!same || phase != NULL))
				p = enclosing_range(t, i, r->start, r->end, r->tid);
			phase = p;
			prev_at = i;
		}
		s->phase = phase != NULL ? phase->text : "";
		for (size_t j = i + 1; j < t->nranges && t->ranges[j].start <= r->end; j++) {
			const struct nsys_range *c = &t->ranges[j];
			if (c->tid != r->tid || c->end > r->end || !is_item(c))
				continue;
			/* direct children only: skip ranges inside the last item */
			if (s->nitems > 0 && c->start < s->items[s->nitems - 1]->end)
				continue;
			s->items = xreallocarray(s->items, s->nitems + 1, sizeof *s->items);
			s->items[s->nitems++] = c;
		}
	}
	*out = steps;
	return n;
}

static int step_matches(const struct raw_step *s, char (*names)[PROF_ITEM_NAME_MAX], uint32_t nitems)
{
	if (s->nitems != nitems)
		return 0;
	for (uint32_t i = 0; i < nitems; i++)
		if (strcmp(s->items[i]->text, names[i]) != 0)
			return 0;
	return 1;
}

/* The latest step starting at or before the call whose range holds it in
 * time, on the call's thread (or on any with ANY_THREAD); *STEP and *ITEM
 * as locate() gives them. */
static void locate_on(const struct raw_step *steps, uint32_t nsteps, const struct nsys_call *c,
                      int any_thread, uint32_t *step, uint32_t *item)
{
	uint32_t lo = 0, hi = nsteps;

	*step = *item = UINT32_MAX;
	while (lo < hi) {          /* the first step starting after the call */
		uint32_t mid = lo + (hi - lo) / 2;
		if (steps[mid].range->start <= c->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t s = lo; s-- > 0;) {
		const struct nsys_range *r = steps[s].range;
		if ((!any_thread && r->tid != c->tid) || r->end < c->start)
			continue;
		*step = s;
		for (uint32_t i = 0; i < steps[s].nitems; i++)
			if (steps[s].items[i]->start <= c->start && c->start <= steps[s].items[i]->end)
				*item = i;
		return;
	}
}

/* Where a kernel was launched: the raw step and item whose ranges hold its
 * launching call; *STEP = UINT32_MAX outside every step, *ITEM = UINT32_MAX
 * inside a step but outside its items. A call on a thread that holds no
 * step of its own (a library's own thread: NCCL launches a non-blocking
 * communicator's kernels from one while the step's thread waits in the
 * breakpoint) is placed by time in the steps of the others. */
static void locate(const struct raw_step *steps, uint32_t nsteps, const struct nsys_call *c,
                   uint32_t *step, uint32_t *item)
{
	locate_on(steps, nsteps, c, 0, step, item);
	if (*step != UINT32_MAX)
		return;
	for (uint32_t s = 0; s < nsteps; s++)
		if (steps[s].range->tid == c->tid)
			return;
	locate_on(steps, nsteps, c, 1, step, item);
}

static uint32_t node_index(const struct nsys_kernel *k)
{
	int64_t id = k->orig_node != NSYS_NONE ? k->orig_node : k->node;
	/* Nsight Systems numbers a graph's nodes in creation order in the low
	 * 32 bits of the id (the graph's id is above them). */
	return (uint32_t)((uint64_t)id & 0xffffffffu);
}

static const struct plan_node *kernel_node(const plan_t *plan, const struct plan_variant *pv,
                                           uint32_t item, const struct nsys_kernel *k)
{
	const struct plan_segment *s;
	uint32_t idx;

	if (pv->items[item].kind != PLAN_ITEM_SEGMENT || k->node == NSYS_NONE)
		return NULL;
	s = plan_get_segment(plan, pv->items[item].index);
	idx = node_index(k);
	return idx < s->nnodes ? &s->nodes[idx] : NULL;
}

static int same_launch(const struct plan_node *n, const struct nsys_kernel *k)
{
	return memcmp(n->grid, k->grid, sizeof k->grid) == 0 &&
	       memcmp(n->block, k->block, sizeof k->block) == 0;
}

/* Adds kernel K to S; returns what K added to S's busy time: the part of
 * its interval past every earlier kernel's end. */
static int64_t span_add(struct prof_span *s, const struct nsys_kernel *k, int64_t *reach)
{
	int64_t grew = 0;

	/* Kernels come in start order, so the union grows at its end. */
	if (s->n == 0) {
		s->first = k->start;
		s->last = k->end;
		grew = k->end - k->start;
		*reach = k->end;
	} else {
		if (k->start >= *reach)
			grew = k->end - k->start;
		else if (k->end > *reach)
			grew = k->end - *reach;
		if (k->end > *reach)
			*reach = k->end;
		if (k->end > s->last)
			s->last = k->end;
	}
	s->busy += grew;
	s->ksum += k->end - k->start;
	s->n++;
	return grew;
}

/* Of moe_experts O's experts (its attribute experts, E: gate_up and down,
 * inputs 3 and 4, hold E equal blocks of rows, one an expert's), how many
 * its rows read at TOKENS tokens, into *ROUTED, and E into *EXPERTS: each
 * row of ids ([T, top_k], input 1) routes to top_k, so min(E, T * top_k).
 * That bounds the distinct experts from above (rows may share experts); at
 * one token it is exact. 0 in both when the plan does not give E or top_k. */
static void moe_routed(const plan_t *plan, const struct plan_op *o, int64_t tokens,
                       int64_t *routed, int64_t *experts)
{
	const struct plan_tensor *ids;
	int64_t e = 0, rows, topk;

	*routed = *experts = 0;
	for (uint32_t a = 0; a < o->nattr; a++)
		if (strcmp(o->attr[a].key, "experts") == 0 && o->attr[a].type == PLAN_ATTR_INT)
			e = o->attr[a].i;
	if (o->nin < 5 || e < 1)
		return;
	ids = plan_get_tensor(plan, o->in[1]);
	if (ids->rank != 2)
		return;
	rows = plan_axis_size(plan, &ids->shape[0], tokens);
	topk = plan_axis_size(plan, &ids->shape[1], tokens);
	if (rows < 1 || topk < 1)
		return;
	*routed = rows <= e / topk ? rows * topk : e;   /* rows * topk > e otherwise */
	*experts = e;
}

int64_t profile_op_bytes(const plan_t *plan, uint32_t op, int64_t tokens)
{
	const struct plan_op *o = plan_get_op(plan, op);
	int64_t total = 0, routed = 0, experts = 0;

	if (strstr(o->kind, "attention") != NULL)
		return -1;
	if (strcmp(o->kind, "moe_experts") == 0)
		moe_routed(plan, o, tokens, &routed, &experts);
	for (uint32_t k = 0; k < o->nin + o->nout; k++) {
		int out = k >= o->nin;
		uint32_t t = out ? o->out[k - o->nin] : o->in[k];
		uint64_t bytes = plan_tensor_bytes(plan, t, tokens);
		const struct plan_tensor *pt = plan_get_tensor(plan, t);
		int64_t rows = plan_axis_size(plan, &pt->shape[0], tokens);
		/* Only the token rows of a table or a cache are touched. */
		int rows_only = (!out && k == 0 && strcmp(o->kind, "embedding") == 0) ||
		                (out && strcmp(o->kind, "kv_write") == 0 && k - o->nin == 0) ||
		                (out && strcmp(o->kind, "rope_kv_write") == 0 &&
		                 (k - o->nin == 1 || k - o->nin == 2));
		if (rows_only && rows > 0)
			bytes = bytes / (uint64_t)rows * (uint64_t)tokens;
		/* moe_experts reads only its routed experts' rows of gate_up
		 * and down. */
		if (experts > 0 && !out && (k == 3 || k == 4))
			bytes = bytes / (uint64_t)experts * (uint64_t)routed;
		total += (int64_t)bytes;
	}
	return total;
}

/* No step of RANK in T: why, from the steps it has. */
static int no_steps(const struct nsys_trace *t, int rank, char *msg, size_t len)
{
	for (size_t i = 0; i < t->nranges; i++) {
		int64_t n;
		int k;
		if (!parse_step(&t->ranges[i], &n, &k))
			continue;
		if (rank < 0)
			return fail(msg, len, 2, "its steps are a rank's of a tensor-parallel replay "
			            "('%s'), but the plan is of one rank", t->ranges[i].text);
		if (k < 0)
			return fail(msg, len, 2, "its steps name no rank ('%s'): a replay of one rank, "
			            "not rank %d's of the plan", t->ranges[i].text, rank);
		return fail(msg, len, 2, "its steps are rank %d's ('%s'), not rank %d's: give one "
		            "report per rank, in rank order (rank 0's first)", k, t->ranges[i].text,
		            rank);
	}
	return fail(msg, len, 2, "no '%sstep N' NVTX ranges: profile `bcgtool replay` with its "
	            "NVTX ranges (not --no-nvtx) and --trace=cuda,nvtx", rank < 0 ? "" : "rank R ");
}

int profile_build(const plan_t *plan, const struct nsys_trace *t, int64_t tokens,
                  struct profile *p, char *msg, size_t len)
{
	return profile_build_rank(plan, t, tokens, -1, p, msg, len);
}

int profile_build_rank(const plan_t *plan, const struct nsys_trace *t, int64_t tokens, int rank,
                       struct profile *p, char *msg, size_t len)
{
	struct raw_step *raw = NULL;
	uint32_t nraw = 0, nv = plan_count_variants(plan), best = PLAN_NONE;
	uint32_t *kstep = NULL, *kitem = NULL;
	int64_t *reach = NULL;
	uint64_t best_matches = 0, best_shapes = 0;
	const struct plan_variant *pv;
	uint32_t *slot = NULL;
	int rc = 0;

	memset(p, 0, sizeof *p);
	p->plan = plan;
	p->trace = t;
	p->variant = PLAN_NONE;
	p->rank = rank;
	nraw = find_steps(t, rank, &raw);
	if (nraw == 0) {
		rc = no_steps(t, rank, msg, len);
		goto out;
	}

	/* Where each kernel was launched. */
	kstep = xcalloc(t->nkernels + 1, sizeof *kstep);
	kitem = xcalloc(t->nkernels + 1, sizeof *kitem);
	for (size_t k = 0; k < t->nkernels; k++) {
		const struct nsys_call *c = nsys_find_call(t, t->kernels[k].corr);
		kstep[k] = kitem[k] = UINT32_MAX;
		if (c != NULL)
			locate(raw, nraw, c, &kstep[k], &kitem[k]);
	}

	/* The variant: given, or the one whose items the most steps hold and
	 * whose node records agree with the most kernels' launch shapes. */
	for (uint32_t v = 0; v < nv; v++) {
		char (*names)[PROF_ITEM_NAME_MAX];
		uint64_t matches = 0, shapes = 0;

		pv = plan_get_variant(plan, v);
		if (tokens != 0 && pv->tokens != tokens)
			continue;
		names = variant_names(plan, v);
		for (uint32_t s = 0; s < nraw; s++)
			matches += step_matches(&raw[s], names, pv->nitems);
		free(names);
		for (size_t k = 0; matches > 0 && k < t->nkernels; k++) {
			const struct plan_node *n;
			if (kitem[k] == UINT32_MAX || kitem[k] >= pv->nitems)
				continue;
			n = kernel_node(plan, pv, kitem[k], &t->kernels[k]);
			shapes += n != NULL && same_launch(n, &t->kernels[k]);
		}
		if (matches > best_matches || (matches == best_matches && matches > 0 &&
		                                shapes >= best_shapes)) {
			best = v;
			best_matches = matches;
			best_shapes = shapes;
		}
	}
	if (best == PLAN_NONE) {
		char items[512] = "";
		size_t at = 0;
		for (uint32_t i = 0; i < raw[0].nitems && at < sizeof items - 8; i++)
			at += (size_t)snprintf(items + at, sizeof items - at, "%s'%s'", i ? ", " : "",
			                       raw[0].items[i]->text);
		if (tokens != 0 && plan_find_variant(plan, tokens) == PLAN_NONE)
			rc = fail(msg, len, 2, "the plan has no variant for %lld tokens",
			          (long long)tokens);
		else
			rc = fail(msg, len, 2, "the report does not match the plan: its %s holds %s%s, "
			          "which no variant of the plan%s has (was another plan replayed?)",
			          raw[0].range->text, raw[0].nitems ? "" : "no items", items,
			          tokens ? " for those tokens" : "");
		goto out;
	}
	pv = plan_get_variant(plan, best);
	p->variant = best;
	p->tokens = pv->tokens;
	p->nitems = pv->nitems;
	p->item_names = variant_names(plan, best);

	/* The steps that match; the others' kernels stay unattributed. */
	slot = xcalloc(nraw + 1, sizeof *slot);
	p->steps = xcalloc(nraw + 1, sizeof *p->steps);
	for (uint32_t s = 0; s < nraw; s++) {
		slot[s] = UINT32_MAX;
		if (!step_matches(&raw[s], p->item_names, pv->nitems)) {
			p->unmatched_steps++;
			continue;
		}
		struct prof_step *ps = &p->steps[p->nsteps];
		ps->range = raw[s].range;
		ps->phase = raw[s].phase;
		ps->number = raw[s].number;
		ps->items = raw[s].items;
		raw[s].items = NULL;
		ps->item_gpu = xcalloc(pv->nitems + 1, sizeof *ps->item_gpu);
		ps->gpu.first = -1;
		for (uint32_t i = 0; i < pv->nitems; i++)
			ps->item_gpu[i].first = -1;
		slot[s] = p->nsteps++;
	}

	/* Attribute every kernel. */
	p->kattr = xcalloc(t->nkernels + 1, sizeof *p->kattr);
	p->ops = xcalloc(plan_count_ops(plan) + 1, sizeof *p->ops);
	for (uint32_t o = 0; o < plan_count_ops(plan); o++)
		p->ops[o].bytes = profile_op_bytes(plan, o, p->tokens);
	reach = xcalloc((size_t)p->nsteps * (pv->nitems + 1) + 1, sizeof *reach);
	for (size_t k = 0; k < t->nkernels; k++) {
		const struct nsys_kernel *kn = &t->kernels[k];
		struct prof_kattr *a = &p->kattr[k];
		const struct nsys_call *c = nsys_find_call(t, kn->corr);
		uint32_t s = kstep[k] == UINT32_MAX ? UINT32_MAX : slot[kstep[k]];
		uint32_t i = kitem[k];
		int64_t grew;

		a->step = a->item = a->op = a->node = PLAN_NONE;
		a->where = "";
		if (c == NULL) {
			a->why = keepf(p, "no runtime call has its correlation id %lld",
			               (long long)kn->corr);
			p->outside++;
			continue;
		}
		if (kstep[k] == UINT32_MAX) {
			size_t at = 0, hi = t->nranges;
			while (at < hi) {     /* the first range starting after the call */
				size_t mid = at + (hi - at) / 2;
				if (t->ranges[mid].start <= c->start)
					at = mid + 1;
				else
					hi = mid;
			}
			a->where = enclosing(t, at, c->start, c->start, c->tid);
			a->why = a->where[0] ? keepf(p, "launched in '%s', outside every step", a->where)
			                     : "launched outside every NVTX range";
			p->outside++;
			continue;
		}
		if (s == UINT32_MAX) {
			a->where = raw[kstep[k]].range->text;
			a->why = keepf(p, "launched in %s, whose items are not the plan's",
			               raw[kstep[k]].range->text);
			p->unattributed++;
			continue;
		}
		a->step = s;
		a->where = p->steps[s].range->text;
		if (i == UINT32_MAX) {
			a->why = keepf(p, "launched in %s outside its items", p->steps[s].range->text);
			p->unattributed++;
			continue;
		}
		a->item = i;
		a->where = p->steps[s].items[i]->text;
		if (pv->items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *seg = plan_get_segment(plan, pv->items[i].index);
			const struct plan_node *n = kernel_node(plan, pv, i, kn);
			if (kn->node == NSYS_NONE) {
				a->why = "launched by a segment but not traced as a graph node "
				         "(profile with --cuda-graph-trace=node)";
				p->unattributed++;
				continue;
			}
			if (n == NULL && i == 0 && node_index(kn) == seg->nnodes &&
			    (strcmp(kn->name, BACKEND_FEED_KERNEL) == 0 ||
			     strcmp(kn->mangled, BACKEND_FEED_KERNEL) == 0)) {
				p->feed_kernels++;
				goto spans;
			}
			if (n == NULL) {
				a->why = keepf(p, "graph node %u: the segment has %u node records",
				               node_index(kn), seg->nnodes);
				p->unattributed++;
				continue;
			}
			if (n->type != PLAN_NODE_KERNEL ||
			    (strcmp(n->kernel, kn->mangled) != 0 && strcmp(n->kernel, kn->name) != 0)) {
				a->why = keepf(p, "graph node %u ran %s, the plan records %s there",
				               node_index(kn), kn->name,
				               n->type == PLAN_NODE_KERNEL ? n->kernel : "no kernel");
				p->unattributed++;
				continue;
			}
			a->node = node_index(kn);
			a->op = n->op;
			if (!same_launch(n, kn))
				p->grid_mismatch++;
			p->graph_kernels++;
		} else {
			a->op = plan_get_breakpoint(plan, pv->items[i].index)->op;
			p->break_kernels++;
		}
spans:
		grew = span_add(&p->steps[s].gpu, kn,
		                &reach[(size_t)s * (pv->nitems + 1) + pv->nitems]);
		if (a->op != PLAN_NONE && a->op < plan_count_ops(plan)) {
			p->ops[a->op].kernels++;
			p->ops[a->op].total += kn->end - kn->start;
			p->ops[a->op].exposed += grew;
		}
		span_add(&p->steps[s].item_gpu[i], kn, &reach[(size_t)s * (pv->nitems + 1) + i]);
	}
out:
	for (uint32_t s = 0; s < nraw; s++)
		free(raw[s].items);
	free(raw);
	free(kstep);
	free(kitem);
	free(slot);
	free(reach);
	if (rc != 0)
		profile_release(p);
	return rc;
}

void profile_item_mean(const struct profile *p, uint32_t item, struct prof_item_mean *m)
{
	double nb = 0, na = 0, n = 0;

	memset(m, 0, sizeof *m);
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const struct prof_span *g = p->steps[s].item_gpu;
		m->kernels += g[item].n;
		m->ksum += (double)g[item].ksum;
		if (g[item].n == 0)
			continue;
		n++;
		m->span += (double)prof_span_ns(&g[item]);
		m->busy += (double)g[item].busy;
		for (uint32_t j = item; j-- > 0;)
			if (g[j].n > 0) {
				m->gap_before += (double)(g[item].first - g[j].last);
				nb++;
				break;
			}
		for (uint32_t j = item + 1; j < p->nitems; j++)
			if (g[j].n > 0) {
				m->gap_after += (double)(g[j].first - g[item].last);
				na++;
				break;
			}
	}
	if (p->nsteps > 0) {
		m->kernels /= p->nsteps;
		m->ksum /= p->nsteps;
	}
	m->span = n > 0 ? m->span / n : 0.0;
	m->busy = n > 0 ? m->busy / n : 0.0;
	m->gap_before = nb > 0 ? m->gap_before / nb : NAN;
	m->gap_after = na > 0 ? m->gap_after / na : NAN;
}

uint32_t profile_typical_step(const struct profile *p)
{
	uint32_t best = 0;
	double *spans, median;

	if (p->nsteps == 0)
		return 0;
	spans = xcalloc(p->nsteps, sizeof *spans);
	for (uint32_t s = 0; s < p->nsteps; s++)
		spans[s] = (double)prof_span_ns(&p->steps[s].gpu);
	median = bcg_percentile(spans, p->nsteps, 50);
	for (uint32_t s = 0; s < p->nsteps; s++)
		if ((double)prof_span_ns(&p->steps[s].gpu) == median) {
			best = s;
			break;
		}
	free(spans);
	return best;
}
