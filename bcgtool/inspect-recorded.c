/*
 * inspect-recorded.c - bcgtool inspect for a recorded plan: what `bcgtool
 * record` saw the program run, for people. A recorded plan has no
 * program (dims, tensors, ops): its summary is the recording, and its
 * sections the steps, nodes, modules, allocations and kernels.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "demangle.h"
#include "inspect-recorded.h"
#include "record/recorded-replay.h"
#include "util.h"

#define NAME_MAX_TEXT 1024

struct rview {
	const plan_t       *plan;
	const char         *path;
	uint32_t            variant;
	const struct style *st;
	int                 printed;
};

static void r_title(struct rview *v, const char *title)
{
	if (v->printed)
		putchar('\n');
	v->printed = 1;
	printf("%s%s%s\n", v->st->bold, title, v->st->reset);
}

static void r_key(const struct rview *v, const char *key)
{
	printf("%s%-10s%s", v->st->bold, key, v->st->reset);
}

/* A launch for people: its kernel's name demangled. */
static const char *r_launch(const plan_t *plan, uint32_t launch, char *buf, size_t len)
{
	const struct plan_launch *l = plan_get_launch(plan, launch);
	char name[NAME_MAX_TEXT];
	const char *shown = NULL;

	if (l != NULL && l->type == PLAN_NODE_KERNEL)
		shown = bcg_demangle(plan_get_function(plan, l->function)->name, name, sizeof name);
	return plan_launch_text(plan, launch, shown, buf, len);
}

static void r_counts(const plan_t *plan, uint32_t vi, uint32_t *nseg, uint32_t *nbp,
                     uint32_t *nnodes)
{
	const struct plan_variant *v = plan_get_variant(plan, vi);

	*nseg = *nbp = *nnodes = 0;
	for (uint32_t k = 0; k < v->nitems; k++) {
		if (v->items[k].kind == PLAN_ITEM_SEGMENT) {
			(*nseg)++;
			*nnodes += plan_get_segment(plan, v->items[k].index)->nnodes;
		} else {
			(*nbp)++;
		}
	}
}

static void r_summary(struct rview *v)
{
	const plan_t *plan = v->plan;
	const struct plan_meta *m = plan_get_meta(plan);
	const struct plan_recording *r = plan_get_recording(plan);
	char a[32], b[32], when[64] = "-";
	unsigned major, minor;
	uint32_t kept = 0, snap = 0;
	uint64_t snap_bytes = 0, image_bytes = 0;
	struct stat sb;
	time_t t = (time_t)m->created;
	struct tm tm;
	struct table *tb;
	int several = 0;

	plan_get_format_version(plan, &major, &minor);
	if ((int64_t)t == m->created && gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	r_key(v, "plan");
	if (stat(v->path, &sb) == 0 && S_ISREG(sb.st_mode))
		printf("%s (%s, format %u.%u, recorded)\n", v->path,
		       bcg_human_bytes((uint64_t)sb.st_size, a, sizeof a), major, minor);
	else
		printf("%s (format %u.%u, recorded)\n", v->path, major, minor);
	r_key(v, "command");
	printf("%s\n", r->command);
	r_key(v, "run");
	printf("pid %u, %s, %" PRIu64 " step%s (%s)\n", r->pid,
	       plan_ns_text(r->wall_ns, a, sizeof a), r->steps, r->steps == 1 ? "" : "s",
	       strncmp(r->step_rule, "nvtx:", 5) == 0 ? r->step_rule : "repeating launches");
	r_key(v, "libraries");
	printf("%s\n", r->libraries[0] ? r->libraries : "-");
	r_key(v, "tool");
	printf("%s\n", m->tool[0] ? m->tool : "-");
	r_key(v, "device");
	if (m->device[0] != '\0')
		printf("%s (compute capability %d.%d)", m->device, (int)m->cc_major,
		       (int)m->cc_minor);
	else
		printf("-");
	if (plan_count_variants(plan) > 0) {
		uint32_t d0 = plan_get_variant(plan, 0)->device, nd = 1;
		for (uint32_t i = 1; i < plan_count_variants(plan); i++) {
			uint32_t d = plan_get_variant(plan, i)->device, k;
			for (k = 0; k < i && plan_get_variant(plan, k)->device != d; k++)
				;
			nd += k == i;
		}
		if (nd > 1)
			printf("; variants on %u devices (device %u's shown)", nd, d0);
		else if (d0 != 0)
			printf("; device %u", d0);
	}
	putchar('\n');
	r_key(v, "toolkit");
	printf("CUDA runtime %s, driver %s\n", plan_version_text(m->cuda_runtime, 0, a, sizeof a),
	       plan_version_text(m->cuda_driver, 0, b, sizeof b));
	r_key(v, "created");
	printf("%s\n", when);
	for (uint32_t i = 0; i < plan_count_modules(plan); i++)
		if (plan_get_module(plan, i)->flags & PLAN_MODULE_IMAGE) {
			kept++;
			image_bytes += plan_get_module(plan, i)->bytes;
		}
	for (uint32_t i = 0; i < plan_count_allocs(plan); i++)
		if (plan_get_alloc(plan, i)->flags & PLAN_ALLOC_SNAPSHOT) {
			snap++;
			snap_bytes += plan_get_alloc(plan, i)->bytes;
		}
	r_key(v, "modules");
	printf("%u (%u kept, %s of images)\n", plan_count_modules(plan), kept,
	       bcg_human_bytes(image_bytes, a, sizeof a));
	r_key(v, "launches");
	printf("%u, of %u function%s\n", plan_count_launches(plan), plan_count_functions(plan),
	       plan_count_functions(plan) == 1 ? "" : "s");
	r_key(v, "memory");
	printf("%u allocation%s (%u with contents, %s)\n", plan_count_allocs(plan),
	       plan_count_allocs(plan) == 1 ? "" : "s", snap,
	       bcg_human_bytes(snap_bytes, a, sizeof a));
	r_key(v, "replay");
	printf("%s\n", kept == plan_count_modules(plan) && (r->flags & PLAN_RECORD_SNAPSHOT) ?
	       "every module and the memory's contents are kept" :
	       kept == plan_count_modules(plan) ? "every module is kept; the memory's contents are not" :
	       "not every module is kept (bcgtool inspect --modules says why)");
	v->printed = 1;

	r_title(v, "variants");
	/* the device column only where the variants ran on several */
	for (uint32_t i = 1; i < plan_count_variants(plan); i++)
		if (plan_get_variant(plan, i)->device != plan_get_variant(plan, 0)->device)
			several = 1;
	tb = table_new(several ? "rlrrrrrrrrr" : "rlrrrrrrrr");
	table_cell(tb, "number");
	table_cell(tb, "label");
	table_cell(tb, "seen");
	table_cell(tb, "median");
	table_cell(tb, "busy");
	table_cell(tb, "gaps");
	table_cell(tb, "items");
	table_cell(tb, "segments");
	table_cell(tb, "breaks");
	table_cell(tb, "nodes");
	if (several)
		table_cell(tb, "device");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_variants(plan); i++) {
		const struct plan_variant *var = plan_get_variant(plan, i);
		uint32_t ns, nb, nn;
		uint64_t busy;
		if (v->variant != PLAN_NONE && v->variant != i)
			continue;
		r_counts(plan, i, &ns, &nb, &nn);
		table_cell(tb, "%lld", (long long)var->tokens);
		table_cell(tb, "%s", var->label[0] ? var->label : "-");
		table_cell(tb, "%" PRIu64, var->seen);
		table_cell(tb, "%s", plan_ns_text(var->recorded_ns, a, sizeof a));
		/* the GPU's share of the step and the rest: the host's gaps
		 * between the items (recorded-replay.h) */
		busy = recorded_busy_ns(plan, var);
		table_cell(tb, "%s", plan_ns_text(busy, a, sizeof a));
		table_cell(tb, "%s", busy == 0 || var->recorded_ns == 0 ? "-"
		           : var->recorded_ns <= busy ? "0"
		           : plan_ns_text(var->recorded_ns - busy, a, sizeof a));
		table_cell(tb, "%u", var->nitems);
		table_cell(tb, "%u", ns);
		table_cell(tb, "%u", nb);
		table_cell(tb, "%u", nn);
		if (several)
			table_cell(tb, "%u", var->device);
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", v->st);
	table_free(tb);
}

struct kcount {
	const char *name;    /* raw */
	uint32_t    count;
};

static int by_count(const void *x, const void *y)
{
	const struct kcount *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Add NAME to the counts K (N of them, room for as many as needed). */
static void kcount_add(struct kcount *k, uint32_t *n, const char *name)
{
	for (uint32_t i = 0; i < *n; i++)
		if (strcmp(k[i].name, name) == 0) {
			k[i].count++;
			return;
		}
	k[*n].name = name;
	k[*n].count = 1;
	(*n)++;
}

/* Where item IT started within its step (format 1.7), as ", at +40.0
 * us (launched +31.2 us)", for a variant with offsets HAVE
 * (PLAN_OFFSETS_*); "" without. */
static const char *r_offsets(const plan_t *plan, const struct plan_item *it, unsigned have,
                             char *buf, size_t len)
{
	uint64_t start, issue;
	char ta[32], tb[32];
	const char *a, *b;

	plan_item_offsets(plan, it, &start, &issue);
	if (!(have & PLAN_OFFSETS_START) && !(have & PLAN_OFFSETS_ISSUE)) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	/* plan_ns_text writes 0 as "-": the step's first item is at +0 */
	a = start == 0 ? "0" : plan_ns_text(start, ta, sizeof ta);
	b = issue == 0 ? "0" : plan_ns_text(issue, tb, sizeof tb);
	if ((have & PLAN_OFFSETS_START) && (have & PLAN_OFFSETS_ISSUE))
		snprintf(buf, len, ", at +%s (launched +%s)", a, b);
	else if (have & PLAN_OFFSETS_START)
		snprintf(buf, len, ", at +%s", a);
	else
		snprintf(buf, len, ", launched +%s", b);
	return buf;
}

static void r_segment(struct rview *v, uint32_t si, uint32_t item, const char *at)
{
	const plan_t *plan = v->plan;
	const struct plan_segment *s = plan_get_segment(plan, si);
	struct kcount *k = xcalloc((size_t)s->nnodes + 1, sizeof *k);
	uint32_t nk = 0, kernels = 0, first, period, count;
	char a[32], name[NAME_MAX_TEXT];

	for (uint32_t n = 0; n < s->nnodes; n++)
		if (s->nodes[n].type == PLAN_NODE_KERNEL) {
			kernels++;
			kcount_add(k, &nk, s->nodes[n].kernel);
		}
	printf("  item %u  segment %u: %u node%s (%u kernel%s), %s%s, fingerprint 0x%016" PRIx64
	       "\n", item, si, s->nnodes, s->nnodes == 1 ? "" : "s", kernels,
	       kernels == 1 ? "" : "s", plan_ns_text(s->recorded_ns, a, sizeof a), at,
	       s->fingerprint);
	if (plan_segment_fold(plan, s, &first, &period, &count))
		printf("          nodes %u-%u: %u node%s repeated x %u\n", first,
		       first + period * count - 1, period, period == 1 ? "" : "s", count);
	qsort(k, nk, sizeof *k, by_count);
	for (uint32_t i = 0; i < nk; i++)
		printf("          %4u x %s\n", k[i].count, bcg_demangle(k[i].name, name, sizeof name));
	free(k);
}

static void r_break(struct rview *v, uint32_t bi, uint32_t item, const char *at)
{
	const struct plan_breakpoint *b = plan_get_breakpoint(v->plan, bi);
	char a[32], text[NAME_MAX_TEXT + 128];

	printf("  item %u  break %s: %u launch%s (%u-%u), %s%s", item, b->name, b->launch_count,
	       b->launch_count == 1 ? "" : "es", b->launch_first,
	       b->launch_first + b->launch_count - 1, plan_ns_text(b->recorded_ns, a, sizeof a),
	       at);
	if (b->detail[0] != '\0')
		printf(": %s", b->detail);
	putchar('\n');
	for (uint32_t l = 0; l < b->launch_count; l++)
		printf("          %s\n", r_launch(v->plan, b->launch_first + l, text, sizeof text));
}

static void r_steps(struct rview *v)
{
	char title[256], at[96];

	for (uint32_t i = 0; i < plan_count_variants(v->plan); i++) {
		const struct plan_variant *var = plan_get_variant(v->plan, i);
		if (v->variant != PLAN_NONE && v->variant != i)
			continue;
		snprintf(title, sizeof title, "step of variant %lld \"%s\"", (long long)var->tokens,
		         var->label);
		r_title(v, title);
		/* 1.7: where each item started within the step (plan.h) */
		unsigned have = plan_variant_offsets(v->plan, i, NULL);
		if (var->nitems < 2)
			have = 0;   /* one item: nothing to say */
		for (uint32_t k = 0; k < var->nitems; k++) {
			r_offsets(v->plan, &var->items[k], have, at, sizeof at);
			if (var->items[k].kind == PLAN_ITEM_SEGMENT)
				r_segment(v, var->items[k].index, k, at);
			else
				r_break(v, var->items[k].index, k, at);
		}
	}
}

static void r_nodes(struct rview *v)
{
	const plan_t *plan = v->plan;
	char title[128], text[NAME_MAX_TEXT + 128], e[96];

	for (uint32_t si = 0; si < plan_count_segments(plan); si++) {
		const struct plan_segment *s = plan_get_segment(plan, si);
		if (v->variant != PLAN_NONE && v->variant != s->variant)
			continue;
		snprintf(title, sizeof title, "nodes of segment %u (variant %lld)", si,
		         (long long)plan_get_variant(plan, s->variant)->tokens);
		r_title(v, title);
		for (uint32_t n = 0; n < s->nnodes; n++) {
			const struct plan_node *nd = &s->nodes[n];
			if (nd->launch != PLAN_NONE)
				printf("  %4u  launch %u: %s\n", n, nd->launch,
				       r_launch(plan, nd->launch, text, sizeof text));
			else
				printf("  %4u  %s\n", n, plan_node_type_name(nd->type));
		}
		if (s->nedges > 0) {
			printf("  edges");
			for (uint32_t k = 0; k < s->nedges; k++)
				printf("%s %s", k ? "," : "", plan_edge_text(&s->edges[k], e, sizeof e));
			putchar('\n');
		}
	}
}

static void r_modules(struct rview *v)
{
	const plan_t *plan = v->plan;
	struct table *tb = table_new("rlrlll");
	char a[32];

	r_title(v, "modules");
	table_cell(tb, "index");
	table_cell(tb, "name");
	table_cell(tb, "bytes");
	table_cell(tb, "xxh64");
	table_cell(tb, "kept");
	table_cell(tb, "functions");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_modules(plan); i++) {
		const struct plan_module *m = plan_get_module(plan, i);
		uint32_t nf = 0;
		for (uint32_t f = 0; f < plan_count_functions(plan); f++)
			nf += plan_get_function(plan, f)->module == i;
		table_cell(tb, "%u", i);
		table_cell(tb, "%s", m->name[0] ? m->name : "-");
		table_cell(tb, "%s", bcg_human_bytes(m->bytes, a, sizeof a));
		table_cell(tb, "%016" PRIx64, m->hash);
		if (m->flags & PLAN_MODULE_IMAGE)
			table_cell(tb, "yes");
		else
			table_cell(tb, "no: %s", m->note);
		table_cell(tb, "%u", nf);
		table_end_row(tb, (m->flags & PLAN_MODULE_IMAGE) ? NULL : v->st->yellow);
	}
	table_print(tb, stdout, "  ", v->st);
	table_free(tb);
}

static void r_allocs(struct rview *v)
{
	const plan_t *plan = v->plan;
	struct table *tb = table_new("rrrrl");
	char a[32];

	r_title(v, "allocations");
	table_cell(tb, "index");
	table_cell(tb, "device");
	table_cell(tb, "address");
	table_cell(tb, "bytes");
	table_cell(tb, "contents");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_allocs(plan); i++) {
		const struct plan_alloc *al = plan_get_alloc(plan, i);
		table_cell(tb, "a%u", i);
		table_cell(tb, "%u", al->device);
		table_cell(tb, "0x%" PRIx64, al->address);
		table_cell(tb, "%s", bcg_human_bytes(al->bytes, a, sizeof a));
		table_cell(tb, "%s%s", (al->flags & PLAN_ALLOC_SNAPSHOT) ? "kept" : "not kept",
		           (al->flags & PLAN_ALLOC_VMM) ? " (cuMemMap)" : "");
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", v->st);
	table_free(tb);
}

static void r_kernels(struct rview *v)
{
	const plan_t *plan = v->plan;
	uint32_t nf = plan_count_functions(plan);
	uint32_t *graph = xcalloc((size_t)nf + 1, sizeof *graph);
	uint32_t *eager = xcalloc((size_t)nf + 1, sizeof *eager);
	struct table *tb = table_new("rrl");
	char name[NAME_MAX_TEXT];

	for (uint32_t si = 0; si < plan_count_segments(plan); si++) {
		const struct plan_segment *s = plan_get_segment(plan, si);
		if (v->variant != PLAN_NONE && v->variant != s->variant)
			continue;
		for (uint32_t n = 0; n < s->nnodes; n++) {
			const struct plan_launch *l = plan_get_launch(plan, s->nodes[n].launch);
			if (l != NULL && l->type == PLAN_NODE_KERNEL)
				graph[l->function]++;
		}
	}
	for (uint32_t bi = 0; bi < plan_count_breakpoints(plan); bi++) {
		const struct plan_breakpoint *b = plan_get_breakpoint(plan, bi);
		if (v->variant != PLAN_NONE && v->variant != b->variant)
			continue;
		for (uint32_t k = 0; k < b->launch_count; k++) {
			const struct plan_launch *l = plan_get_launch(plan, b->launch_first + k);
			if (l != NULL && l->type == PLAN_NODE_KERNEL)
				eager[l->function]++;
		}
	}
	r_title(v, "kernels");
	table_cell(tb, "in graphs");
	table_cell(tb, "eager");
	table_cell(tb, "kernel");
	table_end_row(tb, NULL);
	for (uint32_t f = 0; f < nf; f++) {
		if (graph[f] + eager[f] == 0)
			continue;
		table_cell(tb, "%u", graph[f]);
		table_cell(tb, "%u", eager[f]);
		table_cell(tb, "%s", bcg_demangle(plan_get_function(plan, f)->name, name, sizeof name));
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", v->st);
	table_free(tb);
	free(graph);
	free(eager);
}

void inspect_recorded(const plan_t *plan, const char *path, uint32_t variant,
                      const struct style *st, unsigned what)
{
	struct rview v = { plan, path, variant, st, 0 };

	if (what == 0) {
		r_summary(&v);
		return;
	}
	if (what & INSPECT_REC_STEPS)
		r_steps(&v);
	if (what & INSPECT_REC_NODES)
		r_nodes(&v);
	if (what & INSPECT_REC_MODULES)
		r_modules(&v);
	if (what & INSPECT_REC_ALLOCS)
		r_allocs(&v);
	if (what & INSPECT_REC_KERNELS)
		r_kernels(&v);
}
