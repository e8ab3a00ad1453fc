/*
 * report.c - the text and JSON forms of a joined profile.
 *
 * Every figure is a mean per matched step unless it says otherwise, so a
 * report of 3 steps and one of 300 read the same.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "ops/op.h"
#include "report.h"
#include "util.h"

struct kind_sum {
	const char *kind;
	uint32_t    ops;
	uint64_t    kernels;
	int64_t     total;
	int64_t     exposed;
};

struct unattr_group {
	const char *name;
	const char *why;
	uint64_t    kernels;
	int64_t     total;
};

/* A recorded plan's kernels by name: launches and GPU time over every
 * matched step, graph and eager apart. */
struct rec_kernel {
	const char *name;     /* mangled */
	uint64_t    graph, eager;
	int64_t     total;
};

static int rec_by_time(const void *x, const void *y)
{
	const struct rec_kernel *a = x, *b = y;

	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return strcmp(a->name, b->name);
}

static struct rec_kernel *rec_kernels(const struct profile *p, uint32_t *n)
{
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);
	struct rec_kernel *rk = xcalloc(p->trace->nkernels + 1, sizeof *rk);

	*n = 0;
	for (size_t k = 0; k < p->trace->nkernels; k++) {
		const struct prof_kattr *at = &p->kattr[k];
		const struct nsys_kernel *kn = &p->trace->kernels[k];
		uint32_t j;
		if (at->why != NULL || at->item == PLAN_NONE)
			continue;
		for (j = 0; j < *n && strcmp(rk[j].name, kn->mangled) != 0; j++)
			;
		if (j == *n)
			rk[(*n)++].name = kn->mangled;
		if (pv->items[at->item].kind == PLAN_ITEM_SEGMENT)
			rk[j].graph++;
		else
			rk[j].eager++;
		rk[j].total += kn->end - kn->start;
	}
	qsort(rk, *n, sizeof *rk, rec_by_time);
	return rk;
}

static double per_step(const struct profile *p, double v)
{
	return p->nsteps > 0 ? v / p->nsteps : 0.0;
}

static int64_t attributed_total(const struct profile *p)
{
	int64_t t = 0;

	for (uint32_t o = 0; o < plan_count_ops(p->plan); o++)
		t += p->ops[o].total;
	return t;
}

/* The item of the variant that runs op O, or PLAN_NONE. */
static uint32_t op_item(const struct profile *p, uint32_t o)
{
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);

	for (uint32_t i = 0; i < pv->nitems; i++) {
		if (pv->items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(p->plan, pv->items[i].index);
			if (o >= s->op_first && o < s->op_first + s->op_count)
				return i;
		} else if (plan_get_breakpoint(p->plan, pv->items[i].index)->op == o) {
			return i;
		}
	}
	return PLAN_NONE;
}

struct op_time {
	uint32_t op;
	int64_t  total;
};

static int op_cmp(const void *a, const void *b)
{
	const struct op_time *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

/* Ops that ran in the variant, by GPU time, largest first. */
static uint32_t *ops_by_time(const struct profile *p, uint32_t *n)
{
	uint32_t nops = plan_count_ops(p->plan), k = 0;
	struct op_time *ot = xcalloc(nops + 1, sizeof *ot);
	uint32_t *order = xcalloc(nops + 1, sizeof *order);

	for (uint32_t o = 0; o < nops; o++)
		if (op_item(p, o) != PLAN_NONE) {
			ot[k].op = o;
			ot[k++].total = p->ops[o].total;
		}
	qsort(ot, k, sizeof *ot, op_cmp);
	for (uint32_t i = 0; i < k; i++)
		order[i] = ot[i].op;
	free(ot);
	*n = k;
	return order;
}

static int kind_cmp(const void *a, const void *b)
{
	const struct kind_sum *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->kind, y->kind);
}

static struct kind_sum *kinds(const struct profile *p, uint32_t *n)
{
	uint32_t nops = plan_count_ops(p->plan), k = 0;
	struct kind_sum *ks = xcalloc(nops + 1, sizeof *ks);

	for (uint32_t o = 0; o < nops; o++) {
		const char *kind = plan_get_op(p->plan, o)->kind;
		uint32_t j;
		if (op_item(p, o) == PLAN_NONE)
			continue;
		for (j = 0; j < k && strcmp(ks[j].kind, kind) != 0; j++)
			;
		if (j == k)
			ks[k++].kind = kind;
		ks[j].ops++;
		ks[j].kernels += p->ops[o].kernels;
		ks[j].total += p->ops[o].total;
		ks[j].exposed += p->ops[o].exposed;
	}
	qsort(ks, k, sizeof *ks, kind_cmp);
	*n = k;
	return ks;
}

static int group_cmp(const void *a, const void *b)
{
	const struct unattr_group *x = a, *y = b;

	if (x->kernels != y->kernels)
		return x->kernels > y->kernels ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->why, y->why) != 0 ? strcmp(x->why, y->why) : strcmp(x->name, y->name);
}

/* Unattributed kernels grouped by kernel name and reason. */
static struct unattr_group *unattr_groups(const struct profile *p, uint32_t *n)
{
	const struct nsys_trace *t = p->trace;
	struct unattr_group *g = xcalloc(t->nkernels + 1, sizeof *g);
	uint32_t k = 0;

	for (size_t i = 0; i < t->nkernels; i++) {
		const struct prof_kattr *a = &p->kattr[i];
		uint32_t j;
		if (a->why == NULL)
			continue;
		for (j = 0; j < k; j++)
			if (strcmp(g[j].name, t->kernels[i].name) == 0 && strcmp(g[j].why, a->why) == 0)
				break;
		if (j == k) {
			g[k].name = t->kernels[i].name;
			g[k++].why = a->why;
		}
		g[j].kernels++;
		g[j].total += t->kernels[i].end - t->kernels[i].start;
	}
	qsort(g, k, sizeof *g, group_cmp);
	*n = k;
	return g;
}

static void us(char *buf, size_t len, double ns)
{
	if (isnan(ns))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f us", ns / 1000.0);
}

struct step_order {
	uint32_t step;
	double   span;
};

/* Steps by GPU span, longest first; the earlier step first among equals. */
static int span_cmp(const void *a, const void *b)
{
	const struct step_order *x = a, *y = b;

	if (x->span != y->span)
		return x->span > y->span ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

static int step_cmp(const void *a, const void *b)
{
	const struct step_order *x = a, *y = b;

	return x->step < y->step ? -1 : x->step > y->step;
}

/* The steps table: every step where they are at most TOP, else the TOP
 * of longest GPU span, in step order, after a line of the spans' least,
 * median (bcg_percentile's, as the typical step of --svg) and most (a
 * profile of 1000 steps is not 1000 lines; --json has every one). */
static void steps_text(FILE *f, const struct profile *p, unsigned top)
{
	uint32_t n = p->nsteps, shown = n <= top ? n : top;
	struct step_order *order = xcalloc(n + 1, sizeof *order);
	char a[32], b[32], c[32];

	for (uint32_t s = 0; s < n; s++) {
		order[s].step = s;
		order[s].span = (double)prof_span_ns(&p->steps[s].gpu);
	}
	if (shown < n) {
		double *spans = xcalloc(n, sizeof *spans);
		for (uint32_t s = 0; s < n; s++)
			spans[s] = order[s].span;
		us(b, sizeof b, bcg_percentile(spans, n, 50));   /* sorts SPANS */
		us(a, sizeof a, spans[0]);
		us(c, sizeof c, spans[n - 1]);
		free(spans);
		qsort(order, n, sizeof *order, span_cmp);
		fprintf(f, "\nsteps (the %u of %u with the longest GPU span; every one in --json)\n"
		        "  GPU span: least %s, median %s, most %s\n", shown, n, a, b, c);
		qsort(order, shown, sizeof *order, step_cmp);
	} else {
		fprintf(f, "\nsteps\n");
	}
	fprintf(f, "  %4s  %-12s %-10s %7s %12s %12s %12s\n", "#", "step", "phase", "kernels",
	        "span", "busy", "idle");
	for (uint32_t i = 0; i < shown; i++) {
		const uint32_t s = order[i].step;
		const struct prof_span *g = &p->steps[s].gpu;
		us(a, sizeof a, order[i].span);
		us(b, sizeof b, (double)g->busy);
		us(c, sizeof c, order[i].span - (double)g->busy);
		fprintf(f, "  %4u  %-12s %-10s %7u %12s %12s %12s\n", s, p->steps[s].range->text,
		        p->steps[s].phase[0] ? p->steps[s].phase : "-", g->n, a, b, c);
	}
	free(order);
}

static void step_means(const struct profile *p, double *span, double *busy, double *ksum,
                       double *kernels)
{
	*span = *busy = *ksum = *kernels = 0.0;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const struct prof_span *g = &p->steps[s].gpu;
		if (g->n > 0) {
			*span += (double)prof_span_ns(g);
			*busy += (double)g->busy;
		}
		*ksum += (double)g->ksum;
		*kernels += g->n;
	}
	*span = per_step(p, *span);
	*busy = per_step(p, *busy);
	*ksum = per_step(p, *ksum);
	*kernels = per_step(p, *kernels);
}

/* The phases of the matched steps: "timed 4, busy 3". */
static void phases_text(const struct profile *p, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t s = 0; s < p->nsteps && at < len; s++) {
		uint32_t count = 0, seen = 0;
		for (uint32_t r = 0; r < s; r++)
			seen |= strcmp(p->steps[r].phase, p->steps[s].phase) == 0;
		if (seen)
			continue;
		for (uint32_t r = s; r < p->nsteps; r++)
			count += strcmp(p->steps[r].phase, p->steps[s].phase) == 0;
		at += (size_t)snprintf(buf + at, len - at, "%s%s %u", at ? ", " : "",
		                       p->steps[s].phase[0] ? p->steps[s].phase : "(none)", count);
	}
}

void report_text(FILE *f, const struct profile *p, const struct report_names *n, unsigned top)
{
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);
	const struct nsys_trace *t = p->trace;
	double span, busy, ksum, kernels, total_all = (double)attributed_total(p);
	char a[32], b[32], c[32], d[32], e[32], phases[256];
	uint32_t nsegs = 0, nops, nkinds, ngroups;
	uint32_t *order;
	struct kind_sum *ks;
	struct unattr_group *groups;

	for (uint32_t i = 0; i < pv->nitems; i++)
		nsegs += pv->items[i].kind == PLAN_ITEM_SEGMENT;
	step_means(p, &span, &busy, &ksum, &kernels);
	phases_text(p, phases, sizeof phases);

	fprintf(f, "report    %s", n->report);
	if (t->version[0] || t->device[0])
		fprintf(f, " (%s%s%s%s)", t->version[0] ? "Nsight Systems " : "", t->version,
		        t->version[0] && t->device[0] ? ", " : "", t->device);
	fprintf(f, "\nplan      %s\n", n->plan);
	fprintf(f, "variant   %lld token%s, %s: %u segment%s, %u breakpoint%s\n",
	        (long long)p->tokens, BCG_S(p->tokens), plan_mode_name(pv->mode), nsegs,
	        BCG_S(nsegs), pv->nitems - nsegs, BCG_S(pv->nitems - nsegs));
	fprintf(f, "steps     %u (%s)", p->nsteps, phases);
	if (p->unmatched_steps)
		fprintf(f, "; %u more whose items are not the plan's", p->unmatched_steps);
	fprintf(f, "\nkernels   %zu in the report: %llu attributed (%llu graph nodes, %llu in "
	        "breakpoints", t->nkernels,
	        (unsigned long long)(p->graph_kernels + p->break_kernels + p->feed_kernels),
	        (unsigned long long)p->graph_kernels, (unsigned long long)p->break_kernels);
	if (p->feed_kernels)
		fprintf(f, ", %llu writing a step's feeds", (unsigned long long)p->feed_kernels);
	fprintf(f, "), %llu unattributed in steps, %llu outside the steps\n",
	        (unsigned long long)p->unattributed, (unsigned long long)p->outside);
	if (p->grid_mismatch)
		fprintf(f, "note      %llu kernel%s ran with another grid or block than the plan "
		        "records\n", (unsigned long long)p->grid_mismatch, BCG_S(p->grid_mismatch));
	us(a, sizeof a, span);
	us(b, sizeof b, busy);
	us(c, sizeof c, span - busy);
	us(d, sizeof d, ksum);
	fprintf(f, "per step  GPU span %s, busy %s, idle %s (%.1f%%), kernel time %s, %.0f kernels\n",
	        a, b, c, span > 0 ? 100.0 * (span - busy) / span : 0.0, d, kernels);

	steps_text(f, p, top);

	fprintf(f, "\nitems (mean per step)\n  %4s  %-32s %7s %12s %12s %12s %12s\n", "#", "item",
	        "kernels", "kernel time", "span", "idle inside", "gap before");
	for (uint32_t i = 0; i < p->nitems; i++) {
		struct prof_item_mean m;
		profile_item_mean(p, i, &m);
		us(a, sizeof a, m.ksum);
		us(b, sizeof b, m.span);
		us(c, sizeof c, m.span - m.busy);
		us(d, sizeof d, m.gap_before);
		fprintf(f, "  %4u  %-32s %7.0f %12s %12s %12s %12s\n", i, p->item_names[i], m.kernels,
		        a, b, c, d);
	}

	if (nsegs < pv->nitems) {
		fprintf(f, "\nbreaks (mean per step): graph end -> eager kernels -> next graph start\n"
		        "  %-24s %12s %12s %12s %12s  %s\n", "break", "to eager", "eager", "to graph",
		        "total", "why");
		for (uint32_t i = 0; i < p->nitems; i++) {
			struct prof_item_mean m;
			if (pv->items[i].kind != PLAN_ITEM_BREAK)
				continue;
			profile_item_mean(p, i, &m);
			us(a, sizeof a, m.gap_before);
			us(b, sizeof b, m.span);
			us(c, sizeof c, m.gap_after);
			us(d, sizeof d, m.gap_before + m.span + m.gap_after);
			const struct plan_breakpoint *bp = plan_get_breakpoint(p->plan,
			                                                       pv->items[i].index);
			fprintf(f, "  %-24s %12s %12s %12s %12s  %s\n", bp->name, a, b, c, d,
			        bp->detail);
		}
	}

	if (plan_get_origin(p->plan) == PLAN_ORIGIN_RECORDED) {
		/* A recording has no ops: its kernels are credited to the
		 * items above and the graph nodes they ran as; by name here. */
		uint32_t nk;
		struct rec_kernel *rk = rec_kernels(p, &nk);
		double rec_total = 0;
		char name[1024];
		for (uint32_t k = 0; k < nk; k++)
			rec_total += (double)rk[k].total;
		fprintf(f, "\n(a recorded plan has no ops: kernels are credited to its items "
		        "and graph nodes)\n");
		fprintf(f, "\nkernels (top %u of %u by GPU time; mean per step)\n"
		        "  %7s %7s %12s %6s  %s\n", top < nk ? top : nk, nk, "graph", "eager", "time",
		        "share", "kernel");
		for (uint32_t k = 0; k < nk && k < top; k++) {
			us(a, sizeof a, per_step(p, (double)rk[k].total));
			fprintf(f, "  %7.0f %7.0f %12s %5.1f%%  %s\n", per_step(p, (double)rk[k].graph),
			        per_step(p, (double)rk[k].eager), a,
			        rec_total > 0 ? 100.0 * (double)rk[k].total / rec_total : 0.0,
			        bcg_demangle(rk[k].name, name, sizeof name));
		}
		free(rk);
		goto unattributed;
	}
	order = ops_by_time(p, &nops);
	fprintf(f, "\nops (top %u of %u by GPU time; mean per step)\n"
	        "  %-20s %-14s %4s %7s %12s %6s %12s %12s %8s\n",
	        top < nops ? top : nops, nops, "op", "kind", "item", "kernels", "time", "share",
	        "exposed", "bytes", "GB/s");
	for (uint32_t k = 0; k < nops && k < top; k++) {
		uint32_t o = order[k];
		const struct prof_op *po = &p->ops[o];
		double tm = per_step(p, (double)po->total);
		char label[64];
		plan_op_label(p->plan, o, label, sizeof label);
		us(a, sizeof a, tm);
		if (po->bytes >= 0) {
			bcg_human_bytes((uint64_t)po->bytes, b, sizeof b);
			snprintf(c, sizeof c, "%.1f", tm > 0 ? (double)po->bytes / tm : 0.0);
		} else {
			snprintf(b, sizeof b, "?");
			snprintf(c, sizeof c, "-");
		}
		us(d, sizeof d, per_step(p, (double)po->exposed));
		fprintf(f, "  %-20s %-14s %4u %7.0f %12s %5.1f%% %12s %12s %8s\n", label,
		        plan_get_op(p->plan, o)->kind, op_item(p, o), per_step(p, (double)po->kernels),
		        a, total_all > 0 ? 100.0 * (double)po->total / total_all : 0.0, d, b, c);
	}
	free(order);

	ks = kinds(p, &nkinds);
	fprintf(f, "\nop kinds (mean per step)\n  %-14s %4s %7s %12s %6s %12s %6s\n", "kind", "ops",
	        "kernels", "time", "share", "exposed", "of busy");
	for (uint32_t k = 0; k < nkinds; k++) {
		double ex = per_step(p, (double)ks[k].exposed);
		us(a, sizeof a, per_step(p, (double)ks[k].total));
		us(b, sizeof b, ex);
		fprintf(f, "  %-14s %4u %7.0f %12s %5.1f%% %12s %5.1f%%\n", ks[k].kind, ks[k].ops,
		        per_step(p, (double)ks[k].kernels), a,
		        total_all > 0 ? 100.0 * (double)ks[k].total / total_all : 0.0, b,
		        busy > 0 ? 100.0 * ex / busy : 0.0);
	}
	free(ks);

unattributed:
	groups = unattr_groups(p, &ngroups);
	if (ngroups > 0) {
		fprintf(f, "\nunattributed (%llu kernel%s in %u group%s, top %u; every one in --json)\n"
		        "  %7s %12s  %-28s %s\n",
		        (unsigned long long)(p->unattributed + p->outside),
		        BCG_S(p->unattributed + p->outside), ngroups, BCG_S(ngroups),
		        top < ngroups ? top : ngroups, "kernels", "total", "kernel", "why");
		for (uint32_t k = 0; k < ngroups && k < top; k++) {
			us(e, sizeof e, (double)groups[k].total);
			fprintf(f, "  %7llu %12s  %-28s %s\n", (unsigned long long)groups[k].kernels, e,
			        groups[k].name, groups[k].why);
		}
	}
	free(groups);
}

static void jdouble_or_null(struct plan_json *j, double v)
{
	if (isnan(v))
		plan_json_null(j);
	else
		plan_json_double(j, v);
}

static void jspan(struct plan_json *j, const struct prof_span *g)
{
	plan_json_key(j, "kernels");
	plan_json_uint(j, g->n);
	plan_json_key(j, "start_ns");
	if (g->n)
		plan_json_int(j, g->first);
	else
		plan_json_null(j);
	plan_json_key(j, "span_ns");
	plan_json_int(j, prof_span_ns(g));
	plan_json_key(j, "busy_ns");
	plan_json_int(j, g->busy);
	plan_json_key(j, "idle_ns");
	plan_json_int(j, prof_span_ns(g) - g->busy);
	plan_json_key(j, "kernel_ns");
	plan_json_int(j, g->ksum);
}

static void report_json_body(struct plan_json *j, const struct profile *p,
                             const struct report_names *n)
{
	const struct plan_variant *pv = plan_get_variant(p->plan, p->variant);
	const struct nsys_trace *t = p->trace;
	double span, busy, ksum, kernels, total_all = (double)attributed_total(p);
	uint32_t nops, nkinds;
	uint32_t *order;
	struct kind_sum *ks;
	char label[64];

	step_means(p, &span, &busy, &ksum, &kernels);
	plan_json_object_begin(j);
	plan_json_key(j, "schema");
	plan_json_uint(j, REPORT_JSON_SCHEMA);
	plan_json_key(j, "report");
	plan_json_string(j, n->report);
	plan_json_key(j, "plan");
	plan_json_string(j, n->plan);
	plan_json_key(j, "nsys_version");
	plan_json_string(j, t->version);
	plan_json_key(j, "device");
	plan_json_string(j, t->device);
	plan_json_key(j, "variant");
	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, p->variant);
	plan_json_key(j, "tokens");
	plan_json_int(j, p->tokens);
	plan_json_key(j, "mode");
	plan_json_string(j, plan_mode_name(pv->mode));
	plan_json_object_end(j);

	plan_json_key(j, "kernels");
	plan_json_object_begin(j);
	plan_json_key(j, "total");
	plan_json_uint(j, t->nkernels);
	plan_json_key(j, "graph");
	plan_json_uint(j, p->graph_kernels);
	plan_json_key(j, "break");
	plan_json_uint(j, p->break_kernels);
	plan_json_key(j, "feed");
	plan_json_uint(j, p->feed_kernels);
	plan_json_key(j, "unattributed");
	plan_json_uint(j, p->unattributed);
	plan_json_key(j, "outside");
	plan_json_uint(j, p->outside);
	plan_json_key(j, "grid_mismatch");
	plan_json_uint(j, p->grid_mismatch);
	plan_json_object_end(j);

	plan_json_key(j, "per_step");
	plan_json_object_begin(j);
	plan_json_key(j, "kernels");
	plan_json_double(j, kernels);
	plan_json_key(j, "span_ns");
	plan_json_double(j, span);
	plan_json_key(j, "busy_ns");
	plan_json_double(j, busy);
	plan_json_key(j, "idle_ns");
	plan_json_double(j, span - busy);
	plan_json_key(j, "kernel_ns");
	plan_json_double(j, ksum);
	plan_json_object_end(j);

	plan_json_key(j, "unmatched_steps");
	plan_json_uint(j, p->unmatched_steps);
	plan_json_key(j, "steps");
	plan_json_array_begin(j);
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const struct prof_step *st = &p->steps[s];
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, s);
		plan_json_key(j, "name");
		plan_json_string(j, st->range->text);
		plan_json_key(j, "number");
		plan_json_int(j, st->number);
		plan_json_key(j, "phase");
		plan_json_string(j, st->phase);
		jspan(j, &st->gpu);
		plan_json_key(j, "items");
		plan_json_array_begin(j);
		for (uint32_t i = 0; i < p->nitems; i++) {
			plan_json_object_begin(j);
			jspan(j, &st->item_gpu[i]);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "items");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < p->nitems; i++) {
		struct prof_item_mean m;
		int seg = pv->items[i].kind == PLAN_ITEM_SEGMENT;
		profile_item_mean(p, i, &m);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "kind");
		plan_json_string(j, seg ? "segment" : "break");
		plan_json_key(j, "name");
		plan_json_string(j, p->item_names[i]);
		plan_json_key(j, seg ? "segment" : "breakpoint");
		plan_json_uint(j, pv->items[i].index);
		plan_json_key(j, "kernels");
		plan_json_double(j, m.kernels);
		plan_json_key(j, "kernel_ns");
		plan_json_double(j, m.ksum);
		plan_json_key(j, "span_ns");
		plan_json_double(j, m.span);
		plan_json_key(j, "busy_ns");
		plan_json_double(j, m.busy);
		plan_json_key(j, "gap_before_ns");
		jdouble_or_null(j, m.gap_before);
		plan_json_key(j, "gap_after_ns");
		jdouble_or_null(j, m.gap_after);
		plan_json_key(j, "break_cost_ns");
		if (seg || isnan(m.gap_before) || isnan(m.gap_after))
			plan_json_null(j);
		else
			plan_json_double(j, m.gap_before + m.span + m.gap_after);
		/* why the op breaks the graph: attention's host length, the
		 * experts' per-expert counts, ... */
		plan_json_key(j, "why");
		if (seg)
			plan_json_null(j);
		else
			plan_json_string(j, plan_get_breakpoint(p->plan, pv->items[i].index)->detail);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	order = ops_by_time(p, &nops);
	plan_json_key(j, "ops");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < nops; k++) {
		uint32_t o = order[k];
		const struct prof_op *po = &p->ops[o];
		double tm = per_step(p, (double)po->total);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, o);
		plan_json_key(j, "name");
		plan_json_string(j, plan_op_label(p->plan, o, label, sizeof label));
		plan_json_key(j, "kind");
		plan_json_string(j, plan_get_op(p->plan, o)->kind);
		plan_json_key(j, "item");
		plan_json_uint(j, op_item(p, o));
		plan_json_key(j, "kernels");
		plan_json_uint(j, po->kernels);
		plan_json_key(j, "total_ns");
		plan_json_int(j, po->total);
		plan_json_key(j, "per_step_ns");
		plan_json_double(j, tm);
		plan_json_key(j, "share");
		plan_json_double(j, total_all > 0 ? (double)po->total / total_all : 0.0);
		plan_json_key(j, "exposed_ns");
		plan_json_int(j, po->exposed);
		plan_json_key(j, "exposed_per_step_ns");
		plan_json_double(j, per_step(p, (double)po->exposed));
		plan_json_key(j, "bytes");
		if (po->bytes >= 0)
			plan_json_int(j, po->bytes);
		else
			plan_json_null(j);
		plan_json_key(j, "gbps");
		if (po->bytes >= 0 && tm > 0)
			plan_json_double(j, (double)po->bytes / tm);
		else
			plan_json_null(j);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	free(order);

	ks = kinds(p, &nkinds);
	plan_json_key(j, "kinds");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < nkinds; k++) {
		plan_json_object_begin(j);
		plan_json_key(j, "kind");
		plan_json_string(j, ks[k].kind);
		plan_json_key(j, "ops");
		plan_json_uint(j, ks[k].ops);
		plan_json_key(j, "kernels");
		plan_json_uint(j, ks[k].kernels);
		plan_json_key(j, "total_ns");
		plan_json_int(j, ks[k].total);
		plan_json_key(j, "per_step_ns");
		plan_json_double(j, per_step(p, (double)ks[k].total));
		plan_json_key(j, "share");
		plan_json_double(j, total_all > 0 ? (double)ks[k].total / total_all : 0.0);
		plan_json_key(j, "exposed_ns");
		plan_json_int(j, ks[k].exposed);
		plan_json_key(j, "exposed_per_step_ns");
		plan_json_double(j, per_step(p, (double)ks[k].exposed));
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	free(ks);

	plan_json_key(j, "unattributed");
	plan_json_array_begin(j);
	for (size_t k = 0; k < t->nkernels; k++) {
		const struct prof_kattr *a = &p->kattr[k];
		if (a->why == NULL)
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, t->kernels[k].name);
		plan_json_key(j, "start_ns");
		plan_json_int(j, t->kernels[k].start);
		plan_json_key(j, "duration_ns");
		plan_json_int(j, t->kernels[k].end - t->kernels[k].start);
		plan_json_key(j, "step");
		if (a->step == PLAN_NONE)
			plan_json_null(j);
		else
			plan_json_uint(j, a->step);
		plan_json_key(j, "range");
		plan_json_string(j, a->where);
		plan_json_key(j, "why");
		plan_json_string(j, a->why);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
}

void report_json(FILE *f, const struct profile *p, const struct report_names *n)
{
	struct plan_json *j = plan_json_new(f);

	if (j == NULL)
		return;
	report_json_body(j, p, n);
	plan_json_free(j);
}

/*
 * A tensor-parallel plan: one report per rank.
 */

/* Op O of rank 0's plan in rank R's profile: the op of the same label
 * (the sharding pass names the collectives it inserts after their op). */
static uint32_t rank_op(const struct profile *pr, const struct profile *p0, uint32_t o)
{
	char a[64], b[64];

	plan_op_label(p0->plan, o, a, sizeof a);
	if (o < plan_count_ops(pr->plan) && strcmp(plan_op_label(pr->plan, o, b, sizeof b), a) == 0)
		return o;
	for (uint32_t k = 0; k < plan_count_ops(pr->plan); k++)
		if (strcmp(plan_op_label(pr->plan, k, b, sizeof b), a) == 0)
			return k;
	return PLAN_NONE;
}

/* How op O ran in P's variant: in a graph, eagerly between graphs, or
 * not at all. */
static const char *op_form(const struct profile *p, uint32_t o)
{
	uint32_t i = o == PLAN_NONE ? PLAN_NONE : op_item(p, o);

	if (i == PLAN_NONE)
		return "-";
	return plan_get_variant(p->plan, p->variant)->items[i].kind == PLAN_ITEM_SEGMENT
	       ? "captured" : "eager";
}

void report_text_ranks(FILE *f, const struct profile *ps, const struct report_names *ns,
                       uint32_t world, unsigned top)
{
	const struct profile *p0 = &ps[0];
	char a[32], label[64];
	uint32_t ncoll = 0;
	double *sum = xcalloc(world, sizeof *sum);

	for (uint32_t r = 0; r < world; r++) {
		fprintf(f, "%s== rank %u of %u ==\n", r ? "\n" : "", r, world);
		report_text(f, &ps[r], &ns[r], top);
	}
	for (uint32_t o = 0; o < plan_count_ops(p0->plan); o++)
		ncoll += op_is_collective(p0->plan, o);
	fprintf(f, "\n== collectives (%u; kernel time, mean per step of each rank) ==\n", ncoll);
	if (ncoll == 0) {
		fprintf(f, "  (the plan has none)\n");
		free(sum);
		return;
	}
	fprintf(f, "  %-24s %-10s %10s %-9s %7s", "op", "kind", "bytes", "form", "kernels");
	for (uint32_t r = 0; r < world; r++) {
		snprintf(a, sizeof a, "rank %u", r);
		fprintf(f, " %11s", a);
	}
	fprintf(f, " %11s\n", "max");
	for (uint32_t o = 0; o < plan_count_ops(p0->plan); o++) {
		const char *form = op_form(p0, o);
		double mx = 0.0;
		if (!op_is_collective(p0->plan, o))
			continue;
		for (uint32_t r = 1; r < world; r++)
			if (strcmp(op_form(&ps[r], rank_op(&ps[r], p0, o)), form) != 0)
				form = "differs";
		fprintf(f, "  %-24s %-10s %10s %-9s %7.1f", plan_op_label(p0->plan, o, label, sizeof label),
		        plan_get_op(p0->plan, o)->kind,
		        bcg_human_bytes(plan_tensor_bytes(p0->plan, plan_get_op(p0->plan, o)->out[0],
		                                          p0->tokens), a, sizeof a),
		        form, per_step(p0, (double)p0->ops[o].kernels));
		for (uint32_t r = 0; r < world; r++) {
			uint32_t k = rank_op(&ps[r], p0, o);
			double tm = k == PLAN_NONE ? NAN : per_step(&ps[r], (double)ps[r].ops[k].total);
			us(a, sizeof a, tm);
			fprintf(f, " %11s", a);
			if (!isnan(tm)) {
				sum[r] += tm;
				mx = tm > mx ? tm : mx;
			}
		}
		us(a, sizeof a, mx);
		fprintf(f, " %11s\n", a);
	}
	fprintf(f, "  %-24s %-10s %10s %-9s %7s", "all", "", "", "", "");
	{
		double mx = 0.0;
		for (uint32_t r = 0; r < world; r++) {
			us(a, sizeof a, sum[r]);
			fprintf(f, " %11s", a);
			mx = sum[r] > mx ? sum[r] : mx;
		}
		us(a, sizeof a, mx);
		fprintf(f, " %11s\n", a);
	}
	free(sum);
}

void report_json_ranks(FILE *f, const struct profile *ps, const struct report_names *ns,
                       uint32_t world)
{
	const struct profile *p0 = &ps[0];
	struct plan_json *j = plan_json_new(f);
	char label[64];

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "schema");
	plan_json_uint(j, REPORT_JSON_SCHEMA);
	plan_json_key(j, "plan");
	plan_json_string(j, ns[0].plan);
	plan_json_key(j, "world");
	plan_json_uint(j, world);
	plan_json_key(j, "ranks");
	plan_json_array_begin(j);
	for (uint32_t r = 0; r < world; r++) {
		plan_json_object_begin(j);
		plan_json_key(j, "rank");
		plan_json_uint(j, r);
		plan_json_key(j, "report");
		report_json_body(j, &ps[r], &ns[r]);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "collectives");
	plan_json_array_begin(j);
	for (uint32_t o = 0; o < plan_count_ops(p0->plan); o++) {
		double mx = 0.0;
		if (!op_is_collective(p0->plan, o))
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, plan_op_label(p0->plan, o, label, sizeof label));
		plan_json_key(j, "kind");
		plan_json_string(j, plan_get_op(p0->plan, o)->kind);
		plan_json_key(j, "bytes");
		plan_json_uint(j, plan_tensor_bytes(p0->plan, plan_get_op(p0->plan, o)->out[0],
		                                    p0->tokens));
		plan_json_key(j, "ranks");
		plan_json_array_begin(j);
		for (uint32_t r = 0; r < world; r++) {
			uint32_t k = rank_op(&ps[r], p0, o);
			plan_json_object_begin(j);
			plan_json_key(j, "rank");
			plan_json_uint(j, r);
			plan_json_key(j, "op");
			if (k == PLAN_NONE)
				plan_json_null(j);
			else
				plan_json_uint(j, k);
			plan_json_key(j, "form");
			plan_json_string(j, op_form(&ps[r], k));
			plan_json_key(j, "kernels_per_step");
			plan_json_double(j, k == PLAN_NONE ? 0.0 : per_step(&ps[r], (double)ps[r].ops[k].kernels));
			plan_json_key(j, "per_step_ns");
			if (k == PLAN_NONE) {
				plan_json_null(j);
			} else {
				double tm = per_step(&ps[r], (double)ps[r].ops[k].total);
				plan_json_double(j, tm);
				mx = tm > mx ? tm : mx;
			}
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_key(j, "max_per_step_ns");
		plan_json_double(j, mx);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_free(j);
}
