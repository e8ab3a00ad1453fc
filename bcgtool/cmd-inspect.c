/*
 * cmd-inspect.c - bcgtool inspect: show what a plan holds.
 *
 * Without a section option it prints the summary: where the plan came
 * from, its variants and arena. Each section option prints one table
 * instead, in a fixed order whatever the order of the options. --json and
 * --dot hand the whole plan to libplan's dumps.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd.h"
#include "demangle.h"
#include "engine/engine.h"
#include "inspect-recorded.h"
#include "inspect.h"
#include "plan.h"
#include "table.h"
#include "util.h"

static int cmd_inspect_exec(int argc, char **argv);

const struct cmd_entry cmd_inspect_entry = {
	.name = "inspect",
	.usage = "[--all] [--dims] [--vars] [--tensors] [--ops] [--items] [--segments] "
	         "[--breakpoints] [--nodes] [--choices] [--dispatch] [--checks] [--stats] "
	         "[--modules] [--allocations] [--variant T] "
	         "[--json | --dot [--nodes]] [--color WHEN] PLAN",
	.summary = "show what a plan holds",
	.options =
		"      --all          every section below, in this order\n"
		"      --dims         the dims and their values\n"
		"      --vars         the host vars\n"
		"      --tensors      name, dtype, shape, role, arena offset, bytes, contents\n"
		"      --ops          the ops: kind, inputs, outputs, attributes\n"
		"      --items        each variant's step: its items in execution order\n"
		"      --segments     each variant's segments: ops, nodes, fingerprint\n"
		"      --breakpoints  each variant's breakpoints: op, reason, tensors\n"
		"      --nodes        per segment: node type, kernel, grid, block, shared\n"
		"                     memory, arena operands; edges\n"
		"      --choices      per variant: the implementation chosen for each op\n"
		"                     that has several, and the candidates' measured times\n"
		"      --dispatch     which variant runs each token count (and, with keys,\n"
		"                     request count and uniform decode), or eager\n"
		"      --checks       the output checksums of the eager reference run\n"
		"      --stats        capture and instantiate times, nodes per segment,\n"
		"                     a histogram of kernels\n"
		"      --modules      a recorded plan's modules: kept or not, and why\n"
		"      --allocations  a recorded plan's device allocations\n"
		"  -v, --variant T    only the variant captured for T tokens\n"
		"      --json         the whole plan as JSON (formats/inspect-json.md)\n"
		"      --dot          the variants' steps as a Graphviz graph; a step that\n"
		"                     repeats a run of ops 4 times or more (a model's layers)\n"
		"                     drawn folded: segments and breaks, the run once, \"x N\";\n"
		"                     with --nodes, every node, nothing folded\n"
		"      --color WHEN   auto (default: on a terminal, unless NO_COLOR is set),\n"
		"                     always or never\n"
		"  -h, --help         show this help\n",
	.exec = cmd_inspect_exec,
};

/* Sections, in the order they print. */
enum {
	SEC_DIMS        = 1u << 0,
	SEC_VARS        = 1u << 1,
	SEC_TENSORS     = 1u << 2,
	SEC_OPS         = 1u << 3,
	SEC_ITEMS       = 1u << 4,
	SEC_SEGMENTS    = 1u << 5,
	SEC_BREAKPOINTS = 1u << 6,
	SEC_NODES       = 1u << 7,
	SEC_CHOICES     = 1u << 8,
	SEC_DISPATCH    = 1u << 9,
	SEC_CHECKS      = 1u << 10,
	SEC_STATS       = 1u << 11,
	SEC_MODULES     = 1u << 12,   /* recorded plans */
	SEC_ALLOCS      = 1u << 13,
	SEC_ALL         = (1u << 14) - 1,
};

void inspect_title(struct inspect *in, const char *fmt, ...)
{
	va_list ap;

	if (in->printed)
		putchar('\n');
	in->printed = 1;
	fputs(in->st.bold, stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputs(in->st.reset, stdout);
	putchar('\n');
}

/* A summary line's label, "plan      ", bold when colors are on. */
static void inspect_key(const struct inspect *in, const char *key)
{
	printf("%s%-10s%s", in->st.bold, key, in->st.reset);
}

static void inspect_variant_title(struct inspect *in, const char *what, uint32_t v)
{
	const struct plan_variant *var = plan_get_variant(in->plan, v);

	inspect_title(in, "%s of variant %lld (%s)", what, (long long)var->tokens,
	              plan_mode_name(var->mode));
}

/* "ops 0-6 embed..v_write", "op 8 o". */
void inspect_span(const plan_t *plan, uint32_t first, uint32_t count, char *buf,
                         size_t len)
{
	char a[128], b[128];

	plan_op_label(plan, first, a, sizeof a);
	if (count == 1) {
		snprintf(buf, len, "%s", a);
		return;
	}
	plan_op_label(plan, first + count - 1, b, sizeof b);
	snprintf(buf, len, "%s..%s", a, b);
}

void inspect_range(uint32_t first, uint32_t count, char *buf, size_t len)
{
	if (count == 1)
		snprintf(buf, len, "%u", first);
	else
		snprintf(buf, len, "%u-%u", first, first + count - 1);
}

/* ---------------------------------------------------------------------- */
/* The summary.                                                            */

/* The variants captured without verification (capture --verify), shown,
 * when there are any, under the variants. */
static void inspect_unverified(struct inspect *in)
{
	const plan_t *plan = in->plan;
	uint32_t n = 0, shown = 0;
	int64_t *v = xcalloc(plan_count_variants(plan) + 1, sizeof *v);
	char list[320];

	for (uint32_t i = 0; i < plan_count_variants(plan); i++) {
		if (!inspect_wanted(in, i))
			continue;
		shown++;
		if (!plan_variant_verified(plan, i))
			v[n++] = plan_get_variant(plan, i)->tokens;
	}
	if (n > 0 && plan_get_origin(plan) != PLAN_ORIGIN_RECORDED)
		printf("  not verified at capture (capture --verify): %s%s; replay --check "
		       "verifies a variant\n", n == shown && n > 1 ? "all" : "",
		       n == shown && n > 1 ? "" : bcg_list_sizes(v, n, list, sizeof list));
	free(v);
}

/* "choices   2 ops in 3 variants: 4 choices, 3 tuned (1 close)", or "-";
 * "(1 close, 2 in the step)" where some were confirmed in the step (1.9). */
static void inspect_choices_line(const struct inspect *in)
{
	const plan_t *plan = in->plan;
	uint32_t n = plan_count_choices(plan), nops = 0, nvar = 0, tuned = 0, close = 0, step = 0;
	unsigned char *op_seen = xcalloc((size_t)plan_count_ops(plan) + 1, 1);
	unsigned char *var_seen = xcalloc((size_t)plan_count_variants(plan) + 1, 1);

	for (uint32_t i = 0; i < n; i++) {
		const struct plan_choice *c = plan_get_choice(plan, i);
		nops += op_seen[c->op]++ == 0;
		nvar += var_seen[c->variant]++ == 0;
		tuned += (c->flags & PLAN_CHOICE_TUNED) != 0;
		close += (c->flags & PLAN_CHOICE_CLOSE) != 0;
		step += (c->flags & PLAN_CHOICE_STEP) != 0;
	}
	inspect_key(in, "choices");
	if (n == 0) {
		printf("-\n");
	} else {
		printf("%u op%s in %u variant%s: %u choice%s, %u tuned (%u close", nops,
		       nops == 1 ? "" : "s", nvar, nvar == 1 ? "" : "s", n, n == 1 ? "" : "s", tuned,
		       close);
		if (step > 0)
			printf(", %u in the step", step);
		printf(")\n");
	}
	free(op_seen);
	free(var_seen);
}

static void inspect_variant_counts(const plan_t *plan, uint32_t v, uint32_t *nseg, uint32_t *nbp,
                                   uint32_t *nnodes)
{
	const struct plan_variant *var = plan_get_variant(plan, v);

	*nseg = *nbp = *nnodes = 0;
	for (uint32_t k = 0; k < var->nitems; k++) {
		if (var->items[k].kind == PLAN_ITEM_SEGMENT) {
			(*nseg)++;
			*nnodes += plan_get_segment(plan, var->items[k].index)->nnodes;
		} else {
			(*nbp)++;
		}
	}
}

static void inspect_summary(struct inspect *in)
{
	const plan_t *plan = in->plan;
	const struct plan_meta *m = plan_get_meta(plan);
	const struct plan_layout *l = plan_get_layout(plan);
	char a[32], b[32], c[32], when[64] = "-";
	unsigned major, minor;
	struct stat sb;
	time_t t = (time_t)m->created;
	struct tm tm;
	struct table *tb;
	uint32_t tot[4] = { 0 };

	plan_get_format_version(plan, &major, &minor);
	if ((int64_t)t == m->created && gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	inspect_key(in, "plan");
	if (stat(in->path, &sb) == 0 && S_ISREG(sb.st_mode))
		printf("%s (%s, format %u.%u)\n", in->path,
		       bcg_human_bytes((uint64_t)sb.st_size, a, sizeof a), major, minor);
	else
		printf("%s (format %u.%u)\n", in->path, major, minor);
	inspect_key(in, "script");
	printf("%s (hash 0x%016" PRIx64 ")\n", m->script[0] ? m->script : "-",
	       m->script_hash);
	inspect_key(in, "tool");
	printf("%s\n", m->tool[0] ? m->tool : "-");
	inspect_key(in, "backend");
	printf("%s\n", plan_backend_name(m->backend));
	inspect_key(in, "device");
	if (m->device[0] != '\0')
		printf("%s (compute capability %d.%d)\n", m->device, (int)m->cc_major,
		       (int)m->cc_minor);
	else
		printf("-\n");
	inspect_key(in, "toolkit");
	if (m->cuda_runtime > 0 || m->cuda_driver > 0 || m->cublas > 0)
		printf("CUDA runtime %s, driver %s, cuBLAS %s\n",
		       plan_version_text(m->cuda_runtime, 0, a, sizeof a),
		       plan_version_text(m->cuda_driver, 0, b, sizeof b),
		       plan_version_text(m->cublas, 1, c, sizeof c));
	else
		printf("-\n");
	inspect_key(in, "created");
	printf("%s\n", when);
	inspect_key(in, "arena");
	printf("%s (%s without reuse), alignment %u\n",
	       bcg_human_bytes(l->arena_bytes, a, sizeof a),
	       bcg_human_bytes(l->unshared_bytes, b, sizeof b), l->alignment);
	inspect_key(in, "program");
	printf("%u dim%s, %u var%s, %u tensor%s, %u op%s\n", plan_count_dims(plan),
	       plan_count_dims(plan) == 1 ? "" : "s", plan_count_vars(plan),
	       plan_count_vars(plan) == 1 ? "" : "s", plan_count_tensors(plan),
	       plan_count_tensors(plan) == 1 ? "" : "s", plan_count_ops(plan),
	       plan_count_ops(plan) == 1 ? "" : "s");
	if (plan_get_dist(plan)->world > 1) {
		inspect_key(in, "ranks");
		printf("%s\n", plan_dist_text(plan, a, sizeof a));
	}
	inspect_key(in, "features");
	printf("%s\n", m->features & PLAN_FEATURE_PDL ?
	       "pdl (kernels launched with programmatic dependent launch)" :
	       plan_features_text(m->features, a, sizeof a));
	inspect_choices_line(in);
	if (plan_count_shares(plan) > 0) {
		uint32_t first = 0, joined = 0, refused = 0;
		for (uint32_t i = 0; i < plan_count_shares(plan); i++) {
			const struct plan_share *sh = plan_get_share(plan, i);
			if (sh->flags & PLAN_SHARE_REFUSED)
				refused++;
			else if (sh->exec == sh->segment)
				first++;
			else
				joined++;
		}
		inspect_key(in, "shared");
		printf("%u executable%s shared across variants by %u segments (%u of them run on "
		       "another variant's); %u update%s refused\n", first, BCG_S(first),
		       first + joined, joined, refused, BCG_S(refused));
	}
	in->printed = 1;

	inspect_title(in, "variants");
	tb = table_new(plan_has_keys(plan) ? "rllrrrrr" : "rlrrrrr");
	table_cell(tb, "tokens");
	if (plan_has_keys(plan))
		table_cell(tb, "key");
	table_cell(tb, "mode");
	table_cell(tb, "items");
	table_cell(tb, "segments");
	table_cell(tb, "breakpoints");
	table_cell(tb, "nodes");
	table_cell(tb, "peak");
	table_end_row(tb, NULL);
	uint32_t shown = 0;
	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		uint32_t nseg, nbp, nnodes;
		if (!inspect_wanted(in, v))
			continue;
		inspect_variant_counts(plan, v, &nseg, &nbp, &nnodes);
		table_cell(tb, "%lld", (long long)var->tokens);
		if (plan_has_keys(plan))
			table_cell(tb, "%s", plan_key_text(var, a, sizeof a));
		table_cell(tb, "%s", plan_mode_name(var->mode));
		table_cell(tb, "%u", var->nitems);
		table_cell(tb, "%u", nseg);
		table_cell(tb, "%u", nbp);
		table_cell(tb, "%u", nnodes);
		table_cell(tb, "%s", bcg_human_bytes(var->peak_bytes, a, sizeof a));
		table_end_row(tb, NULL);
		tot[0] += var->nitems;
		tot[1] += nseg;
		tot[2] += nbp;
		tot[3] += nnodes;
		shown++;
	}
	if (shown > 1) {
		table_cell(tb, "total");
		if (plan_has_keys(plan))
			table_cell(tb, "%s", "");
		table_cell(tb, "%s", "");
		table_cell(tb, "%u", tot[0]);
		table_cell(tb, "%u", tot[1]);
		table_cell(tb, "%u", tot[2]);
		table_cell(tb, "%u", tot[3]);
		table_end_row(tb, in->st.bold);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
	inspect_unverified(in);
}

/* ---------------------------------------------------------------------- */
/* Sections of the program.                                                */

static void inspect_dims(struct inspect *in)
{
	const plan_t *plan = in->plan;
	struct table *tb = table_new("lrl");

	inspect_title(in, "dims");
	table_cell(tb, "name");
	table_cell(tb, "value");
	table_cell(tb, "expr");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_dims(plan); i++) {
		const struct plan_dim *d = plan_get_dim(plan, i);
		table_cell(tb, "%s", d->name);
		table_cell(tb, "%lld", (long long)d->value);
		if (d->flags & PLAN_DIM_TOKENS) {
			char sizes[512];
			size_t at = 0;
			sizes[0] = '\0';
			for (uint32_t v = 0; v < plan_count_variants(plan) && at < sizeof sizes; v++) {
				int n = snprintf(sizes + at, sizeof sizes - at, "%s%lld", v ? ", " : "",
				                 (long long)plan_get_variant(plan, v)->tokens);
				at += n > 0 ? (size_t)n : 0;
			}
			table_cell(tb, "the token dim; capture sizes %s", sizes[0] ? sizes : "none");
		} else {
			table_cell(tb, "%s", d->expr);
		}
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}

static void inspect_vars(struct inspect *in)
{
	const plan_t *plan = in->plan;
	struct table *tb = table_new("lrrrr");

	inspect_title(in, "vars");
	if (plan_count_vars(plan) == 0) {
		printf("  none\n");
		table_free(tb);
		return;
	}
	table_cell(tb, "name");
	table_cell(tb, "start");
	table_cell(tb, "step");
	table_cell(tb, "limit");
	table_cell(tb, "offset");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_vars(plan); i++) {
		const struct plan_var *v = plan_get_var(plan, i);
		table_cell(tb, "%s", v->name);
		table_cell(tb, "%lld", (long long)v->start);
		table_cell(tb, "%lld", (long long)v->step);
		table_cell(tb, "%lld", (long long)v->limit);
		table_cell(tb, "%llu", (unsigned long long)v->offset);
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}

static void inspect_tensors(struct inspect *in)
{
	const plan_t *plan = in->plan;
	struct table *tb = table_new("rllllrrl");
	char shape[160], source[160], h[32];

	inspect_title(in, "tensors");
	table_cell(tb, "#");
	table_cell(tb, "name");
	table_cell(tb, "dtype");
	table_cell(tb, "shape");
	table_cell(tb, "role");
	table_cell(tb, "offset");
	table_cell(tb, "bytes");
	table_cell(tb, "contents");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_tensors(plan); i++) {
		const struct plan_tensor *t = plan_get_tensor(plan, i);
		table_cell(tb, "%u", i);
		table_cell(tb, "%s", t->name);
		table_cell(tb, "%s", plan_dtype_name(t->dtype));
		table_cell(tb, "%s", plan_shape_text(plan, t, shape, sizeof shape));
		table_cell(tb, "%s", plan_role_name(t->role));
		table_cell(tb, "%llu", (unsigned long long)t->offset);
		table_cell(tb, "%s", bcg_human_bytes(t->bytes, h, sizeof h));
		table_cell(tb, "%s", plan_source_text(plan, t, source, sizeof source));
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}

static void inspect_ops(struct inspect *in)
{
	const plan_t *plan = in->plan;
	struct table *tb = table_new("rlllllll");
	char label[160], list[512], one[160];

	inspect_title(in, "ops");
	table_cell(tb, "#");
	table_cell(tb, "name");
	table_cell(tb, "kind");
	table_cell(tb, "inputs");
	table_cell(tb, "outputs");
	table_cell(tb, "eager");
	table_cell(tb, "line");
	table_cell(tb, "attrs");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_ops(plan); i++) {
		const struct plan_op *o = plan_get_op(plan, i);
		size_t at = 0;
		table_cell(tb, "%u", i);
		table_cell(tb, "%s", plan_op_label(plan, i, label, sizeof label));
		table_cell(tb, "%s", o->kind);
		table_cell(tb, "%s", plan_tensor_list_text(plan, o->in, o->nin, list, sizeof list));
		table_cell(tb, "%s", plan_tensor_list_text(plan, o->out, o->nout, list, sizeof list));
		table_cell(tb, "%s", o->flags & PLAN_OP_EAGER ? "yes" : "-");
		if (o->line > 0)
			table_cell(tb, "%u:%u", o->line, o->col);
		else
			table_cell(tb, "-");
		list[0] = '\0';
		for (uint32_t k = 0; k < o->nattr && at < sizeof list; k++) {
			int n = snprintf(list + at, sizeof list - at, "%s%s", k ? " " : "",
			                 plan_attr_text(plan, &o->attr[k], one, sizeof one));
			at += n > 0 ? (size_t)n : 0;
		}
		table_cell(tb, "%s", o->nattr ? list : "-");
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}

/* ---------------------------------------------------------------------- */
/* Sections of the variants.                                               */

static void inspect_items(struct inspect *in)
{
	const plan_t *plan = in->plan;
	char range[32], span[320];

	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		struct table *tb;
		if (!inspect_wanted(in, v))
			continue;
		inspect_variant_title(in, "items", v);
		tb = table_new("rlrrll");
		table_cell(tb, "item");
		table_cell(tb, "kind");
		table_cell(tb, "index");
		table_cell(tb, "ops");
		table_cell(tb, "names");
		table_cell(tb, "detail");
		table_end_row(tb, NULL);
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			table_cell(tb, "%u", k);
			if (it->kind == PLAN_ITEM_SEGMENT) {
				const struct plan_segment *s = plan_get_segment(plan, it->index);
				inspect_range(s->op_first, s->op_count, range, sizeof range);
				inspect_span(plan, s->op_first, s->op_count, span, sizeof span);
				table_cell(tb, "segment");
				table_cell(tb, "%u", it->index);
				table_cell(tb, "%s", range);
				table_cell(tb, "%s", span);
				if (s->flags & PLAN_SEG_NODES)
					table_cell(tb, "%u node%s", s->nnodes, s->nnodes == 1 ? "" : "s");
				else
					table_cell(tb, "%u op%s", s->op_count, s->op_count == 1 ? "" : "s");
				table_end_row(tb, in->st.cyan);
			} else {
				const struct plan_breakpoint *b = plan_get_breakpoint(plan, it->index);
				table_cell(tb, "break");
				table_cell(tb, "%u", it->index);
				table_cell(tb, "%u", b->op);
				table_cell(tb, "%s", b->name);
				table_cell(tb, "%s, %s", plan_get_op(plan, b->op)->kind,
				           plan_break_reason_name(b->reason));
				table_end_row(tb, in->st.yellow);
			}
		}
		table_print(tb, stdout, "  ", &in->st);
		table_free(tb);
	}
}

/* Whose executable segment SI ran on (1.6): its own, its own shared
 * with other variants', another variant's, or its own after the update
 * to a group's was refused. */
static void inspect_share_cell(struct table *tb, const plan_t *plan, uint32_t si)
{
	const struct plan_share *sh = plan_find_share(plan, si);

	if (sh == NULL)
		table_cell(tb, "own");
	else if (sh->flags & PLAN_SHARE_REFUSED)
		table_cell(tb, "own: update to seg %u's refused (%u)", sh->exec, sh->result);
	else if (sh->exec == si)
		table_cell(tb, "shared (first)");
	else
		table_cell(tb, "seg %u's (%lld tokens)", sh->exec,
		           (long long)plan_get_variant(plan,
		                                       plan_get_segment(plan, sh->exec)->variant)->tokens);
}

static void inspect_segments(struct inspect *in)
{
	const plan_t *plan = in->plan;
	char range[32], span[320];

	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		struct table *tb;
		uint32_t n = 0;
		if (!inspect_wanted(in, v))
			continue;
		inspect_variant_title(in, "segments", v);
		tb = table_new(plan_count_shares(plan) > 0 ? "rrrllrrll" : "rrrllrrl");
		table_cell(tb, "seg");
		table_cell(tb, "item");
		table_cell(tb, "ops");
		table_cell(tb, "first..last");
		table_cell(tb, "count");
		table_cell(tb, "nodes");
		table_cell(tb, "edges");
		table_cell(tb, "fingerprint");
		if (plan_count_shares(plan) > 0)
			table_cell(tb, "executable");
		table_end_row(tb, NULL);
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			if (it->kind != PLAN_ITEM_SEGMENT)
				continue;
			const struct plan_segment *s = plan_get_segment(plan, it->index);
			n++;
			inspect_range(s->op_first, s->op_count, range, sizeof range);
			inspect_span(plan, s->op_first, s->op_count, span, sizeof span);
			table_cell(tb, "%u", it->index);
			table_cell(tb, "%u", k);
			table_cell(tb, "%s", range);
			table_cell(tb, "%s", span);
			table_cell(tb, "%u op%s", s->op_count, s->op_count == 1 ? "" : "s");
			if (s->flags & PLAN_SEG_NODES) {
				table_cell(tb, "%u", s->nnodes);
				table_cell(tb, "%u", s->nedges);
				table_cell(tb, "%016" PRIx64, s->fingerprint);
			} else {
				table_cell(tb, "-");
				table_cell(tb, "-");
				table_cell(tb, "- (no nodes recorded)");
			}
			if (plan_count_shares(plan) > 0)
				inspect_share_cell(tb, plan, it->index);
			table_end_row(tb, NULL);
		}
		if (n == 0)
			printf("  none: every op is a breakpoint in eager mode\n");
		else
			table_print(tb, stdout, "  ", &in->st);
		table_free(tb);
	}
}

static void inspect_breakpoints(struct inspect *in)
{
	const plan_t *plan = in->plan;
	char reads[512], writes[512];

	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		struct table *tb;
		uint32_t n = 0;
		if (!inspect_wanted(in, v))
			continue;
		inspect_variant_title(in, "breakpoints", v);
		tb = table_new("rrrlllll");
		table_cell(tb, "bp");
		table_cell(tb, "item");
		table_cell(tb, "op");
		table_cell(tb, "name");
		table_cell(tb, "kind");
		table_cell(tb, "reason");
		table_cell(tb, "reads -> writes");
		table_cell(tb, "detail");
		table_end_row(tb, NULL);
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			if (it->kind != PLAN_ITEM_BREAK)
				continue;
			const struct plan_breakpoint *b = plan_get_breakpoint(plan, it->index);
			table_cell(tb, "%u", it->index);
			table_cell(tb, "%u", k);
			table_cell(tb, "%u", b->op);
			table_cell(tb, "%s", b->name);
			table_cell(tb, "%s", plan_get_op(plan, b->op)->kind);
			table_cell(tb, "%s", plan_break_reason_name(b->reason));
			table_cell(tb, "%s -> %s", plan_tensor_list_text(plan, b->reads, b->nreads, reads,
			                                                 sizeof reads),
			           plan_tensor_list_text(plan, b->writes, b->nwrites, writes, sizeof writes));
			table_cell(tb, "%s", b->detail);
			table_end_row(tb, NULL);
			n++;
		}
		if (n == 0)
			printf("  none: the step is one graph\n");
		else
			table_print(tb, stdout, "  ", &in->st);
		table_free(tb);
	}
}

/* The candidates as "mma 3.25 us, cublas 3.50 us"; "-" for none, and an
 * untimed one (0) without a time. */
static void inspect_candidates(const struct plan_choice *c, char *buf, size_t len)
{
	size_t at = 0;

	snprintf(buf, len, "-");
	for (uint32_t k = 0; k < c->ncand && at < len; k++) {
		int w = c->cand[k].us > 0 ?
			snprintf(buf + at, len - at, "%s%s %.2f us", k ? ", " : "", c->cand[k].impl,
			         c->cand[k].us) :
			snprintf(buf + at, len - at, "%s%s", k ? ", " : "", c->cand[k].impl);
		at += w > 0 ? (size_t)w : 0;
	}
}

static void inspect_choices(struct inspect *in)
{
	const plan_t *plan = in->plan;
	char label[160], cands[1024];

	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		struct table *tb;
		uint32_t n = 0;
		if (!inspect_wanted(in, v))
			continue;
		inspect_variant_title(in, "choices", v);
		tb = table_new("rlllll");
		table_cell(tb, "op");
		table_cell(tb, "name");
		table_cell(tb, "kind");
		table_cell(tb, "impl");
		table_cell(tb, "chosen");
		table_cell(tb, "candidates");
		table_end_row(tb, NULL);
		/* In op order, whatever the order they were recorded in. */
		for (uint32_t op = 0; op < plan_count_ops(plan); op++) {
			const struct plan_choice *c = plan_find_choice(plan, v, op);
			if (c == NULL)
				continue;
			table_cell(tb, "%u", op);
			table_cell(tb, "%s", plan_op_label(plan, op, label, sizeof label));
			table_cell(tb, "%s", plan_get_op(plan, op)->kind);
			table_cell(tb, "%s", c->impl);
			if (!(c->flags & PLAN_CHOICE_TUNED))
				table_cell(tb, "default");
			else
				table_cell(tb, "tuned%s%s", c->flags & PLAN_CHOICE_CLOSE ? ", close" : "",
				           c->flags & PLAN_CHOICE_STEP ? ", step" : "");
			inspect_candidates(c, cands, sizeof cands);
			table_cell(tb, "%s", cands);
			table_end_row(tb, NULL);
			n++;
		}
		if (n == 0)
			printf("  none recorded\n");
		else
			table_print(tb, stdout, "  ", &in->st);
		table_free(tb);
	}
}

/* Whether PLAN's program takes serving batches (batch feeds), as the
 * engine and the scheduler find them. */
static int inspect_serving(const plan_t *plan)
{
	struct engine_batch_geometry g;
	char msg[256];

	return engine_batch_geometry(plan, &g, msg, sizeof msg) == 0 && g.present;
}

/* Whether PLAN has a full or breakable variant of at least TOKENS. */
static int inspect_graph_above(const plan_t *plan, int64_t tokens)
{
	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		if (var->mode != PLAN_MODE_EAGER && var->tokens >= tokens)
			return 1;
	}
	return 0;
}

static void inspect_dispatch(struct inspect *in)
{
	const plan_t *plan = in->plan;
	int keyed = plan_has_keys(plan);
	struct table *tb = table_new(keyed ? "rllll" : "rll");
	int64_t top = 0;
	char range[64], key[64];

	inspect_title(in, "dispatch");
	table_cell(tb, "tokens");
	if (keyed) {
		/* Format 1.3: the batches each entry holds, looked up in order. */
		table_cell(tb, "requests");
		table_cell(tb, "batches");
	}
	table_cell(tb, "variant");
	table_cell(tb, "mode");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_dispatch(plan); i++) {
		const struct plan_dispatch *d = plan_get_dispatch(plan, i);
		const struct plan_variant *var = d->variant != PLAN_NONE ?
			plan_get_variant(plan, d->variant) : NULL;
		if (d->tokens_max > top)
			top = d->tokens_max;
		if (in->variant != PLAN_NONE && d->variant != in->variant)
			continue;
		if (d->tokens_min == d->tokens_max)
			snprintf(range, sizeof range, "%lld", (long long)d->tokens_min);
		else
			snprintf(range, sizeof range, "%lld-%lld", (long long)d->tokens_min,
			         (long long)d->tokens_max);
		table_cell(tb, "%s", range);
		if (keyed && d->requests_max != 0)
			table_cell(tb, "%u", d->requests_max);
		else if (keyed)
			table_cell(tb, "%s", "any");
		if (keyed)
			table_cell(tb, "%s", (d->flags & PLAN_DISPATCH_UNIFORM) ? "uniform decode" : "any");
		if (var != NULL) {
			if (keyed)
				table_cell(tb, "%s", plan_key_text(var, key, sizeof key));
			else
				table_cell(tb, "%lld", (long long)var->tokens);
			if (var->tokens > d->tokens_min)
				table_cell(tb, "%s, padded to %lld", plan_mode_name(var->mode),
				           (long long)var->tokens);
			else
				table_cell(tb, "%s", plan_mode_name(var->mode));
		} else {
			table_cell(tb, "-");
			table_cell(tb, "eager");
		}
		table_end_row(tb, NULL);
	}
	if (in->variant == PLAN_NONE) {
		/* Above every entry, and above the largest capture size, a step
		 * runs eagerly (plan_dispatch_lookup). */
		table_cell(tb, "%lld-", (long long)top + 1);
		if (keyed) {
			table_cell(tb, "%s", "any");
			table_cell(tb, "%s", "any");
		}
		table_cell(tb, "-");
		table_cell(tb, "eager");
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
	/* Keyed and no entry: a server pads to no eager variant (serve/
	 * dispatch.h), so every batch runs eagerly at its own size, as
	 * replay --trace runs it. */
	if (keyed && plan_count_dispatch(plan) == 0 && plan_count_variants(plan) > 0)
		printf("  no full or breakable variant: every batch runs eagerly, unpadded\n");
	/* Unkeyed, of a serving program: replay --tokens follows the table
	 * above, eager variants included; replay --trace pads only to full
	 * and breakable ones (serve/dispatch.h) and runs the rest of its
	 * batches eagerly at their own size. Say so where the two differ: an
	 * eager entry that pads, or below a full or breakable variant. */
	if (!keyed && in->variant == PLAN_NONE && inspect_serving(plan)) {
		/* The token ranges so padded, adjacent ones joined: at most one
		 * a variant, each at most "65536-65536, ", for a script's 512
		 * sizes (a longer list is cut short). */
		char ranges[8192] = "";
		size_t n = 0;
		int64_t lo = 0, hi = 0;
		for (uint32_t i = 0; i <= plan_count_dispatch(plan); i++) {
			const struct plan_dispatch *d = i < plan_count_dispatch(plan) ?
				plan_get_dispatch(plan, i) : NULL;
			const struct plan_variant *var = d != NULL && d->variant != PLAN_NONE ?
				plan_get_variant(plan, d->variant) : NULL;
			int padded_eager = var != NULL && var->mode == PLAN_MODE_EAGER &&
			                   (var->tokens > d->tokens_min ||
			                    inspect_graph_above(plan, d->tokens_min));
			if (padded_eager && lo != 0 && d->tokens_min == hi + 1) {
				hi = d->tokens_max;
				continue;
			}
			if (lo != 0 && lo == hi && n < sizeof ranges)
				n += (size_t)snprintf(ranges + n, sizeof ranges - n, "%s%lld",
				                      n ? ", " : "", (long long)lo);
			else if (lo != 0 && n < sizeof ranges)
				n += (size_t)snprintf(ranges + n, sizeof ranges - n, "%s%lld-%lld",
				                      n ? ", " : "", (long long)lo, (long long)hi);
			lo = padded_eager ? d->tokens_min : 0;
			hi = padded_eager ? d->tokens_max : 0;
		}
		if (n > 0)
			printf("  with --trace, replay pads only to full and breakable variants: "
			       "batches of %s tokens (an eager variant here) take the smallest that "
			       "holds them, else run eagerly at their own size\n", ranges);
	}
}

static void inspect_checks(struct inspect *in)
{
	const plan_t *plan = in->plan;
	struct table *tb = table_new("rlrll");

	inspect_title(in, "checks");
	table_cell(tb, "tokens");
	table_cell(tb, "tensor");
	table_cell(tb, "steps");
	table_cell(tb, "hash");
	table_cell(tb, "sum");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < plan_count_checks(plan); i++) {
		const struct plan_check *c = plan_get_check(plan, i);
		if (!inspect_wanted(in, c->variant))
			continue;
		table_cell(tb, "%lld", (long long)plan_get_variant(plan, c->variant)->tokens);
		table_cell(tb, "%s", plan_get_tensor(plan, c->tensor)->name);
		table_cell(tb, "%u", c->steps);
		table_cell(tb, "%016" PRIx64, c->hash);
		table_cell(tb, "%.9g", c->sum);
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
}

/* ---------------------------------------------------------------------- */

static int inspect_find_variant(const plan_t *plan, const char *path, long long tokens,
                                uint32_t *out)
{
	char sizes[320];
	int64_t *all;

	*out = plan_find_variant(plan, tokens);
	if (*out != PLAN_NONE)
		return 0;
	all = xcalloc(plan_count_variants(plan) + 1, sizeof *all);
	for (uint32_t v = 0; v < plan_count_variants(plan); v++)
		all[v] = plan_get_variant(plan, v)->tokens;
	bcg_list_sizes(all, plan_count_variants(plan), sizes, sizeof sizes);
	free(all);
	bcg_error("%s: no variant for %lld tokens (capture sizes: %s)", path, tokens,
	          sizes[0] ? sizes : "none");
	return -1;
}

static int cmd_inspect_exec(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_DOT, OPT_COLOR, OPT_SECTION };
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, OPT_SECTION + 0 },
		{ "dims", no_argument, NULL, OPT_SECTION + 1 },
		{ "vars", no_argument, NULL, OPT_SECTION + 2 },
		{ "tensors", no_argument, NULL, OPT_SECTION + 3 },
		{ "ops", no_argument, NULL, OPT_SECTION + 4 },
		{ "items", no_argument, NULL, OPT_SECTION + 5 },
		{ "segments", no_argument, NULL, OPT_SECTION + 6 },
		{ "breakpoints", no_argument, NULL, OPT_SECTION + 7 },
		{ "nodes", no_argument, NULL, OPT_SECTION + 8 },
		{ "choices", no_argument, NULL, OPT_SECTION + 9 },
		{ "dispatch", no_argument, NULL, OPT_SECTION + 10 },
		{ "checks", no_argument, NULL, OPT_SECTION + 11 },
		{ "stats", no_argument, NULL, OPT_SECTION + 12 },
		{ "modules", no_argument, NULL, OPT_SECTION + 13 },
		{ "allocations", no_argument, NULL, OPT_SECTION + 14 },
		{ "variant", required_argument, NULL, 'v' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "dot", no_argument, NULL, OPT_DOT },
		{ "color", required_argument, NULL, OPT_COLOR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const unsigned section_bits[] = {
		SEC_ALL, SEC_DIMS, SEC_VARS, SEC_TENSORS, SEC_OPS, SEC_ITEMS, SEC_SEGMENTS,
		SEC_BREAKPOINTS, SEC_NODES, SEC_CHOICES, SEC_DISPATCH, SEC_CHECKS, SEC_STATS,
		SEC_MODULES, SEC_ALLOCS,
	};
	const struct cmd_entry *self = &cmd_inspect_entry;
	struct inspect in = { .variant = PLAN_NONE };
	const char *color = "auto";
	unsigned sections = 0;
	long long tokens = 0;
	int json = 0, dot = 0, have_tokens = 0, c, rc;
	plan_t *plan = NULL;
	struct plan_diag diag = { 0 };

	while ((c = cmd_getopt(self, argc, argv, "v:h", longopts)) != -1) {
		if (c >= OPT_SECTION && c < OPT_SECTION + 15) {
			sections |= section_bits[c - OPT_SECTION];
			continue;
		}
		switch (c) {
		case 'v':
			if (cmd_parse_int(self, "--variant", optarg, 1, INT64_MAX, &tokens) != 0)
				return BCG_EXIT_USAGE;
			have_tokens = 1;
			break;
		case OPT_JSON: json = 1; break;
		case OPT_DOT: dot = 1; break;
		case OPT_COLOR: color = optarg; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no plan given" : "one plan only");
	if (json && dot)
		return cmd_usage_error(self, "--json and --dot are exclusive");
	/* --dot --nodes: every node drawn, nothing folded. */
	if ((json || dot) && sections != 0 && !(dot && sections == SEC_NODES))
		return cmd_usage_error(self, "--%s shows the whole plan: section options do not apply%s",
		                       json ? "json" : "dot", dot ? " (but --nodes)" : "");
	if (style_init(&in.st, color, stdout) != 0)
		return cmd_usage_error(self, "--color takes auto, always or never, not '%s'", color);
	if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
		return rc;
	in.plan = plan;
	in.path = argv[optind];
	rc = BCG_EXIT_USAGE;
	if (have_tokens && inspect_find_variant(plan, in.path, tokens, &in.variant) != 0)
		goto out;

	if (json || dot) {
		/* A script plan's nodes have their op beside them: the kernel's
		 * name without its parameters says enough. */
		struct plan_dump_opts o = {
			.variant = in.variant, .title = in.path, .nodes = sections == SEC_NODES,
			.kernel_text = plan_get_origin(plan) == PLAN_ORIGIN_RECORDED ?
				bcg_demangle_cb : bcg_demangle_short_cb,
		};
		int err = json ? plan_dump_json(plan, stdout, &o, &diag) :
		                 plan_dump_dot(plan, stdout, &o, &diag);
		if (err != 0) {
			bcg_error("%s: %s: %s", in.path, plan_strerror(err), diag.message);
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
	} else if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		/* A recording has no program: its own summary and sections. */
		unsigned what = 0;
		if (sections & (SEC_ITEMS | SEC_SEGMENTS | SEC_BREAKPOINTS))
			what |= INSPECT_REC_STEPS;
		if (sections & SEC_NODES)
			what |= INSPECT_REC_NODES;
		if (sections & SEC_MODULES)
			what |= INSPECT_REC_MODULES;
		if (sections & SEC_ALLOCS)
			what |= INSPECT_REC_ALLOCS;
		if (sections & SEC_STATS)
			what |= INSPECT_REC_KERNELS;
		if (sections != 0 && what == 0) {
			bcg_error("%s: a recorded plan has no dims, vars, tensors, ops, choices, "
			          "dispatch table or checks", in.path);
			goto out;
		}
		inspect_recorded(plan, in.path, in.variant, &in.st, what);
	} else if (sections == 0) {
		inspect_summary(&in);
		inspect_ranks(&in);
	} else {
		if (sections & SEC_DIMS)
			inspect_dims(&in);
		if (sections & SEC_VARS)
			inspect_vars(&in);
		if (sections & SEC_TENSORS)
			inspect_tensors(&in);
		if (sections & SEC_OPS)
			inspect_ops(&in);
		if (sections & SEC_ITEMS)
			inspect_items(&in);
		if (sections & SEC_SEGMENTS)
			inspect_segments(&in);
		if (sections & SEC_BREAKPOINTS)
			inspect_breakpoints(&in);
		if (sections & SEC_NODES)
			inspect_nodes(&in);
		if (sections & SEC_CHOICES)
			inspect_choices(&in);
		if (sections & SEC_DISPATCH)
			inspect_dispatch(&in);
		if (sections & SEC_CHECKS)
			inspect_checks(&in);
		if (sections & SEC_STATS)
			inspect_stats(&in);
		if (sections & (SEC_MODULES | SEC_ALLOCS) && sections != SEC_ALL && !in.printed) {
			bcg_error("%s: a plan made from a script has no modules or allocations",
			          in.path);
			goto out;
		}
	}
	rc = fflush(stdout) == 0 && !ferror(stdout) ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	plan_free(plan);
	return rc;
}
