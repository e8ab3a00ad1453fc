/*
 * walk.c - walking the YAML document: errors at node positions, node types,
 * handler tables for mappings, and the scalars every section reads.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "internal.h"

/* ---------------------------------------------------------------------- */
/* Errors.                                                                 */

static int sp_verror_at(struct sp *p, unsigned line, unsigned col, const char *fmt, va_list ap)
{
	if (p->failed)
		return -1;
	p->failed = 1;
	p->err->line = line;
	p->err->col = col;
	vsnprintf(p->err->message, sizeof p->err->message, fmt, ap);
	return -1;
}

int sp_error_at(struct sp *p, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_verror_at(p, line, col, fmt, ap);
	va_end(ap);
	return -1;
}

unsigned sp_line(const yaml_node_t *node)
{
	return node != NULL ? (unsigned)node->start_mark.line + 1 : 0;
}

unsigned sp_col(const yaml_node_t *node)
{
	return node != NULL ? (unsigned)node->start_mark.column + 1 : 0;
}

int sp_error(struct sp *p, const yaml_node_t *node, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sp_verror_at(p, sp_line(node), sp_col(node), fmt, ap);
	va_end(ap);
	return -1;
}

void sp_op_desc(const char *name, const char *kind, uint32_t index, char *buf, size_t len)
{
	if (name != NULL && name[0] != '\0')
		snprintf(buf, len, "op '%s' (%s)", name, kind);
	else
		snprintf(buf, len, "op %s#%u", kind, index);
}

/* ---------------------------------------------------------------------- */
/* Nodes.                                                                  */

const char *walk_type_name(yaml_node_type_t type)
{
	switch (type) {
	case YAML_SCALAR_NODE:   return "a scalar";
	case YAML_SEQUENCE_NODE: return "a sequence";
	case YAML_MAPPING_NODE:  return "a mapping";
	default:                 return "nothing";
	}
}

yaml_node_t *walk_node(struct sp *p, int id)
{
	return yaml_document_get_node(p->doc, id);
}

int walk_expect(struct sp *p, yaml_node_t *node, yaml_node_type_t type, const char *what)
{
	if (node->type == type)
		return 0;
	return sp_error(p, node, "expected %s for %s, found %s", walk_type_name(type), what,
	                walk_type_name(node->type));
}

const char *walk_scalar(struct sp *p, yaml_node_t *node, const char *what)
{
	const char *s;

	if (walk_expect(p, node, YAML_SCALAR_NODE, what) != 0)
		return NULL;
	s = (const char *)node->data.scalar.value;
	if (strlen(s) != node->data.scalar.length) {
		sp_error(p, node, "%s holds a NUL character", what);
		return NULL;
	}
	return s;
}

yaml_node_t *walk_find(struct sp *p, yaml_node_t *map, const char *key)
{
	if (map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = walk_node(p, pair->key);
		if (k != NULL && k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return walk_node(p, pair->value);
	}
	return NULL;
}

/* "dtype, shape, role or feed" */
static void walk_key_list(const struct walk_field *fields, char *buf, size_t len)
{
	size_t n = 0, total = 0;

	while (fields[total].key != NULL)
		total++;
	buf[0] = '\0';
	for (size_t i = 0; i < total && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		                      i == 0 ? "" : i + 1 == total ? " or " : ", ", fields[i].key);
}

#define WALK_MAX_FIELDS 16

int walk_mapping(struct sp *p, yaml_node_t *map, const struct walk_field *fields,
                 void *obj, const char *what)
{
	yaml_node_t *values[WALK_MAX_FIELDS] = { NULL };
	size_t nfields = 0;

	while (fields[nfields].key != NULL)
		nfields++;
	if (nfields > WALK_MAX_FIELDS)
		return sp_error(p, map, "internal error: handler table too long");
	if (walk_expect(p, map, YAML_MAPPING_NODE, what) != 0)
		return -1;
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		const char *k;
		size_t i;

		if (key == NULL || value == NULL)
			return sp_error(p, map, "internal error: dangling YAML node");
		if (key->type != YAML_SCALAR_NODE)
			return sp_error(p, key, "expected a scalar key in %s, found %s", what,
			                walk_type_name(key->type));
		if ((k = walk_scalar(p, key, "a key")) == NULL)
			return -1;
		for (i = 0; i < nfields; i++)
			if (strcmp(fields[i].key, k) == 0)
				break;
		if (i == nfields) {
			char list[256];
			walk_key_list(fields, list, sizeof list);
			return sp_error(p, key, "unknown key '%.64s' in %s (expected %s)", k, what, list);
		}
		if (values[i] != NULL)
			return sp_error(p, key, "duplicate key '%s' in %s", k, what);
		if (fields[i].type != YAML_NO_NODE && value->type != fields[i].type)
			return sp_error(p, value, "expected %s for '%s', found %s",
			                walk_type_name(fields[i].type), k, walk_type_name(value->type));
		values[i] = value;
	}
	for (size_t i = 0; i < nfields; i++)
		if ((fields[i].flags & WALK_REQUIRED) && values[i] == NULL)
			return sp_error(p, map, "missing key '%s' in %s", fields[i].key, what);
	for (size_t i = 0; i < nfields; i++)
		if (values[i] != NULL && fields[i].handler != NULL &&
		    fields[i].handler(p, values[i], obj) != 0)
			return -1;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Scalars.                                                                */

int walk_bool(struct sp *p, yaml_node_t *node, const char *what, int *out)
{
	const char *s = walk_scalar(p, node, what);

	if (s == NULL)
		return -1;
	if (strcmp(s, "true") == 0)
		*out = 1;
	else if (strcmp(s, "false") == 0)
		*out = 0;
	else
		return sp_error(p, node, "%s takes true or false, not '%.64s'", what, s);
	return 0;
}

int walk_float(struct sp *p, yaml_node_t *node, const char *what, double *out)
{
	const char *s = walk_scalar(p, node, what);
	char *end;
	double v;

	if (s == NULL)
		return -1;
	/* Decimal notation only: no inf, nan, hexadecimal or spaces. */
	if (s[0] == '\0' || strspn(s, "0123456789+-.eE") != strlen(s))
		return sp_error(p, node, "%s takes a number, not '%.64s'", what, s);
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || end == s)
		return sp_error(p, node, "%s takes a number, not '%.64s'", what, s);
	if (!isfinite(v))
		return sp_error(p, node, "%s: '%.64s' is out of range", what, s);
	*out = v;
	return 0;
}

const char *walk_name(struct sp *p, yaml_node_t *node, const char *what)
{
	const char *s = walk_scalar(p, node, what);

	if (s == NULL)
		return NULL;
	if (!expr_is_name(s)) {
		sp_error(p, node, "'%.64s' is not a valid %s: use letters, digits and _, "
		         "not starting with a digit", s, what);
		return NULL;
	}
	if (strlen(s) >= SCRIPT_MAX_NAME) {
		sp_error(p, node, "%s '%.32s...' is longer than %d bytes", what, s,
		         SCRIPT_MAX_NAME - 1);
		return NULL;
	}
	return s;
}

int walk_int(struct sp *p, yaml_node_t *node, const char *what, int64_t *out)
{
	const char *s = walk_scalar(p, node, what);

	if (s == NULL)
		return -1;
	return sp_eval(p, s, node, out);
}

int walk_int_range(struct sp *p, yaml_node_t *node, const char *what, int64_t min,
                   int64_t max, int64_t *out)
{
	if (walk_int(p, node, what, out) != 0)
		return -1;
	if (*out >= min && *out <= max)
		return 0;
	if (max == INT64_MAX)
		return sp_error(p, node, "%s must be at least %lld, not %lld", what,
		                (long long)min, (long long)*out);
	return sp_error(p, node, "%s must be from %lld to %lld, not %lld", what,
	                (long long)min, (long long)max, (long long)*out);
}

/* ---------------------------------------------------------------------- */
/* Declarations.                                                           */

static const char *sym_kind_name(int kind)
{
	switch (kind) {
	case SYM_DIM:    return "a dim";
	case SYM_VAR:    return "a var";
	case SYM_TENSOR: return "a tensor";
	default:         return "an op";
	}
}

int sp_declare(struct sp *p, const char *name, yaml_node_t *node, int kind, uint32_t index)
{
	const struct sym *old = symtab_find(&p->names, name);
	struct sym s = {
		.name = name, .kind = kind, .index = index,
		.line = sp_line(node), .col = sp_col(node),
	};

	if (old != NULL)
		return sp_error(p, node, "'%s' is already declared (%s, at %u:%u)", name,
		                sym_kind_name(old->kind), old->line, old->col);
	if (symtab_add(&p->names, &s) != 0)
		return sp_error(p, NULL, "out of memory");
	return 0;
}
