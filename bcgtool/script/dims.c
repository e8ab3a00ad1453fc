/*
 * dims.c - the dims section: named sizes given by numbers or by
 * expressions of other dims, resolved on demand so that declaration order
 * does not matter and cycles are found; the token dim with its capture
 * sizes and their modes. Also the name lookup of every integer expression.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "internal.h"

static int dims_resolve(struct sp *p, uint32_t index);

/* ---------------------------------------------------------------------- */
/* Names in expressions.                                                   */

static int dims_cycle(struct sp *p, uint32_t index)
{
	char msg[sizeof p->err->message];
	size_t n = 0;
	uint32_t i = 0;

	while (i < p->nresolving && p->resolving[i] != index)
		i++;
	n += (size_t)snprintf(msg, sizeof msg, "cycle in dim expressions: ");
	for (uint32_t first = i; i < p->nresolving && n < sizeof msg; i++) {
		/* A long cycle shows its first and last few dims. */
		if (p->nresolving - first > 8 && i == first + 4) {
			n += (size_t)snprintf(msg + n, sizeof msg - n, "... (%u dims) -> ",
			                      p->nresolving - first);
			i = p->nresolving - 3;
		}
		n += (size_t)snprintf(msg + n, sizeof msg - n, "%s -> ",
		                      p->dims[p->resolving[i]].name);
	}
	if (n < sizeof msg)
		snprintf(msg + n, sizeof msg - n, "%s", p->dims[index].name);
	sp_error(p, p->dims[index].node, "%s", msg);
	return EXPR_REPORTED;
}

/* Kept out of sp_lookup, which recursion through dims puts on the stack
 * many times over. */
static __attribute__((noinline)) int dims_undefined(struct sp *p, const char *name,
                                                    char *msg, size_t msglen)
{
	const char *cand[SCRIPT_MAX_DIMS + SCRIPT_MAX_DEPTH];
	const char *best;
	size_t n = 0;

	for (uint32_t i = 0; i < p->ndims; i++)
		if (!p->dims[i].tokens)
			cand[n++] = p->dims[i].name;
	for (unsigned i = 0; i < p->depth; i++)
		if (p->scope[i].name[0] != '\0')
			cand[n++] = p->scope[i].name;
	best = suggest_name(name, cand, n);
	snprintf(msg, msglen, "undefined %s '%s'%s%s%s",
	         p->depth > 0 ? "dim or repeat variable" : "dim", name,
	         best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
	return -1;
}

static int sp_lookup(void *ctx, const char *name, size_t len, int64_t *value,
                     char *msg, size_t msglen)
{
	struct sp *p = ctx;
	char buf[SCRIPT_MAX_NAME + 4];
	const struct sym *s;

	for (unsigned i = p->depth; i-- > 0;) {
		if (strlen(p->scope[i].name) == len && memcmp(p->scope[i].name, name, len) == 0) {
			*value = p->scope[i].value;
			return 0;
		}
	}
	if (len >= SCRIPT_MAX_NAME) {
		snprintf(msg, msglen, "undefined name '%.*s...'", 32, name);
		return -1;
	}
	memcpy(buf, name, len);
	buf[len] = '\0';
	s = symtab_find(&p->names, buf);
	if (s == NULL)
		return dims_undefined(p, buf, msg, msglen);
	switch (s->kind) {
	case SYM_VAR:
		snprintf(msg, msglen, "'%s' is a var, which changes every step; "
		         "expressions take dims only", buf);
		return -1;
	case SYM_TENSOR:
		snprintf(msg, msglen, "'%s' is a tensor, not a dim", buf);
		return -1;
	default:
		break;
	}
	if (p->dims[s->index].tokens) {
		snprintf(msg, msglen, "the token dim '%s' cannot appear in an expression: "
		         "its value is each capture size in turn", buf);
		return -1;
	}
	switch (p->dims[s->index].state) {
	case 1:
		return dims_cycle(p, s->index);
	case 0:
		if (dims_resolve(p, s->index) != 0)
			return EXPR_REPORTED;
		break;
	default:
		break;
	}
	*value = p->dims[s->index].value;
	return 0;
}

int dims_find(struct sp *p, const char *name, yaml_node_t *node, uint32_t *index)
{
	const struct sym *s = symtab_find(&p->names, name);

	if (s == NULL) {
		dims_undefined(p, name, p->scratch, sizeof p->scratch);
		return sp_error(p, node, "%s", p->scratch);
	}
	if (s->kind != SYM_DIM)
		return sp_error(p, node, "'%s' is %s, not a dim", name,
		                s->kind == SYM_VAR ? "a var" : "a tensor");
	*index = s->index;
	return 0;
}

int sp_eval(struct sp *p, const char *text, yaml_node_t *node, int64_t *out)
{
	int rc = expr_eval(text, sp_lookup, p, out, p->scratch, sizeof p->scratch);

	if (rc == -1)
		return sp_error(p, node, "%s", p->scratch);
	return rc == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------------- */
/* The token dim.                                                          */

/* Room for N capture sizes. */
static int dims_alloc_sizes(struct sp *p, size_t n)
{
	p->sizes = calloc(n, sizeof *p->sizes);
	p->modes = calloc(n, sizeof *p->modes);
	p->requests = calloc(n, sizeof *p->requests);
	p->uniform = calloc(n, sizeof *p->uniform);
	p->size_nodes = calloc(n, sizeof *p->size_nodes);
	if (p->sizes == NULL || p->modes == NULL || p->requests == NULL || p->uniform == NULL ||
	    p->size_nodes == NULL)
		return sp_error(p, NULL, "out of memory");
	return 0;
}

/* The count of a sequence of capture sizes, checked. */
static int dims_count_sizes(struct sp *p, yaml_node_t *seq, const struct dim_decl *d,
                            size_t *n)
{
	*n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (*n == 0)
		return sp_error(p, seq, "dim '%s' has no capture sizes", d->name);
	if (*n > SCRIPT_MAX_SIZES)
		return sp_error(p, walk_node(p, seq->data.sequence.items.start[SCRIPT_MAX_SIZES]),
		                "dim '%s' has more than %d capture sizes", d->name, SCRIPT_MAX_SIZES);
	return 0;
}

/* Append capture size V (from node E), ascending. */
static int dims_add_size(struct sp *p, yaml_node_t *e, int64_t v, int mode)
{
	if (p->nsizes > 0 && v <= p->sizes[p->nsizes - 1])
		return sp_error(p, e, "capture sizes must ascend: %lld comes after %lld",
		                (long long)v, (long long)p->sizes[p->nsizes - 1]);
	p->sizes[p->nsizes] = v;
	p->modes[p->nsizes] = mode;
	p->nsizes++;
	return 0;
}

static int dims_sizes(struct sp *p, yaml_node_t *seq, void *obj)
{
	struct dim_decl *d = obj;
	yaml_node_item_t *it;
	size_t n;

	p->tokens_node = seq;
	if (dims_count_sizes(p, seq, d, &n) != 0 || dims_alloc_sizes(p, n) != 0)
		return -1;
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = walk_node(p, *it);
		int64_t v;
		if (walk_int_range(p, e, "a capture size", 1, SCRIPT_MAX_TOKENS, &v) != 0 ||
		    dims_add_size(p, e, v, PLAN_MODE_BREAKABLE) != 0)
			return -1;
	}
	d->value = p->sizes[p->nsizes - 1];
	return 0;
}

/* One entry of `sizes`: {tokens, requests, uniform, mode}. */
struct size_build {
	int64_t tokens;
	int64_t requests;
	int     uniform;
	int     mode;
	yaml_node_t *requests_node;
};

static int size_tokens(struct sp *p, yaml_node_t *node, void *obj)
{
	struct size_build *b = obj;
	return walk_int_range(p, node, "a capture size", 1, SCRIPT_MAX_TOKENS, &b->tokens);
}

static int size_requests(struct sp *p, yaml_node_t *node, void *obj)
{
	struct size_build *b = obj;
	b->requests_node = node;
	return walk_int_range(p, node, "the requests of a capture size", 1, SCRIPT_MAX_TOKENS,
	                      &b->requests);
}

static int size_uniform(struct sp *p, yaml_node_t *node, void *obj)
{
	struct size_build *b = obj;
	return walk_bool(p, node, "uniform", &b->uniform);
}

static int dims_mode_name(struct sp *p, yaml_node_t *node, int *mode);

static int size_mode(struct sp *p, yaml_node_t *node, void *obj)
{
	struct size_build *b = obj;
	return dims_mode_name(p, node, &b->mode);
}

static const struct walk_field size_fields[] = {
	{ "tokens", YAML_SCALAR_NODE, WALK_REQUIRED, size_tokens },
	{ "requests", YAML_SCALAR_NODE, 0, size_requests },
	{ "uniform", YAML_SCALAR_NODE, 0, size_uniform },
	{ "mode", YAML_SCALAR_NODE, 0, size_mode },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

/* `sizes`: capture sizes that name their batches, as vLLM's batch
 * descriptors: tokens, the most requests, and whether only uniform decode
 * batches (one token a request) run at the size. */
static int dims_sizes_list(struct sp *p, yaml_node_t *seq, void *obj)
{
	struct dim_decl *d = obj;
	yaml_node_item_t *it;
	size_t n;

	if (p->tokens_node != NULL)
		return sp_error(p, seq, "dim '%s' takes tokens or sizes, not both", d->name);
	if (dims_count_sizes(p, seq, d, &n) != 0 || dims_alloc_sizes(p, n) != 0)
		return -1;
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = walk_node(p, *it);
		struct size_build b = { .mode = p->dflt_mode };
		uint32_t i = p->nsizes;

		if (walk_expect(p, e, YAML_MAPPING_NODE, "a capture size") != 0 ||
		    walk_mapping(p, e, size_fields, &b, "a capture size") != 0 ||
		    dims_add_size(p, e, b.tokens, b.mode) != 0)
			return -1;
		if (b.requests == 0)
			b.requests = b.tokens;
		if (b.requests > b.tokens)
			return sp_error(p, b.requests_node, "capture size %lld holds at most %lld "
			                "requests (each has a token), not %lld", (long long)b.tokens,
			                (long long)b.tokens, (long long)b.requests);
		if (b.uniform && b.requests != b.tokens)
			return sp_error(p, b.requests_node, "a uniform decode size has one token a "
			                "request: %lld tokens make %lld requests, not %lld",
			                (long long)b.tokens, (long long)b.tokens, (long long)b.requests);
		p->requests[i] = b.requests;
		p->uniform[i] = (unsigned char)b.uniform;
		p->size_nodes[i] = e;
	}
	d->value = p->sizes[p->nsizes - 1];
	return 0;
}

int dims_check_requests(struct sp *p, int64_t r, const char *tensor)
{
	for (uint32_t i = 0; i < p->nsizes; i++) {
		if (p->size_nodes[i] == NULL || p->requests[i] <= r)
			continue;
		if (p->uniform[i])
			return sp_error(p, p->size_nodes[i], "a uniform decode size has one token a "
			                "request: %lld tokens make %lld requests, above the request "
			                "dim's %lld (the rows of seq_lens '%s')", (long long)p->sizes[i],
			                (long long)p->sizes[i], (long long)r, tensor);
		return sp_error(p, p->size_nodes[i], "capture size %lld holds %lld requests%s, "
		                "above the request dim's %lld (the rows of seq_lens '%s')",
		                (long long)p->sizes[i], (long long)p->requests[i],
		                p->requests[i] == p->sizes[i] ? " (as many as its tokens when "
		                "requests is not given)" : "", (long long)r, tensor);
	}
	return 0;
}

static int dims_mode_name(struct sp *p, yaml_node_t *node, int *mode)
{
	const char *s = walk_scalar(p, node, "a mode");

	if (s == NULL)
		return -1;
	if ((*mode = plan_mode_from_name(s)) == 0)
		return sp_error(p, node, "unknown mode '%.64s' (expected breakable, full or eager)", s);
	return 0;
}

static int dims_mode(struct sp *p, yaml_node_t *node, void *obj)
{
	int mode;

	(void)obj;
	if (dims_mode_name(p, node, &mode) != 0)
		return -1;
	/* The sizes of `tokens` are read already; those of `sizes` start
	 * from it. */
	p->dflt_mode = mode;
	for (uint32_t i = 0; i < p->nsizes; i++)
		p->modes[i] = mode;
	return 0;
}

static int dims_modes(struct sp *p, yaml_node_t *map, void *obj)
{
	struct dim_decl *d = obj;
	unsigned char set[SCRIPT_MAX_SIZES] = { 0 };

	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		int64_t size;
		uint32_t i;
		int mode;

		if (walk_int(p, key, "a capture size", &size) != 0)
			return -1;
		for (i = 0; i < p->nsizes && p->sizes[i] != size; i++)
			;
		if (i == p->nsizes)
			return sp_error(p, key, "mode given for %lld, which is not a capture size "
			                "of '%s'", (long long)size, d->name);
		if (set[i])
			return sp_error(p, key, "duplicate mode for capture size %lld", (long long)size);
		set[i] = 1;
		if (dims_mode_name(p, value, &mode) != 0)
			return -1;
		p->modes[i] = mode;
	}
	return 0;
}

static const struct walk_field token_fields[] = {
	{ "tokens", YAML_SEQUENCE_NODE, 0, dims_sizes },
	{ "mode", YAML_SCALAR_NODE, 0, dims_mode },
	{ "sizes", YAML_SEQUENCE_NODE, 0, dims_sizes_list },
	{ "modes", YAML_MAPPING_NODE, 0, dims_modes },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

/* ---------------------------------------------------------------------- */
/* Resolution.                                                             */

static int dims_resolve(struct sp *p, uint32_t index)
{
	struct dim_decl *d = &p->dims[index];
	char what[SCRIPT_MAX_NAME + 16];
	int rc;

	d->state = 1;
	p->resolving[p->nresolving++] = index;
	snprintf(what, sizeof what, "dim '%s'", d->name);
	if (d->tokens) {
		p->dflt_mode = PLAN_MODE_BREAKABLE;
		rc = walk_mapping(p, d->node, token_fields, d, what);
		if (rc == 0 && p->nsizes == 0)
			rc = sp_error(p, d->node, "missing key 'tokens' in %s (or give 'sizes')", what);
	} else
		rc = walk_int_range(p, d->node, what, 1, INT64_MAX, &d->value);
	p->nresolving--;
	if (rc != 0)
		return -1;
	d->state = 2;
	return 0;
}

int dims_parse(struct sp *p, yaml_node_t *map)
{
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	uint32_t i = 0;

	if (n > SCRIPT_MAX_DIMS)
		return sp_error(p, walk_node(p, map->data.mapping.pairs.start[SCRIPT_MAX_DIMS].key),
		                "more than %d dims", SCRIPT_MAX_DIMS);
	if (n > 0 && (p->dims = calloc(n, sizeof *p->dims)) == NULL)
		return sp_error(p, NULL, "out of memory");
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++, i++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		const char *name = walk_name(p, key, "dim name");
		struct dim_decl *d = &p->dims[i];

		if (name == NULL || sp_declare(p, name, key, SYM_DIM, i) != 0)
			return -1;
		d->name = name;
		d->node = value;
		p->ndims = i + 1;
		if (value->type == YAML_MAPPING_NODE) {
			if (p->token_dim != PLAN_NONE)
				return sp_error(p, key, "dim '%s' is a second token dim; '%s' is "
				                "the token dim already", name, p->dims[p->token_dim].name);
			d->tokens = 1;
			p->token_dim = i;
		} else if (value->type != YAML_SCALAR_NODE) {
			return sp_error(p, value, "expected a scalar or a mapping for dim '%s', "
			                "found %s", name, walk_type_name(value->type));
		}
	}
	for (i = 0; i < p->ndims; i++)
		if (p->dims[i].state == 0 && dims_resolve(p, i) != 0)
			return -1;
	if (p->token_dim == PLAN_NONE)
		return sp_error(p, map, "no token dim: give one dim its capture sizes, "
		                "as in T: {tokens: [1, 2, 4]}");
	for (i = 0; i < p->ndims; i++) {
		const struct dim_decl *d = &p->dims[i];
		const char *text = d->tokens ? "" : (const char *)d->node->data.scalar.value;
		struct plan_dim pd = {
			.name = d->name,
			.expr = strspn(text, "0123456789") == strlen(text) ? "" : text,
			.value = d->value,
			.flags = d->tokens ? PLAN_DIM_TOKENS : 0,
		};
		struct plan_diag diag;
		if (plan_add_dim(p->plan, &pd, NULL, &diag) != 0)
			return sp_error(p, d->node, "%s", diag.message);
	}
	return 0;
}
