/*
 * tensors.c - the tensors section: dtype, shape over dims, role, the
 * initializer or per-step feed, and families (a count of members, each a
 * tensor of its own named NAME[i] whose seed is the declared seed + i).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "internal.h"

struct tensor_build {
	const char      *name;
	char             what[SCRIPT_MAX_NAME + 16];   /* "tensor 'h'" */
	char             part[SCRIPT_MAX_NAME + 32];   /* "the init of tensor 'h'" */
	int              dtype;
	int              role;
	uint32_t         rank;
	struct plan_axis shape[PLAN_MAX_RANK];
	yaml_node_t     *shape_node;
	int64_t          count;
	int              family;
	struct plan_init init;
	yaml_node_t     *init_node;
	struct plan_feed feed;
	yaml_node_t     *feed_node;
	yaml_node_t     *st_file;      /* init safetensors: file and tensor names */
	yaml_node_t     *st_names;
	yaml_node_t     *feedback;     /* feed prompt: the tensor fed back */
	struct plan_split split;       /* nblocks 0: replicated */
	yaml_node_t     *split_axis;   /* split: its keys, checked once all are read */
	yaml_node_t     *split_blocks;
	yaml_node_t     *split_unit;
};

static int is_float_dtype(int dtype)
{
	return dtype == PLAN_DTYPE_F32 || dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16;
}

/* ---------------------------------------------------------------------- */
/* dtype, shape, role, count.                                              */

static int tensors_dtype(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	const char *s = walk_scalar(p, node, "a dtype");

	if (s == NULL)
		return -1;
	if ((t->dtype = plan_dtype_from_name(s)) == 0)
		return sp_error(p, node, "unknown dtype '%.64s' (expected f32, f16, bf16 or i32)", s);
	return 0;
}

static int tensors_axis(struct sp *p, struct tensor_build *t, yaml_node_t *node,
                        struct plan_axis *axis)
{
	const char *s = walk_scalar(p, node, "an axis");
	const char *digits;

	if (s == NULL)
		return -1;
	digits = s[0] == '-' ? s + 1 : s;
	if (digits[0] != '\0' && strspn(digits, "0123456789") == strlen(digits)) {
		char what[sizeof t->what + 16];
		snprintf(what, sizeof what, "an axis of %s", t->what);
		axis->dim = PLAN_NONE;
		return walk_int_range(p, node, what, 1, INT64_MAX, &axis->size);
	}
	if (!expr_is_name(s))
		return sp_error(p, node, "axis '%.64s' of %s is neither a dim nor a number "
		                "(declare a dim for an expression)", s, t->what);
	if (dims_find(p, s, node, &axis->dim) != 0)
		return -1;
	axis->size = plan_get_dim(p->plan, axis->dim)->value;
	return 0;
}

static int tensors_shape(struct sp *p, yaml_node_t *seq, void *obj)
{
	struct tensor_build *t = obj;
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);

	t->shape_node = seq;
	if (n == 0)
		return sp_error(p, seq, "the shape of %s is empty", t->what);
	if (n > PLAN_MAX_RANK)
		return sp_error(p, seq, "the shape of %s has %zu axes; at most %d", t->what, n,
		                PLAN_MAX_RANK);
	for (size_t i = 0; i < n; i++)
		if (tensors_axis(p, t, walk_node(p, seq->data.sequence.items.start[i]),
		                 &t->shape[i]) != 0)
			return -1;
	t->rank = (uint32_t)n;
	return 0;
}

static int tensors_role(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	const char *s = walk_scalar(p, node, "a role");

	if (s == NULL)
		return -1;
	if ((t->role = plan_role_from_name(s)) == 0)
		return sp_error(p, node, "unknown role '%.64s' (expected weight, input, output, "
		                "state or activation)", s);
	return 0;
}

static int tensors_count(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	char what[sizeof t->what + 16];

	snprintf(what, sizeof what, "the count of %s", t->what);
	t->family = 1;
	return walk_int_range(p, node, what, 1, SCRIPT_MAX_COUNT, &t->count);
}

/* ---------------------------------------------------------------------- */
/* Initializers and feeds: {kind: K, ...} or the bare K.                   */

static int tensors_seed(struct sp *p, yaml_node_t *node, struct tensor_build *t, uint64_t *seed)
{
	char what[sizeof t->what + 16];
	int64_t v;

	snprintf(what, sizeof what, "the seed of %s", t->what);
	if (walk_int_range(p, node, what, 0, INT64_MAX, &v) != 0)
		return -1;
	*seed = (uint64_t)v;
	return 0;
}

static int init_seed(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	return tensors_seed(p, node, t, &t->init.seed);
}

static int init_scale(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	char what[sizeof t->what + 16];

	snprintf(what, sizeof what, "the scale of %s", t->what);
	return walk_float(p, node, what, &t->init.scale);
}

static int init_value(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	char what[sizeof t->what + 16];

	snprintf(what, sizeof what, "the value of %s", t->what);
	return walk_float(p, node, what, &t->init.value);
}

static int feed_seed(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	return tensors_seed(p, node, t, &t->feed.seed);
}

static int feed_scale(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	char what[sizeof t->what + 16];

	snprintf(what, sizeof what, "the scale of %s", t->what);
	return walk_float(p, node, what, &t->feed.scale);
}

static int feed_range(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	char what[sizeof t->what + 16];

	snprintf(what, sizeof what, "the range of %s", t->what);
	return walk_int_range(p, node, what, 1, INT32_MAX, &t->feed.range);
}

static int feed_var(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	const char *s = walk_scalar(p, node, "a var");
	const struct sym *sym;

	if (s == NULL)
		return -1;
	sym = symtab_find(&p->names, s);
	if (sym == NULL)
		return sp_error(p, node, "undefined var '%.64s'", s);
	if (sym->kind != SYM_VAR)
		return sp_error(p, node, "'%s' is %s, not a var", s,
		                sym->kind == SYM_DIM ? "a dim" : "a tensor");
	t->feed.var = sym->index;
	return 0;
}

static int init_st_file(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)p;
	((struct tensor_build *)obj)->st_file = node;
	return 0;
}

static int init_st_names(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)p;
	((struct tensor_build *)obj)->st_names = node;
	return 0;
}

static int feed_feedback(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)p;
	((struct tensor_build *)obj)->feedback = node;
	return 0;
}

#define KIND_FIELD { "kind", YAML_SCALAR_NODE, WALK_REQUIRED, NULL }
#define END_FIELD { NULL, YAML_NO_NODE, 0, NULL }

static const struct walk_field init_plain_fields[] = { KIND_FIELD, END_FIELD };
static const struct walk_field init_const_fields[] = {
	KIND_FIELD, { "value", YAML_SCALAR_NODE, WALK_REQUIRED, init_value }, END_FIELD
};
static const struct walk_field init_random_fields[] = {
	KIND_FIELD, { "seed", YAML_SCALAR_NODE, WALK_REQUIRED, init_seed },
	{ "scale", YAML_SCALAR_NODE, 0, init_scale }, END_FIELD
};
static const struct walk_field init_arange_fields[] = {
	KIND_FIELD, { "value", YAML_SCALAR_NODE, 0, init_value },
	{ "scale", YAML_SCALAR_NODE, 0, init_scale }, END_FIELD
};
static const struct walk_field init_safetensors_fields[] = {
	KIND_FIELD, { "file", YAML_SCALAR_NODE, WALK_REQUIRED, init_st_file },
	{ "tensor", YAML_NO_NODE, WALK_REQUIRED, init_st_names }, END_FIELD
};
static const struct walk_field feed_prompt_fields[] = {
	KIND_FIELD, { "range", YAML_SCALAR_NODE, WALK_REQUIRED, feed_range },
	{ "seed", YAML_SCALAR_NODE, 0, feed_seed },
	{ "feedback", YAML_SCALAR_NODE, WALK_REQUIRED, feed_feedback }, END_FIELD
};
static const struct walk_field feed_positions_fields[] = {
	KIND_FIELD, { "var", YAML_SCALAR_NODE, 0, feed_var }, END_FIELD
};
static const struct walk_field feed_tokens_fields[] = {
	KIND_FIELD, { "range", YAML_SCALAR_NODE, WALK_REQUIRED, feed_range },
	{ "seed", YAML_SCALAR_NODE, WALK_REQUIRED, feed_seed }, END_FIELD
};
static const struct walk_field feed_random_fields[] = {
	KIND_FIELD, { "seed", YAML_SCALAR_NODE, WALK_REQUIRED, feed_seed },
	{ "scale", YAML_SCALAR_NODE, 0, feed_scale }, END_FIELD
};
static const struct walk_field feed_batch_fields[] = { KIND_FIELD, END_FIELD };

struct spec_kind {
	const char              *name;
	int                      kind;
	const struct walk_field *fields;
};

static const struct spec_kind init_kinds[] = {
	{ "zeros", PLAN_INIT_ZEROS, init_plain_fields },
	{ "ones", PLAN_INIT_ONES, init_plain_fields },
	{ "const", PLAN_INIT_CONST, init_const_fields },
	{ "random", PLAN_INIT_RANDOM, init_random_fields },
	{ "arange", PLAN_INIT_ARANGE, init_arange_fields },
	{ "safetensors", PLAN_INIT_SAFETENSORS, init_safetensors_fields },
	{ NULL, 0, NULL }
};

static const struct spec_kind feed_kinds[] = {
	{ "positions", PLAN_FEED_POSITIONS, feed_positions_fields },
	{ "tokens", PLAN_FEED_TOKENS, feed_tokens_fields },
	{ "random", PLAN_FEED_RANDOM, feed_random_fields },
	{ "prompt", PLAN_FEED_PROMPT, feed_prompt_fields },
	{ "seq_lens", PLAN_FEED_SEQ_LENS, feed_positions_fields },
	{ "query_start", PLAN_FEED_QUERY_START, feed_batch_fields },
	{ "block_table", PLAN_FEED_BLOCK_TABLE, feed_batch_fields },
	{ "slots", PLAN_FEED_SLOTS, feed_batch_fields },
	{ "seq_positions", PLAN_FEED_SEQ_POSITIONS, feed_batch_fields },
	{ NULL, 0, NULL }
};

/* The shape a batch feed needs: rank RANK, its first axis the token dim
 * (TOKENS) or any other. */
static int tensors_batch_shape(struct sp *p, yaml_node_t *node, struct tensor_build *t,
                               uint32_t rank, int tokens, const char *want)
{
	const char *kind = plan_feed_name(t->feed.kind);

	if (t->dtype != PLAN_DTYPE_I32)
		return sp_error(p, node, "feed %s needs an i32 tensor; %s is %s", kind, t->what,
		                plan_dtype_name(t->dtype));
	if (t->family)
		return sp_error(p, node, "feed %s takes one tensor, not a family: %s has a count",
		                kind, t->what);
	if (t->rank != rank || (tokens != (t->shape[0].dim == p->token_dim)))
		return sp_error(p, node, "feed %s needs a tensor of shape %s; %s has another shape",
		                kind, want, t->what);
	return 0;
}

/* Parse NODE, an init or a feed ("init", "feed" in WORD) of T. */
static int tensors_spec(struct sp *p, yaml_node_t *node, struct tensor_build *t,
                        const char *word, const struct spec_kind *kinds, int *kind)
{
	yaml_node_t *kn = node;
	const struct spec_kind *k;
	const char *s;

	snprintf(t->part, sizeof t->part, "the %s of %s", word, t->what);
	if (node->type == YAML_MAPPING_NODE) {
		if ((kn = walk_find(p, node, "kind")) == NULL)
			return sp_error(p, node, "missing key 'kind' in %s", t->part);
	} else if (node->type != YAML_SCALAR_NODE) {
		return sp_error(p, node, "expected a scalar or a mapping for %s, found %s",
		                t->part, walk_type_name(node->type));
	}
	if ((s = walk_scalar(p, kn, "a kind")) == NULL)
		return -1;
	for (k = kinds; k->name != NULL; k++)
		if (strcmp(k->name, s) == 0)
			break;
	if (k->name == NULL) {
		char list[128];
		size_t n = 0, total = 0;
		while (kinds[total].name != NULL)
			total++;
		for (size_t i = 0; i < total; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
			                      i == 0 ? "" : i + 1 == total ? " or " : ", ", kinds[i].name);
		return sp_error(p, kn, "unknown %s kind '%.64s' (expected %s)", word, s, list);
	}
	*kind = k->kind;
	if (node->type == YAML_MAPPING_NODE)
		return walk_mapping(p, node, k->fields, t, t->part);
	for (const struct walk_field *f = k->fields; f->key != NULL; f++)
		if ((f->flags & WALK_REQUIRED) && strcmp(f->key, "kind") != 0)
			return sp_error(p, node, "missing key '%s' in %s (write {kind: %s, %s: ...})",
			                f->key, t->part, k->name, f->key);
	return 0;
}

static int tensors_init(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;

	t->init_node = node;
	t->init.scale = 1.0;
	if (tensors_spec(p, node, t, "init", init_kinds, &t->init.kind) != 0)
		return -1;
	if (t->init.kind == PLAN_INIT_RANDOM && !is_float_dtype(t->dtype))
		return sp_error(p, node, "init random needs a float tensor; %s is %s", t->what,
		                plan_dtype_name(t->dtype));
	if (t->init.kind == PLAN_INIT_SAFETENSORS) {
		if (!is_float_dtype(t->dtype))
			return sp_error(p, node, "init safetensors needs a float tensor; %s is %s",
			                t->what, plan_dtype_name(t->dtype));
		if (t->role != PLAN_ROLE_WEIGHT)
			return sp_error(p, node, "init safetensors is for weights; %s is %s %s", t->what,
			                t->role == PLAN_ROLE_ACTIVATION || t->role == PLAN_ROLE_INPUT ||
			                t->role == PLAN_ROLE_OUTPUT ? "an" : "a", plan_role_name(t->role));
		for (uint32_t i = 0; i < t->rank; i++)
			if (t->shape[i].dim == p->token_dim && t->shape[i].dim != PLAN_NONE)
				return sp_error(p, node, "init safetensors needs a shape without the token "
				                "dim; %s has one", t->what);
	}
	return 0;
}

static int tensors_feed(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	const struct plan_dim *td;

	t->feed_node = node;
	t->feed.scale = 1.0;
	t->feed.var = PLAN_NONE;
	if (tensors_spec(p, node, t, "feed", feed_kinds, &t->feed.kind) != 0)
		return -1;
	switch (t->feed.kind) {
	case PLAN_FEED_POSITIONS:
		td = plan_get_dim(p->plan, p->token_dim);
		if (t->dtype != PLAN_DTYPE_I32)
			return sp_error(p, node, "feed positions needs an i32 tensor; %s is %s",
			                t->what, plan_dtype_name(t->dtype));
		if (t->rank != 1 || t->shape[0].dim != p->token_dim)
			return sp_error(p, node, "feed positions needs a tensor of shape [%s]; "
			                "%s has another shape", td->name, t->what);
		break;
	case PLAN_FEED_TOKENS:
		if (t->dtype != PLAN_DTYPE_I32)
			return sp_error(p, node, "feed tokens needs an i32 tensor; %s is %s",
			                t->what, plan_dtype_name(t->dtype));
		break;
	case PLAN_FEED_PROMPT:
		td = plan_get_dim(p->plan, p->token_dim);
		if (t->dtype != PLAN_DTYPE_I32)
			return sp_error(p, node, "feed prompt needs an i32 tensor; %s is %s",
			                t->what, plan_dtype_name(t->dtype));
		if (t->rank != 1 || t->shape[0].dim != p->token_dim)
			return sp_error(p, node, "feed prompt needs a tensor of shape [%s]; "
			                "%s has another shape", td->name, t->what);
		if (p->prompt_node != NULL)
			return sp_error(p, node, "a script has one prompt feed, and %s has a second",
			                t->what);
		p->prompt_node = node;
		p->prompt_from = t->feedback;
		break;
	case PLAN_FEED_SEQ_LENS:
		return tensors_batch_shape(p, node, t, 1, 0, "[R] (R a dim other than the token dim)");
	case PLAN_FEED_QUERY_START:
		return tensors_batch_shape(p, node, t, 1, 0, "[R1] (R1 = R + 1)");
	case PLAN_FEED_BLOCK_TABLE:
		return tensors_batch_shape(p, node, t, 2, 0, "[R, MB]");
	case PLAN_FEED_SLOTS:
	case PLAN_FEED_SEQ_POSITIONS: {
		char want[SCRIPT_MAX_NAME + 4];
		td = plan_get_dim(p->plan, p->token_dim);
		snprintf(want, sizeof want, "[%s]", td->name);
		return tensors_batch_shape(p, node, t, 1, 1, want);
	}
	default:
		if (!is_float_dtype(t->dtype))
			return sp_error(p, node, "feed random needs a float tensor; %s is %s",
			                t->what, plan_dtype_name(t->dtype));
		break;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* split: how the tensor shares out over the ranks of a tensor-parallel    */
/* run (TP-DESIGN, plan.h's struct plan_split).                            */

static int split_axis(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct tensor_build *)obj)->split_axis = node;
	(void)p;
	return 0;
}

static int split_blocks(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct tensor_build *)obj)->split_blocks = node;
	(void)p;
	return 0;
}

static int split_unit(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct tensor_build *)obj)->split_unit = node;
	(void)p;
	return 0;
}

static const struct walk_field split_fields[] = {
	{ "axis", YAML_SCALAR_NODE, WALK_REQUIRED, split_axis },
	{ "blocks", YAML_SEQUENCE_NODE, 0, split_blocks },
	{ "unit", YAML_SCALAR_NODE, 0, split_unit },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

/* Needs the shape: the table lists split after it. */
static int tensors_split(struct sp *p, yaml_node_t *node, void *obj)
{
	struct tensor_build *t = obj;
	struct plan_split *sp = &t->split;
	char what[sizeof t->what + 48];
	int64_t axis, size, sum = 0;

	snprintf(what, sizeof what, "the split of %s", t->what);
	if (walk_mapping(p, node, split_fields, t, what) != 0)
		return -1;
	snprintf(what, sizeof what, "the split axis of %s", t->what);
	if (walk_int(p, t->split_axis, what, &axis) != 0)
		return -1;
	if (axis < 0 || axis >= (int64_t)t->rank)
		return sp_error(p, t->split_axis, "the split axis of %s is %lld; it has axes 0 to %u",
		                t->what, (long long)axis, t->rank - 1);
	if (t->shape[axis].dim == p->token_dim && t->shape[axis].dim != PLAN_NONE)
		return sp_error(p, t->split_axis, "the split axis of %s is the token dim '%s': "
		                "tokens never split", t->what,
		                plan_get_dim(p->plan, p->token_dim)->name);
	size = t->shape[axis].size;
	sp->axis = (uint32_t)axis;
	sp->unit = 1;
	if (t->split_unit != NULL) {
		snprintf(what, sizeof what, "the split unit of %s", t->what);
		if (walk_int_range(p, t->split_unit, what, 1, INT64_MAX, &sp->unit) != 0)
			return -1;
	}
	if (t->split_blocks == NULL) {
		sp->nblocks = 1;
		sp->block[0].full = size;
	} else {
		yaml_node_item_t *it = t->split_blocks->data.sequence.items.start;
		size_t n = (size_t)(t->split_blocks->data.sequence.items.top - it);
		if (n == 0)
			return sp_error(p, t->split_blocks, "the split blocks of %s are empty", t->what);
		if (n > PLAN_MAX_SPLIT_BLOCKS)
			return sp_error(p, t->split_blocks, "the split of %s has %zu blocks; at most %d",
			                t->what, n, PLAN_MAX_SPLIT_BLOCKS);
		for (size_t i = 0; i < n; i++) {
			yaml_node_t *b = walk_node(p, it[i]);
			snprintf(what, sizeof what, "split block %zu of %s", i, t->what);
			if (walk_int_range(p, b, what, 1, INT64_MAX, &sp->block[i].full) != 0)
				return -1;
			sum += sp->block[i].full;
		}
		sp->nblocks = (uint32_t)n;
		if (sum != size)
			return sp_error(p, t->split_blocks, "the split blocks of %s sum to %lld; its "
			                "axis %lld is %lld", t->what, (long long)sum, (long long)axis,
			                (long long)size);
	}
	for (uint32_t i = 0; i < sp->nblocks; i++) {
		sp->block[i].start = 0;
		sp->block[i].len = sp->block[i].full;
		if (sp->block[i].full % sp->unit != 0)
			return sp_error(p, t->split_unit != NULL ? t->split_unit : node,
			                "the split unit of %s, %lld, does not divide block %u (%lld)",
			                t->what, (long long)sp->unit, i, (long long)sp->block[i].full);
	}
	if (t->role == PLAN_ROLE_INPUT)
		return sp_error(p, node, "input '%s' cannot split: its feed writes the whole tensor",
		                t->name);
	return 0;
}

static const struct walk_field tensor_fields[] = {
	{ "dtype", YAML_SCALAR_NODE, WALK_REQUIRED, tensors_dtype },
	{ "shape", YAML_SEQUENCE_NODE, WALK_REQUIRED, tensors_shape },
	{ "role", YAML_SCALAR_NODE, 0, tensors_role },
	{ "count", YAML_SCALAR_NODE, 0, tensors_count },
	{ "init", YAML_NO_NODE, 0, tensors_init },
	{ "feed", YAML_NO_NODE, 0, tensors_feed },
	{ "split", YAML_MAPPING_NODE, 0, tensors_split },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

/* ---------------------------------------------------------------------- */
/* The section.                                                            */

/* Which of init and feed the role allows or needs. */
static int tensors_check_role(struct sp *p, struct tensor_build *t, yaml_node_t *map)
{
	const char *role = plan_role_name(t->role);

	if (t->feed_node != NULL && t->role != PLAN_ROLE_INPUT)
		return sp_error(p, t->feed_node, "only inputs take a feed; '%s' is %s %s", t->name,
		                t->role == PLAN_ROLE_ACTIVATION ? "an" : "a", role);
	switch (t->role) {
	case PLAN_ROLE_INPUT:
		if (t->init_node != NULL)
			return sp_error(p, t->init_node, "input '%s' takes a feed, not an init", t->name);
		if (t->feed_node == NULL)
			return sp_error(p, map, "input '%s' needs a feed", t->name);
		break;
	case PLAN_ROLE_ACTIVATION:
		if (t->init_node != NULL)
			return sp_error(p, t->init_node, "activation '%s' takes no init: ops write it",
			                t->name);
		break;
	case PLAN_ROLE_WEIGHT:
		if (t->init_node == NULL)
			return sp_error(p, map, "weight '%s' needs an init", t->name);
		break;
	default:    /* output, state: zeros unless told otherwise */
		if (t->init_node == NULL)
			t->init.kind = PLAN_INIT_ZEROS;
		break;
	}
	return 0;
}

/* The bytes of one member at the largest capture size, with overflow
 * checks; adds them to the script's total. */
static int tensors_check_size(struct sp *p, struct tensor_build *t, yaml_node_t *key)
{
	uint64_t numel = 1, bytes;

	for (uint32_t i = 0; i < t->rank; i++) {
		uint64_t s = (uint64_t)t->shape[i].size;
		if (t->shape[i].dim == p->token_dim)
			s = (uint64_t)p->sizes[p->nsizes - 1];
		if (__builtin_mul_overflow(numel, s, &numel) || numel > INT64_MAX)
			return sp_error(p, t->shape_node, "%s is too large: its element count "
			                "overflows 64 bits", t->what);
	}
	if (__builtin_mul_overflow(numel, (uint64_t)plan_dtype_size(t->dtype), &bytes) ||
	    bytes > SCRIPT_MAX_BYTES)
		return sp_error(p, t->shape_node, "%s is too large: %llu elements of %s; a tensor "
		                "may take at most 2^48 bytes", t->what, (unsigned long long)numel,
		                plan_dtype_name(t->dtype));
	for (int64_t m = 0; m < t->count; m++) {
		p->total_bytes += bytes;
		if (p->total_bytes > SCRIPT_MAX_BYTES)
			return sp_error(p, key, "the tensors take more than 2^48 bytes in all");
	}
	return 0;
}

static int tensors_add(struct sp *p, struct tensor_build *t, yaml_node_t *key)
{
	struct plan_tensor pt = {
		.dtype = t->dtype, .role = t->role, .rank = t->rank,
		.init = t->init, .feed = t->feed, .split = t->split,
	};
	char name[SCRIPT_MAX_NAME + 16];
	struct plan_diag diag;

	memcpy(pt.shape, t->shape, sizeof pt.shape);
	for (int64_t m = 0; m < t->count; m++) {
		if (plan_count_tensors(p->plan) >= SCRIPT_MAX_TENSORS)
			return sp_error(p, key, "more than %d tensors (each member of a family "
			                "counts)", SCRIPT_MAX_TENSORS);
		if (t->family)
			snprintf(name, sizeof name, "%s[%lld]", t->name, (long long)m);
		else
			snprintf(name, sizeof name, "%s", t->name);
		pt.name = name;
		/* Each member draws its own numbers. */
		pt.init.seed = t->init.seed + (uint64_t)m;
		pt.feed.seed = t->feed.seed + (uint64_t)m;
		if (plan_add_tensor(p->plan, &pt, NULL, &diag) != 0)
			return sp_error(p, key, "%s", diag.message);
	}
	return 0;
}

int tensors_parse(struct sp *p, yaml_node_t *map)
{
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	uint32_t i = 0;

	if (n > SCRIPT_MAX_TENSORS)
		return sp_error(p, walk_node(p, map->data.mapping.pairs.start[SCRIPT_MAX_TENSORS].key),
		                "more than %d tensors", SCRIPT_MAX_TENSORS);
	if (n > 0 && (p->tensors = calloc(n, sizeof *p->tensors)) == NULL)
		return sp_error(p, NULL, "out of memory");
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++, i++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		struct tensor_build t = { .role = PLAN_ROLE_ACTIVATION, .count = 1 };
		struct tensor_decl *d = &p->tensors[i];

		t.feed.var = PLAN_NONE;
		if ((t.name = walk_name(p, key, "tensor name")) == NULL ||
		    sp_declare(p, t.name, key, SYM_TENSOR, i) != 0)
			return -1;
		snprintf(t.what, sizeof t.what, "tensor '%s'", t.name);
		if (walk_mapping(p, value, tensor_fields, &t, t.what) != 0 ||
		    tensors_check_role(p, &t, value) != 0 ||
		    tensors_check_size(p, &t, key) != 0)
			return -1;
		d->name = t.name;
		d->node = value;
		d->first = plan_count_tensors(p->plan);
		d->count = (uint32_t)t.count;
		d->family = t.family;
		p->ntensors = i + 1;
		if (t.feed.kind == PLAN_FEED_PROMPT)
			p->prompt_tensor = d->first;
		if (tensors_add(p, &t, key) != 0)
			return -1;
		if (t.init.kind == PLAN_INIT_SAFETENSORS) {
			struct weight_decl w = {
				.tensor = t.name, .first = d->first, .count = d->count,
				.family = t.family, .file_node = t.st_file, .names_node = t.st_names,
			};
			if (weights_add(p, &w) != 0)
				return -1;
		}
	}
	return weights_prompt(p);
}
