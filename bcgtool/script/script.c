/*
 * script.c - load an op script: read the YAML document, check its version,
 * and walk its sections in dependency order into a plan's program part.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util.h"

/* The script's identity in the plan's meta. */
static uint64_t script_hash(const char *data, size_t len)
{
	return plan_hash64(data, len, PLAN_HASH64_INIT);
}

/* ---------------------------------------------------------------------- */
/* YAML syntax errors.                                                     */

static void script_yaml_error(struct sp *p, const yaml_parser_t *parser, const char *data,
                              size_t len)
{
	unsigned line = (unsigned)parser->problem_mark.line + 1;
	unsigned col = (unsigned)parser->problem_mark.column + 1;
	const char *problem = parser->problem ? parser->problem : "unknown error";

	switch (parser->error) {
	case YAML_MEMORY_ERROR:
		sp_error_at(p, 0, 0, "out of memory reading the YAML document");
		return;
	case YAML_READER_ERROR:
		/* The reader knows a byte offset, not a mark. */
		line = 1;
		col = 1;
		for (size_t i = 0; i < parser->problem_offset && i < len; i++) {
			if (data[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		if (parser->problem_value != -1)
			sp_error_at(p, line, col, "invalid YAML: %s (byte 0x%02x)", problem,
			            (unsigned)parser->problem_value & 0xffu);
		else
			sp_error_at(p, line, col, "invalid YAML: %s", problem);
		return;
	default:
		if (parser->context != NULL)
			sp_error_at(p, line, col, "invalid YAML: %s (%s)", problem, parser->context);
		else
			sp_error_at(p, line, col, "invalid YAML: %s", problem);
		return;
	}
}

/* ---------------------------------------------------------------------- */
/* The top level.                                                          */

struct top_build {
	const char *description;
};

static int top_version(struct sp *p, yaml_node_t *node, void *obj)
{
	const char *s = walk_scalar(p, node, "'bcg'");

	(void)obj;
	if (s == NULL)
		return -1;
	if (strcmp(s, "1") != 0)
		return sp_error(p, node, "unsupported script version '%.64s' (this bcgtool reads "
		                "bcg: %d)", s, SCRIPT_VERSION);
	return 0;
}

static int top_description(struct sp *p, yaml_node_t *node, void *obj)
{
	struct top_build *t = obj;

	t->description = walk_scalar(p, node, "'description'");
	return t->description == NULL ? -1 : 0;
}

static int top_dims(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)obj;
	return dims_parse(p, node);
}

static int top_vars(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)obj;
	return vars_parse(p, node);
}

static int top_tensors(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)obj;
	return tensors_parse(p, node);
}

static int top_ops(struct sp *p, yaml_node_t *node, void *obj)
{
	(void)obj;
	return ops_parse(p, node);
}

/* In dependency order: handlers run in this order. */
static const struct walk_field top_fields[] = {
	{ "bcg", YAML_SCALAR_NODE, WALK_REQUIRED, top_version },
	{ "description", YAML_SCALAR_NODE, 0, top_description },
	{ "dims", YAML_MAPPING_NODE, WALK_REQUIRED, top_dims },
	{ "vars", YAML_MAPPING_NODE, 0, top_vars },
	{ "tensors", YAML_MAPPING_NODE, WALK_REQUIRED, top_tensors },
	{ "ops", YAML_SEQUENCE_NODE, WALK_REQUIRED, top_ops },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

static int script_walk(struct sp *p, yaml_node_t *root, struct top_build *top)
{
	yaml_node_t *version;

	/* The version first: a newer script's keys would be unknown here. */
	if (root->type == YAML_MAPPING_NODE &&
	    (version = walk_find(p, root, "bcg")) != NULL &&
	    version->type == YAML_SCALAR_NODE && top_version(p, version, NULL) != 0)
		return -1;
	if (walk_mapping(p, root, top_fields, top, "the script") != 0 || batch_check(p) != 0)
		return -1;
	return check_schedule(p);
}

static int script_build(struct sp *p, const struct top_build *top, struct script **out)
{
	struct script *s = calloc(1, sizeof *s);

	if (s == NULL ||
	    (s->variants = calloc(p->nsizes, sizeof *s->variants)) == NULL ||
	    (s->description = strdup(top->description ? top->description : "")) == NULL) {
		script_free(s);
		return sp_error(p, NULL, "out of memory");
	}
	for (uint32_t i = 0; i < p->nsizes; i++) {
		s->variants[i].tokens = p->sizes[i];
		s->variants[i].mode = p->modes[i];
		s->variants[i].requests = p->requests[i];
		s->variants[i].uniform = p->uniform[i];
	}
	s->nvariants = p->nsizes;
	{
		uint32_t nt = plan_count_tensors(p->plan);
		s->tensor_line = calloc(nt ? nt : 1, sizeof *s->tensor_line);
		s->tensor_col = calloc(nt ? nt : 1, sizeof *s->tensor_col);
		if (s->tensor_line == NULL || s->tensor_col == NULL) {
			script_free(s);
			return sp_error(p, NULL, "out of memory");
		}
		for (uint32_t i = 0; i < p->ntensors; i++) {
			const struct tensor_decl *d = &p->tensors[i];
			yaml_node_t *at = d->node;
			if (at != NULL && at->type == YAML_MAPPING_NODE &&
			    walk_find(p, at, "split") != NULL)
				at = walk_find(p, at, "split");
			for (uint32_t m = 0; at != NULL && m < d->count && d->first + m < nt; m++) {
				s->tensor_line[d->first + m] = (uint32_t)at->start_mark.line + 1;
				s->tensor_col[d->first + m] = (uint32_t)at->start_mark.column + 1;
			}
		}
	}
	s->program = p->plan;
	p->plan = NULL;
	*out = s;
	return 0;
}

int script_load_memory(const char *path, const char *data, size_t len,
                       struct script **out, struct script_error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc, next;
	int have_parser = 0, have_doc = 0, rc = -1;
	struct sp p;
	struct top_build top = { NULL };
	yaml_node_t *root;

	memset(&p, 0, sizeof p);
	memset(err, 0, sizeof *err);
	*out = NULL;
	p.path = path;
	p.err = err;
	p.token_dim = PLAN_NONE;
	p.doc = &doc;

	if (!yaml_parser_initialize(&parser)) {
		sp_error_at(&p, 0, 0, "out of memory");
		goto out;
	}
	have_parser = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	if (!yaml_parser_load(&parser, &doc)) {
		script_yaml_error(&p, &parser, data, len);
		goto out;
	}
	have_doc = 1;
	if ((root = yaml_document_get_root_node(&doc)) == NULL) {
		sp_error_at(&p, 1, 1, "the script is empty");
		goto out;
	}
	if (!yaml_parser_load(&parser, &next)) {
		script_yaml_error(&p, &parser, data, len);
		goto out;
	}
	if (yaml_document_get_root_node(&next) != NULL) {
		sp_error(&p, yaml_document_get_root_node(&next),
		         "a script is one YAML document, and a second one starts here");
		yaml_document_delete(&next);
		goto out;
	}
	yaml_document_delete(&next);

	if ((p.plan = plan_new()) == NULL) {
		sp_error_at(&p, 0, 0, "out of memory");
		goto out;
	}
	struct plan_meta meta = {
		.tool = "bcgtool " PACKAGE_VERSION,
		.script = path,
		.script_hash = script_hash(data, len),
	};
	struct plan_diag diag;
	if (plan_set_meta(p.plan, &meta, &diag) != 0) {
		sp_error_at(&p, 0, 0, "%s", diag.message);
		goto out;
	}
	if (script_walk(&p, root, &top) != 0 || script_build(&p, &top, out) != 0)
		goto out;
	rc = 0;
out:
	plan_free(p.plan);
	symtab_free(&p.names);
	symtab_free(&p.opnames);
	free(p.dims);
	free(p.tensors);
	free(p.sizes);
	free(p.modes);
	free(p.requests);
	free(p.uniform);
	free(p.size_nodes);
	free(p.written);
	weights_release(&p);
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	return rc;
}

int script_load(const char *path, struct script **out, struct script_error *err)
{
	char *data;
	size_t len;
	int rc;

	*out = NULL;
	if (bcg_read_file(path, &data, &len) != 0) {
		memset(err, 0, sizeof *err);
		if (errno == EISDIR)
			snprintf(err->message, sizeof err->message, "is a directory");
		else
			snprintf(err->message, sizeof err->message, "cannot read: %s", strerror(errno));
		return -1;
	}
	rc = script_load_memory(path, data, len, out, err);
	free(data);
	return rc;
}

void script_free(struct script *script)
{
	if (script == NULL)
		return;
	plan_free(script->program);
	free(script->variants);
	free(script->description);
	free(script->tensor_line);
	free(script->tensor_col);
	free(script);
}
