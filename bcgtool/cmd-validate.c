/*
 * cmd-validate.c - bcgtool validate: check an op script and show what it
 * declares, which breakpoints each capture size would get, and how its
 * tensors fit in one arena. Needs no GPU: it stops before materializing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cmd.h"
#include "engine/engine.h"
#include "engine/memplan.h"
#include "engine/schedule.h"
#include "ops/op.h"
#include "script/script.h"
#include "util.h"

static int cmd_validate_exec(int argc, char **argv);

const struct cmd_entry cmd_validate_entry = {
	.name = "validate",
	.usage = "[--json] SCRIPT | PLAN",
	.summary = "check a script and show its summary, or check a plan file",
	.options =
		"  --json      print the summary as one JSON object (see op-script.md)\n"
		"              PLAN: a plan file (told by its magic number), read and\n"
		"              checked against plan-format.md; for a recorded plan, also\n"
		"              whether it can be replayed\n"
		"  -h, --help  show this help\n",
	.exec = cmd_validate_exec,
};

/* What validate works out beyond the script itself. */
struct validate_result {
	const struct script *script;
	const plan_t        *program;
	struct memplan       mem;
	struct schedule      sched[PLAN_MODE_EAGER + 1];   /* by mode, those used */
	int64_t             *tokens;
	/* Serving (geo.present): the paged caches, their bytes in all. */
	struct engine_batch_geometry geo;
	uint32_t            *caches;
	uint32_t             ncaches;
	uint64_t             cache_bytes;
};

/* ---------------------------------------------------------------------- */
/* Serving: the paged cache and the largest batch of each capture size.    */

/* The paged caches of the program: every tensor a paged op reads or
 * writes as a cache, once each, in op order. */
static void validate_find_caches(struct validate_result *r)
{
	const plan_t *pr = r->program;
	uint32_t nops = plan_count_ops(pr);

	r->caches = xcalloc(2 * (size_t)nops + 1, sizeof *r->caches);
	for (uint32_t i = 0; i < nops; i++) {
		uint32_t c[2];
		int nc = engine_paged_caches(plan_get_op(pr, i), c);
		for (int k = 0; k < nc; k++) {
			uint32_t j = 0;
			while (j < r->ncaches && r->caches[j] != c[k])
				j++;
			if (j == r->ncaches) {
				r->caches[r->ncaches++] = c[k];
				r->cache_bytes += plan_tensor_bytes(pr, c[k], 0);
			}
		}
	}
}

/* The most requests a batch of capture size V holds: the size's own
 * bound, else one a token, at most the request dim. */
static uint64_t validate_size_requests(const struct validate_result *r,
                                       const struct script_variant *v)
{
	uint64_t n = v->requests > 0 ? (uint64_t)v->requests : (uint64_t)v->tokens;

	return n < r->geo.max_requests ? n : r->geo.max_requests;
}

/* The most cache blocks such a batch can hold: MB a request, at most NB. */
static uint64_t validate_size_blocks(const struct validate_result *r,
                                     const struct script_variant *v)
{
	uint64_t b = validate_size_requests(r, v) * r->geo.max_blocks;

	return b < r->geo.num_blocks ? b : r->geo.num_blocks;
}

/* ---------------------------------------------------------------------- */
/* Formatting.                                                             */

static void validate_shape(const plan_t *program, const struct plan_tensor *t, char *buf,
                           size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "[");

	for (uint32_t i = 0; i < t->rank && n < len; i++) {
		const struct plan_dim *d = t->shape[i].dim != PLAN_NONE ?
			plan_get_dim(program, t->shape[i].dim) : NULL;
		if (d != NULL)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", d->name);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "",
			                      (long long)t->shape[i].size);
	}
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

/* "init random scale 0.02 seed 7", "feed positions var kv_len", "-". With
 * FAMILY, the seed reads "7+i". */
static void validate_source(const plan_t *program, const struct plan_tensor *t, int family,
                            char *buf, size_t len)
{
	const char *plus = family ? "+i" : "";

	switch (t->feed.kind) {
	case PLAN_FEED_POSITIONS:
		if (t->feed.var != PLAN_NONE)
			snprintf(buf, len, "feed positions var %s", plan_get_var(program, t->feed.var)->name);
		else
			snprintf(buf, len, "feed positions");
		return;
	case PLAN_FEED_TOKENS:
		snprintf(buf, len, "feed tokens range %lld seed %llu%s", (long long)t->feed.range,
		         (unsigned long long)t->feed.seed, plus);
		return;
	case PLAN_FEED_RANDOM:
		snprintf(buf, len, "feed random scale %g seed %llu%s", t->feed.scale,
		         (unsigned long long)t->feed.seed, plus);
		return;
	default:
		break;
	}
	switch (t->init.kind) {
	case PLAN_INIT_ZEROS:
	case PLAN_INIT_ONES:
		snprintf(buf, len, "init %s", plan_init_name(t->init.kind));
		break;
	case PLAN_INIT_CONST:
		snprintf(buf, len, "init const value %g", t->init.value);
		break;
	case PLAN_INIT_RANDOM:
		snprintf(buf, len, "init random scale %g seed %llu%s", t->init.scale,
		         (unsigned long long)t->init.seed, plus);
		break;
	case PLAN_INIT_ARANGE:
		snprintf(buf, len, "init arange value %g scale %g", t->init.value, t->init.scale);
		break;
	default:
		snprintf(buf, len, "-");
		break;
	}
}

/* Append " split axis A blocks [B, ...] unit U" (the parts that differ
 * from the defaults) to BUF when T splits over tensor-parallel ranks. */
static void validate_split(const struct plan_tensor *t, char *buf, size_t len)
{
	const struct plan_split *sp = &t->split;
	size_t n = strlen(buf);

	if (sp->nblocks == 0 || n >= len)
		return;
	if (strcmp(buf, "-") == 0)
		n = 0;    /* only the split to say */
	n += (size_t)snprintf(buf + n, len - n, "%ssplit axis %u", n ? ", " : "", sp->axis);
	if (sp->nblocks > 1 && n < len) {
		n += (size_t)snprintf(buf + n, len - n, " blocks [");
		for (uint32_t b = 0; b < sp->nblocks && n < len; b++)
			n += (size_t)snprintf(buf + n, len - n, "%s%lld", b ? ", " : "",
			                      (long long)sp->block[b].full);
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "]");
	}
	if (sp->unit > 1 && n < len)
		snprintf(buf + n, len - n, " unit %lld", (long long)sp->unit);
}

/* How many tensors from FIRST on are members 0, 1, ... of one family
 * ("w[0]", "w[1]", ...); 0 when FIRST is not a family's member 0. */
static uint32_t validate_family(const plan_t *program, uint32_t first)
{
	const struct plan_tensor *t0 = plan_get_tensor(program, first);
	const char *lb = strchr(t0->name, '[');
	size_t base = lb ? (size_t)(lb - t0->name) : 0;
	uint32_t n = 0, nt = plan_count_tensors(program);
	char want[160];

	if (lb == NULL)
		return 0;
	for (uint32_t i = first; i < nt; i++, n++) {
		const struct plan_tensor *t = plan_get_tensor(program, i);
		snprintf(want, sizeof want, "%.*s[%u]", (int)base, t0->name, n);
		if (strcmp(t->name, want) != 0)
			break;
	}
	return n;
}

/* ---------------------------------------------------------------------- */
/* The text summary.                                                       */

static int64_t validate_max_tokens(const struct script *s)
{
	return s->variants[s->nvariants - 1].tokens;
}

static void validate_print_dims(const struct validate_result *r)
{
	const plan_t *pr = r->program;
	uint32_t nd = plan_count_dims(pr);
	int w = 4;

	for (uint32_t i = 0; i < nd; i++) {
		int l = (int)strlen(plan_get_dim(pr, i)->name);
		if (l > w)
			w = l;
	}
	printf("\ndims\n");
	for (uint32_t i = 0; i < nd; i++) {
		const struct plan_dim *d = plan_get_dim(pr, i);
		if (d->flags & PLAN_DIM_TOKENS) {
			printf("  %-*s  tokens:", w, d->name);
			for (uint32_t v = 0; v < r->script->nvariants; v++)
				printf(" %lld", (long long)r->script->variants[v].tokens);
			printf("\n");
		} else if (d->expr[0] != '\0') {
			printf("  %-*s  %lld = %s\n", w, d->name, (long long)d->value, d->expr);
		} else {
			printf("  %-*s  %lld\n", w, d->name, (long long)d->value);
		}
	}
}

static void validate_print_vars(const struct validate_result *r)
{
	uint32_t nv = plan_count_vars(r->program);

	if (nv == 0)
		return;
	printf("\nvars\n");
	for (uint32_t i = 0; i < nv; i++) {
		const struct plan_var *v = plan_get_var(r->program, i);
		printf("  %s  start %lld, step %lld, limit %lld\n", v->name, (long long)v->start,
		       (long long)v->step, (long long)v->limit);
	}
}

struct tensor_row {
	char name[96], dtype[8], shape[96], role[16], size[40], source[256];
};

static void validate_print_tensors(const struct validate_result *r)
{
	const plan_t *pr = r->program;
	uint32_t nt = plan_count_tensors(pr), nrows = 0;
	struct tensor_row *rows = xcalloc(nt + 1, sizeof *rows);
	int64_t T = validate_max_tokens(r->script);
	int w[5] = { 4, 5, 5, 4, 4 };
	char hb[32];

	for (uint32_t i = 0; i < nt;) {
		const struct plan_tensor *t = plan_get_tensor(pr, i);
		uint32_t fam = validate_family(pr, i), n = fam ? fam : 1;
		struct tensor_row *row = &rows[nrows++];
		uint64_t bytes = plan_tensor_bytes(pr, i, T);

		if (fam)
			snprintf(row->name, sizeof row->name, "%.*s[0..%u]",
			         (int)(strchr(t->name, '[') - t->name), t->name, fam - 1);
		else
			snprintf(row->name, sizeof row->name, "%s", t->name);
		snprintf(row->dtype, sizeof row->dtype, "%s", plan_dtype_name(t->dtype));
		validate_shape(pr, t, row->shape, sizeof row->shape);
		snprintf(row->role, sizeof row->role, "%s", plan_role_name(t->role));
		if (fam)
			snprintf(row->size, sizeof row->size, "%u x %s", fam,
			         bcg_human_bytes(bytes, hb, sizeof hb));
		else
			snprintf(row->size, sizeof row->size, "%s", bcg_human_bytes(bytes, hb, sizeof hb));
		validate_source(pr, t, fam != 0, row->source, sizeof row->source);
		validate_split(t, row->source, sizeof row->source);
		i += n;
	}
	for (uint32_t i = 0; i < nrows; i++) {
		const char *f[5] = { rows[i].name, rows[i].dtype, rows[i].shape, rows[i].role,
		                     rows[i].size };
		for (int k = 0; k < 5; k++)
			if ((int)strlen(f[k]) > w[k])
				w[k] = (int)strlen(f[k]);
	}
	printf("\ntensors (%u, sizes at %s=%lld)\n", nt,
	       plan_get_dim(pr, plan_token_dim(pr))->name, (long long)T);
	printf("  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], "name", w[1], "dtype", w[2], "shape",
	       w[3], "role", w[4], "size", "contents");
	for (uint32_t i = 0; i < nrows; i++)
		printf("  %-*s  %-*s  %-*s  %-*s  %*s  %s\n", w[0], rows[i].name, w[1], rows[i].dtype,
		       w[2], rows[i].shape, w[3], rows[i].role, w[4], rows[i].size, rows[i].source);
	free(rows);
}

static void validate_print_ops(const struct validate_result *r)
{
	uint32_t nops = plan_count_ops(r->program), count[OP_COUNT] = { 0 };
	int first = 1;

	for (uint32_t i = 0; i < nops; i++) {
		const struct op_kind *k = op_kind_find(plan_get_op(r->program, i)->kind);
		if (k != NULL)
			count[k->id]++;
	}
	printf("\nops (%u):", nops);
	for (int k = 0; k < OP_COUNT; k++) {
		if (count[k] == 0)
			continue;
		printf("%s %s %u", first ? "" : ",", op_kind_get((enum op_id)k)->name, count[k]);
		first = 0;
	}
	printf("\n");
}

static uint32_t validate_count_items(const struct schedule *s, int kind)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nitems; i++)
		if (s->items[i].kind == kind)
			n++;
	return n;
}

static void validate_print_variants(const struct validate_result *r)
{
	const struct script *s = r->script;
	const char *tname = plan_get_dim(r->program, plan_token_dim(r->program))->name;
	char hb[32];
	int w = (int)strlen(tname) > 6 ? (int)strlen(tname) : 6;

	printf("\nvariants\n");
	printf("  %*s  %-9s  %8s  %11s  %11s\n", w, tname, "mode", "segments", "breakpoints",
	       "arena alone");
	for (uint32_t v = 0; v < s->nvariants; v++) {
		const struct schedule *sc = &r->sched[s->variants[v].mode];
		printf("  %*lld  %-9s  %8u  %11u  %11s\n", w, (long long)s->variants[v].tokens,
		       plan_mode_name(s->variants[v].mode),
		       validate_count_items(sc, PLAN_ITEM_SEGMENT),
		       validate_count_items(sc, PLAN_ITEM_BREAK),
		       bcg_human_bytes(r->mem.peak_bytes[v], hb, sizeof hb));
	}
	for (int mode = PLAN_MODE_BREAKABLE; mode <= PLAN_MODE_EAGER; mode++) {
		const struct schedule *sc = &r->sched[mode];
		uint32_t nb;
		int used = 0;

		for (uint32_t v = 0; v < s->nvariants; v++)
			if (s->variants[v].mode == mode)
				used = 1;
		if (!used)
			continue;
		nb = validate_count_items(sc, PLAN_ITEM_BREAK);
		printf("\nbreakpoints in %s mode (%s=", plan_mode_name(mode), tname);
		for (uint32_t v = 0, n = 0; v < s->nvariants; v++)
			if (s->variants[v].mode == mode)
				printf("%s%lld", n++ ? " " : "", (long long)s->variants[v].tokens);
		printf("): %u\n", nb);
		if (mode == PLAN_MODE_EAGER) {
			printf("  every op, because the mode is eager\n");
			continue;
		}
		for (uint32_t i = 0; i < sc->nitems; i++) {
			char name[160];
			if (sc->items[i].kind != PLAN_ITEM_BREAK)
				continue;
			plan_op_label(r->program, sc->items[i].op_first, name, sizeof name);
			printf("  %-12s %s\n", name, sc->items[i].detail);
		}
	}
}

static void validate_print_arena(const struct validate_result *r)
{
	char a[32], b[32], c[32], d[32];
	uint64_t saved = r->mem.unshared_bytes > r->mem.arena_bytes ?
		r->mem.unshared_bytes - r->mem.arena_bytes : 0;
	double pct = r->mem.unshared_bytes ? 100.0 * (double)saved / (double)r->mem.unshared_bytes : 0.0;

	printf("\narena (alignment %u B)\n", MEMPLAN_ALIGNMENT);
	printf("  shared by every variant  %s\n", bcg_human_bytes(r->mem.arena_bytes, a, sizeof a));
	printf("  persistent part          %s\n",
	       bcg_human_bytes(r->mem.persistent_bytes, b, sizeof b));
	printf("  without reuse            %s\n",
	       bcg_human_bytes(r->mem.unshared_bytes, c, sizeof c));
	printf("  saved by reuse           %s (%.1f%%)\n", bcg_human_bytes(saved, d, sizeof d), pct);
}

static void validate_print_serving(const struct validate_result *r)
{
	const struct engine_batch_geometry *g = &r->geo;
	const struct script *s = r->script;
	char a[32], b[32];

	if (!g->present)
		return;
	printf("\nserving\n");
	const struct plan_tensor *seq = plan_get_tensor(r->program, g->feed[ENGINE_FEED_SEQ_LENS]);
	printf("  requests   at most %u a batch (the rows of %s)\n", g->max_requests, seq->name);
	if (r->ncaches == 0) {
		printf("  KV cache   none (no paged op)\n");
		return;
	}
	printf("  KV cache   %u blocks of %u positions (%llu positions), in %u cache%s: %s a block "
	       "over them, %s in all\n", g->num_blocks, g->block_size,
	       (unsigned long long)g->num_blocks * g->block_size, r->ncaches,
	       r->ncaches == 1 ? "" : "s",
	       bcg_human_bytes(r->cache_bytes / g->num_blocks, a, sizeof a),
	       bcg_human_bytes(r->cache_bytes, b, sizeof b));
	printf("  a request  at most %u blocks (%llu positions); the cache holds %u such requests "
	       "at once\n", g->max_blocks, (unsigned long long)g->max_blocks * g->block_size,
	       g->num_blocks / g->max_blocks);
	printf("\nlargest batch per capture size\n");
	printf("  %6s  %8s  %-7s  %-9s  %s\n", "tokens", "requests", "uniform", "mode",
	       "KV blocks at most");
	for (uint32_t v = 0; v < s->nvariants; v++) {
		const struct script_variant *sv = &s->variants[v];
		uint64_t nb = validate_size_blocks(r, sv);
		printf("  %6lld  %8llu  %-7s  %-9s  %llu (%.1f%% of the cache)\n",
		       (long long)sv->tokens, (unsigned long long)validate_size_requests(r, sv),
		       sv->uniform ? "yes" : "no", plan_mode_name(sv->mode), (unsigned long long)nb,
		       100.0 * (double)nb / (double)g->num_blocks);
	}
}

static void validate_print_text(const struct validate_result *r, const char *path)
{
	const struct script *s = r->script;

	printf("script %s\n", path);
	if (s->description[0] != '\0')
		printf("  %s\n", s->description);
	validate_print_dims(r);
	validate_print_vars(r);
	validate_print_tensors(r);
	validate_print_ops(r);
	validate_print_variants(r);
	validate_print_arena(r);
	validate_print_serving(r);
}

/* ---------------------------------------------------------------------- */
/* JSON.                                                                   */

static void json_string(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void json_tensor_source(const plan_t *pr, const struct plan_tensor *t)
{
	printf(", \"init\": ");
	if (t->init.kind == PLAN_INIT_NONE) {
		printf("null");
	} else {
		printf("{\"kind\": \"%s\"", plan_init_name(t->init.kind));
		if (t->init.kind == PLAN_INIT_RANDOM)
			printf(", \"seed\": %llu, \"scale\": %.17g", (unsigned long long)t->init.seed,
			       t->init.scale);
		else if (t->init.kind == PLAN_INIT_CONST)
			printf(", \"value\": %.17g", t->init.value);
		else if (t->init.kind == PLAN_INIT_ARANGE)
			printf(", \"value\": %.17g, \"scale\": %.17g", t->init.value, t->init.scale);
		printf("}");
	}
	printf(", \"split\": ");
	if (t->split.nblocks == 0) {
		printf("null");
	} else {
		printf("{\"axis\": %u, \"unit\": %lld, \"blocks\": [", t->split.axis,
		       (long long)t->split.unit);
		for (uint32_t b = 0; b < t->split.nblocks; b++)
			printf("%s%lld", b ? ", " : "", (long long)t->split.block[b].full);
		printf("]}");
	}
	printf(", \"feed\": ");
	if (t->feed.kind == PLAN_FEED_NONE) {
		printf("null");
		return;
	}
	printf("{\"kind\": \"%s\"", plan_feed_name(t->feed.kind));
	if (t->feed.kind == PLAN_FEED_POSITIONS) {
		printf(", \"var\": ");
		if (t->feed.var != PLAN_NONE)
			json_string(plan_get_var(pr, t->feed.var)->name);
		else
			printf("null");
	} else if (t->feed.kind == PLAN_FEED_TOKENS) {
		printf(", \"range\": %lld, \"seed\": %llu", (long long)t->feed.range,
		       (unsigned long long)t->feed.seed);
	} else {
		printf(", \"scale\": %.17g, \"seed\": %llu", t->feed.scale,
		       (unsigned long long)t->feed.seed);
	}
	printf("}");
}

static void json_op(const plan_t *pr, uint32_t i)
{
	const struct plan_op *o = plan_get_op(pr, i);

	printf("    {\"index\": %u, \"kind\": ", i);
	json_string(o->kind);
	printf(", \"name\": ");
	json_string(o->name);
	printf(", \"line\": %u, \"col\": %u, \"eager\": %s, \"in\": [", o->line, o->col,
	       (o->flags & PLAN_OP_EAGER) ? "true" : "false");
	for (uint32_t k = 0; k < o->nin; k++) {
		printf("%s", k ? ", " : "");
		json_string(plan_get_tensor(pr, o->in[k])->name);
	}
	printf("], \"out\": [");
	for (uint32_t k = 0; k < o->nout; k++) {
		printf("%s", k ? ", " : "");
		json_string(plan_get_tensor(pr, o->out[k])->name);
	}
	printf("], \"attrs\": {");
	for (uint32_t k = 0; k < o->nattr; k++) {
		const struct plan_attr *a = &o->attr[k];
		printf("%s", k ? ", " : "");
		json_string(a->key);
		if (a->type == PLAN_ATTR_FLOAT)
			printf(": %.17g", a->f);
		else if (a->type == PLAN_ATTR_BOOL)
			printf(": %s", a->i ? "true" : "false");
		else if (a->type == PLAN_ATTR_VAR)
			printf(": {\"var\": \"%s\"}", plan_get_var(pr, (uint32_t)a->i)->name);
		else if (a->type == PLAN_ATTR_STR) {
			printf(": ");
			json_string(a->s);
		}
		else
			printf(": %lld", (long long)a->i);
	}
	printf("}}");
}

/* null, or the serving geometry and the largest batch of each size. */
static void validate_json_serving(const struct validate_result *r)
{
	const struct engine_batch_geometry *g = &r->geo;
	const struct script *s = r->script;

	if (!g->present) {
		printf("null");
		return;
	}
	printf("{\"requests\": %u, \"caches\": [", g->max_requests);
	for (uint32_t i = 0; i < r->ncaches; i++) {
		printf("%s", i ? ", " : "");
		json_string(plan_get_tensor(r->program, r->caches[i])->name);
	}
	printf("],\n    \"blocks\": %u, \"block_size\": %u, \"blocks_per_request\": %u, "
	       "\"cache_bytes\": %llu, \"sizes\": [", r->ncaches ? g->num_blocks : 0,
	       r->ncaches ? g->block_size : 0, g->max_blocks, (unsigned long long)r->cache_bytes);
	for (uint32_t v = 0; v < s->nvariants; v++) {
		const struct script_variant *sv = &s->variants[v];
		printf("%s\n      {\"tokens\": %lld, \"requests\": %llu, \"uniform\": %s, "
		       "\"mode\": \"%s\", \"kv_blocks\": %llu}", v ? "," : "", (long long)sv->tokens,
		       (unsigned long long)validate_size_requests(r, sv), sv->uniform ? "true" : "false",
		       plan_mode_name(sv->mode),
		       (unsigned long long)(r->ncaches ? validate_size_blocks(r, sv) : 0));
	}
	printf("]}");
}

static void validate_print_json(const struct validate_result *r, const char *path)
{
	const struct script *s = r->script;
	const plan_t *pr = r->program;
	uint32_t nd = plan_count_dims(pr), nv = plan_count_vars(pr);
	uint32_t nt = plan_count_tensors(pr), nops = plan_count_ops(pr);
	int64_t T = validate_max_tokens(s);

	printf("{\n  \"script\": ");
	json_string(path);
	printf(",\n  \"version\": 1,\n  \"description\": ");
	json_string(s->description);
	printf(",\n  \"script_hash\": \"0x%016llx\",\n  \"dims\": [\n",
	       (unsigned long long)plan_get_meta(pr)->script_hash);
	for (uint32_t i = 0; i < nd; i++) {
		const struct plan_dim *d = plan_get_dim(pr, i);
		printf("    {\"name\": ");
		json_string(d->name);
		printf(", \"value\": %lld, \"expr\": ", (long long)d->value);
		json_string(d->expr);
		printf(", \"tokens\": %s}%s\n", (d->flags & PLAN_DIM_TOKENS) ? "true" : "false",
		       i + 1 < nd ? "," : "");
	}
	printf("  ],\n  \"vars\": [\n");
	for (uint32_t i = 0; i < nv; i++) {
		const struct plan_var *v = plan_get_var(pr, i);
		printf("    {\"name\": ");
		json_string(v->name);
		printf(", \"start\": %lld, \"step\": %lld, \"limit\": %lld, \"offset\": %llu}%s\n",
		       (long long)v->start, (long long)v->step, (long long)v->limit,
		       (unsigned long long)v->offset, i + 1 < nv ? "," : "");
	}
	printf("  ],\n  \"tensors\": [\n");
	for (uint32_t i = 0; i < nt; i++) {
		const struct plan_tensor *t = plan_get_tensor(pr, i);
		printf("    {\"name\": ");
		json_string(t->name);
		printf(", \"dtype\": \"%s\", \"role\": \"%s\", \"shape\": [", plan_dtype_name(t->dtype),
		       plan_role_name(t->role));
		for (uint32_t k = 0; k < t->rank; k++) {
			printf("%s", k ? ", " : "");
			if (t->shape[k].dim != PLAN_NONE)
				json_string(plan_get_dim(pr, t->shape[k].dim)->name);
			else
				printf("%lld", (long long)t->shape[k].size);
		}
		printf("], \"bytes\": %llu, \"offset\": %llu",
		       (unsigned long long)plan_tensor_bytes(pr, i, T), (unsigned long long)t->offset);
		json_tensor_source(pr, t);
		printf("}%s\n", i + 1 < nt ? "," : "");
	}
	printf("  ],\n  \"ops\": [\n");
	for (uint32_t i = 0; i < nops; i++) {
		json_op(pr, i);
		printf("%s\n", i + 1 < nops ? "," : "");
	}
	printf("  ],\n  \"variants\": [\n");
	for (uint32_t v = 0; v < s->nvariants; v++) {
		const struct schedule *sc = &r->sched[s->variants[v].mode];
		int first = 1;
		printf("    {\"tokens\": %lld, \"mode\": \"%s\", \"segments\": %u, "
		       "\"peak_bytes\": %llu, \"breakpoints\": [", (long long)s->variants[v].tokens,
		       plan_mode_name(s->variants[v].mode), validate_count_items(sc, PLAN_ITEM_SEGMENT),
		       (unsigned long long)r->mem.peak_bytes[v]);
		for (uint32_t i = 0; i < sc->nitems; i++) {
			char name[160];
			if (sc->items[i].kind != PLAN_ITEM_BREAK)
				continue;
			plan_op_label(pr, sc->items[i].op_first, name, sizeof name);
			printf("%s\n      {\"op\": %u, \"name\": ", first ? "" : ",", sc->items[i].op_first);
			json_string(name);
			printf(", \"reason\": \"%s\", \"detail\": ", plan_break_reason_name(sc->items[i].reason));
			json_string(sc->items[i].detail);
			printf("}");
			first = 0;
		}
		printf("%s]}%s\n", first ? "" : "\n    ", v + 1 < s->nvariants ? "," : "");
	}
	printf("  ],\n  \"serving\": ");
	validate_json_serving(r);
	printf(",\n  \"arena\": {\"bytes\": %llu, \"unshared_bytes\": %llu, "
	       "\"persistent_bytes\": %llu, \"saved_bytes\": %llu, \"alignment\": %u}\n}\n",
	       (unsigned long long)r->mem.arena_bytes, (unsigned long long)r->mem.unshared_bytes,
	       (unsigned long long)r->mem.persistent_bytes,
	       (unsigned long long)(r->mem.unshared_bytes > r->mem.arena_bytes ?
	                            r->mem.unshared_bytes - r->mem.arena_bytes : 0),
	       MEMPLAN_ALIGNMENT);
}

/* ---------------------------------------------------------------------- */
/* The command.                                                            */

static int validate_run(const char *path, int json)
{
	struct script *s = NULL;
	struct validate_result r;
	char msg[256];
	int rc = BCG_EXIT_USAGE;

	memset(&r, 0, sizeof r);
	if ((rc = cmd_read_script(path, &s)) != BCG_EXIT_OK)
		return rc;
	rc = BCG_EXIT_USAGE;   /* for the errors below */
	r.script = s;
	r.program = s->program;
	r.tokens = xcalloc(s->nvariants, sizeof *r.tokens);
	for (uint32_t v = 0; v < s->nvariants; v++)
		r.tokens[v] = s->variants[v].tokens;
	if (memplan_place(s->program, r.tokens, s->nvariants, &r.mem, msg, sizeof msg) != 0) {
		bcg_error_at(path, 0, 0, "%s", msg);
		goto out;
	}
	if (engine_batch_geometry(s->program, &r.geo, msg, sizeof msg) != 0) {
		bcg_error_at(path, 0, 0, "%s", msg);
		goto out;
	}
	validate_find_caches(&r);
	for (uint32_t v = 0; v < s->nvariants; v++) {
		int mode = s->variants[v].mode;
		uint32_t op = PLAN_NONE;
		if (r.sched[mode].items != NULL || r.sched[mode].mode != 0)
			continue;
		if (schedule_build(s->program, mode, &r.sched[mode], &op, msg, sizeof msg) != 0) {
			const struct plan_op *o = plan_get_op(s->program, op);
			bcg_error_at(path, o ? o->line : 0, o ? o->col : 0, "%s", msg);
			goto out;
		}
	}
	if (json)
		validate_print_json(&r, path);
	else
		validate_print_text(&r, path);
	rc = fflush(stdout) == 0 && !ferror(stdout) ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	if (rc != BCG_EXIT_OK)
		bcg_error("cannot write the summary");
out:
	for (int m = 0; m <= PLAN_MODE_EAGER; m++)
		schedule_release(&r.sched[m]);
	memplan_release(&r.mem);
	free(r.tokens);
	free(r.caches);
	script_free(s);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* A plan file: read (which checks every rule of plan-format.md), then,   */
/* for a recorded plan, the module images against their hashes and what   */
/* replay would lack.                                                      */

static int validate_is_plan(const char *path)
{
	static const unsigned char magic[8] = { 0x89, 'B', 'C', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char head[8];
	FILE *f = strcmp(path, "-") != 0 ? fopen(path, "rb") : NULL;
	int is = 0;

	if (f != NULL) {
		is = fread(head, 1, sizeof head, f) == sizeof head && memcmp(head, magic, 8) == 0;
		fclose(f);
	}
	return is;
}

static int validate_plan(const char *path, int json)
{
	plan_t *plan = NULL;
	char note[512], version[16];
	char **notes = NULL;
	uint32_t nnotes = 0, kept = 0, snaps = 0, verified = 0, nm, na;
	unsigned major, minor;
	int rc, recorded, replayable;

	if ((rc = cmd_read_plan(path, &plan)) != BCG_EXIT_OK)
		return rc;
	recorded = plan_get_origin(plan) == PLAN_ORIGIN_RECORDED;
	nm = plan_count_modules(plan);
	na = plan_count_allocs(plan);
	notes = xcalloc((size_t)nm + 3, sizeof *notes);
	for (uint32_t i = 0; i < nm; i++) {
		const struct plan_module *m = plan_get_module(plan, i);
		if (!(m->flags & PLAN_MODULE_IMAGE)) {
			snprintf(note, sizeof note, "module %u (%s) is not kept: %s", i,
			         m->name[0] ? m->name : "unnamed", m->note);
			notes[nnotes++] = xstrdup(note);
			continue;
		}
		kept++;
		uint64_t h = XXH64(m->image, (size_t)m->bytes, 0);
		if (h != m->hash) {
			bcg_error("%s: module %u (%s): its image's XXH64 is 0x%016llx, not the "
			          "0x%016llx the plan records", path, i, m->name,
			          (unsigned long long)h, (unsigned long long)m->hash);
			rc = BCG_EXIT_USAGE;
			goto out;
		}
	}
	for (uint32_t i = 0; i < na; i++)
		snaps += (plan_get_alloc(plan, i)->flags & PLAN_ALLOC_SNAPSHOT) != 0;
	if (recorded && snaps < na) {
		snprintf(note, sizeof note, "%u of %u allocations have no contents kept: a replay "
		         "starts from memory the recording did not see", na - snaps, na);
		notes[nnotes++] = xstrdup(note);
	}
	for (uint32_t i = 0; i < plan_count_variants(plan); i++)
		verified += plan_variant_verified(plan, i) != 0;
	if (!recorded && verified < plan_count_variants(plan)) {
		snprintf(note, sizeof note, "%u of %u variants were not verified at capture "
		         "(capture --verify): replay --check verifies them",
		         plan_count_variants(plan) - verified, plan_count_variants(plan));
		notes[nnotes++] = xstrdup(note);
	}
	replayable = !recorded || kept == nm;
	plan_get_format_version(plan, &major, &minor);
	snprintf(version, sizeof version, "%u.%u", major, minor);
	if (json) {
		struct plan_json *j = plan_json_new(stdout);
		if (j == NULL) {
			bcg_error("out of memory");
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		plan_json_object_begin(j);
		plan_json_key(j, "plan");
		plan_json_string(j, path);
		plan_json_key(j, "valid");
		plan_json_bool(j, 1);
		plan_json_key(j, "format");
		plan_json_string(j, version);
		plan_json_key(j, "origin");
		plan_json_string(j, plan_origin_name(plan_get_origin(plan)));
		plan_json_key(j, "variants");
		plan_json_uint(j, plan_count_variants(plan));
		plan_json_key(j, "segments");
		plan_json_uint(j, plan_count_segments(plan));
		plan_json_key(j, "breakpoints");
		plan_json_uint(j, plan_count_breakpoints(plan));
		plan_json_key(j, "verified");
		plan_json_uint(j, verified);
		plan_json_key(j, "launches");
		plan_json_uint(j, plan_count_launches(plan));
		plan_json_key(j, "modules");
		plan_json_uint(j, nm);
		plan_json_key(j, "modules_kept");
		plan_json_uint(j, kept);
		plan_json_key(j, "allocations");
		plan_json_uint(j, na);
		plan_json_key(j, "snapshots");
		plan_json_uint(j, snaps);
		plan_json_key(j, "replayable");
		plan_json_bool(j, replayable);
		plan_json_key(j, "notes");
		plan_json_array_begin(j);
		for (uint32_t i = 0; i < nnotes; i++)
			plan_json_string(j, notes[i]);
		plan_json_array_end(j);
		plan_json_object_end(j);
		plan_json_free(j);
	} else {
		printf("%s: a valid %s plan, format %s: %u variant%s, %u segment%s, %u breakpoint%s",
		       path, plan_origin_name(plan_get_origin(plan)), version,
		       plan_count_variants(plan), plan_count_variants(plan) == 1 ? "" : "s",
		       plan_count_segments(plan), plan_count_segments(plan) == 1 ? "" : "s",
		       plan_count_breakpoints(plan), plan_count_breakpoints(plan) == 1 ? "" : "s");
		if (recorded)
			printf(", %u launch%s, %u module%s (%u kept)", plan_count_launches(plan),
			       plan_count_launches(plan) == 1 ? "" : "es", nm, nm == 1 ? "" : "s", kept);
		putchar('\n');
		if (recorded)
			printf("replay: %s\n", replayable ? "every module is kept" :
			       "not possible: a module is not kept");
		for (uint32_t i = 0; i < nnotes; i++)
			printf("note: %s\n", notes[i]);
	}
	rc = fflush(stdout) == 0 && !ferror(stdout) ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	for (uint32_t i = 0; i < nnotes; i++)
		free(notes[i]);
	free(notes);
	plan_free(plan);
	return rc;
}

static int cmd_validate_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, json = 0;

	while ((c = cmd_getopt(&cmd_validate_entry, argc, argv, "h", longopts)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case CMD_HELP:
			return BCG_EXIT_OK;
		default:
			return BCG_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cmd_usage_error(&cmd_validate_entry, "a SCRIPT is needed");
	if (optind + 1 < argc)
		return cmd_usage_error(&cmd_validate_entry, "one SCRIPT only, not '%s' too",
		                       argv[optind + 1]);
	if (validate_is_plan(argv[optind]))
		return validate_plan(argv[optind], json);
	return validate_run(argv[optind], json);
}
