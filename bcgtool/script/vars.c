/*
 * vars.c - the vars section: host values that change every step (start,
 * step, limit; past the limit a var wraps to its start), which feeds and
 * integer-or-var attributes such as attention's kv_len read.
 */
#include "config.h"

#include <stdio.h>

#include "internal.h"

struct var_build {
	const char *name;
	char        what[SCRIPT_MAX_NAME + 16];
	int64_t     start, step, limit;
	yaml_node_t *limit_node;
};

static int vars_start(struct sp *p, yaml_node_t *node, void *obj)
{
	struct var_build *v = obj;
	char what[sizeof v->what + 16];

	snprintf(what, sizeof what, "the start of %s", v->what);
	return walk_int_range(p, node, what, 0, SCRIPT_MAX_VAR_VALUE, &v->start);
}

static int vars_step(struct sp *p, yaml_node_t *node, void *obj)
{
	struct var_build *v = obj;
	char what[sizeof v->what + 16];

	snprintf(what, sizeof what, "the step of %s", v->what);
	return walk_int_range(p, node, what, 0, SCRIPT_MAX_VAR_VALUE, &v->step);
}

static int vars_limit(struct sp *p, yaml_node_t *node, void *obj)
{
	struct var_build *v = obj;
	char what[sizeof v->what + 16];

	snprintf(what, sizeof what, "the limit of %s", v->what);
	v->limit_node = node;
	return walk_int_range(p, node, what, 0, SCRIPT_MAX_VAR_VALUE, &v->limit);
}

static const struct walk_field var_fields[] = {
	{ "start", YAML_SCALAR_NODE, WALK_REQUIRED, vars_start },
	{ "step", YAML_SCALAR_NODE, 0, vars_step },
	{ "limit", YAML_SCALAR_NODE, 0, vars_limit },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

int vars_parse(struct sp *p, yaml_node_t *map)
{
	size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	uint32_t i = 0;

	if (n > SCRIPT_MAX_VARS)
		return sp_error(p, walk_node(p, map->data.mapping.pairs.start[SCRIPT_MAX_VARS].key),
		                "more than %d vars", SCRIPT_MAX_VARS);
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++, i++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		struct var_build v = { .step = 1, .limit = SCRIPT_MAX_VAR_VALUE };
		struct plan_diag diag;

		if ((v.name = walk_name(p, key, "var name")) == NULL ||
		    sp_declare(p, v.name, key, SYM_VAR, i) != 0)
			return -1;
		snprintf(v.what, sizeof v.what, "var '%s'", v.name);
		if (walk_mapping(p, value, var_fields, &v, v.what) != 0)
			return -1;
		if (v.limit < v.start)
			return sp_error(p, v.limit_node, "the limit of %s (%lld) is below its start (%lld)",
			                v.what, (long long)v.limit, (long long)v.start);
		struct plan_var pv = { .name = v.name, .start = v.start, .step = v.step,
		                       .limit = v.limit };
		if (plan_add_var(p->plan, &pv, NULL, &diag) != 0)
			return sp_error(p, key, "%s", diag.message);
	}
	return 0;
}
