/*
 * cmd-ops.c - bcgtool ops: list the op kinds of the registry with their
 * operands, attributes and defaults, dtypes, in-place ability and whether
 * they can be captured in a CUDA graph.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ops/op.h"

static int cmd_ops_exec(int argc, char **argv);

const struct cmd_entry cmd_ops_entry = {
	.name = "ops",
	.usage = "[--json]",
	.summary = "list the op kinds",
	.options =
		"  --json      print the list as a JSON array\n"
		"  -h, --help  show this help\n",
	.exec = cmd_ops_exec,
};

static const char *ops_capture_name(int capture)
{
	switch (capture) {
	case OP_CAPTURE_ALWAYS:    return "always";
	case OP_CAPTURE_SAFE_FORM: return "safe-form";
	default:                   return "never";
	}
}

static const char *ops_attr_type_name(int type)
{
	switch (type) {
	case OP_ATTR_INT:    return "int";
	case OP_ATTR_FLOAT:  return "float";
	case OP_ATTR_BOOL:   return "bool";
	case OP_ATTR_ENUM:   return "enum";
	default:             return "int-or-var";
	}
}

/* Whether attribute I of K defaults to the value of heads (kv_heads). */
static int ops_defaults_to_heads(const struct op_kind *k, int i)
{
	return i == op_kind_kv_heads_attr(k, NULL);
}

/* The default as a script would write it; "" when required. */
static void ops_attr_default(const struct op_kind *k, int i, char *buf, size_t len)
{
	const struct op_attr_spec *a = &k->attrs[i];

	if (a->required)
		buf[0] = '\0';
	else if (ops_defaults_to_heads(k, i))
		snprintf(buf, len, "heads");
	else if (a->type == OP_ATTR_BOOL)
		snprintf(buf, len, "%s", a->dflt != 0.0 ? "true" : "false");
	else if (a->type == OP_ATTR_ENUM)
		snprintf(buf, len, "%s", op_attr_choices(a)[(int)a->dflt]);
	else if (a->type == OP_ATTR_FLOAT)
		snprintf(buf, len, "%g", a->dflt);
	else
		snprintf(buf, len, "%lld", (long long)a->dflt);
}

/* NAMES, those from LEAST on (optional) in brackets. */
static void ops_list_names(const char *const *names, int least, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; names[i] != NULL && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s%s", i == least ? "[" : "",
		                      i ? ", " : "", names[i]);
	if (i > least && n < len)
		snprintf(buf + n, len - n, "]");
}

static void ops_dtypes(unsigned mask, char *buf, size_t len)
{
	static const int order[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_I32 };
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof order / sizeof order[0] && n < len; i++)
		if (mask & OP_DTYPE_BIT(order[i]))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "",
			                      plan_dtype_name(order[i]));
}

struct ops_row {
	char signature[160];
	char attrs[160];
	char dtypes[32];
};

static void ops_row_fill(const struct op_kind *k, struct ops_row *r)
{
	char in[64], out[64];
	size_t n = 0;

	ops_list_names(k->inputs, op_kind_min_inputs(k), in, sizeof in);
	ops_list_names(k->outputs, op_kind_count_outputs(k), out, sizeof out);
	if (k->outputs[0] != NULL && k->outputs[1] != NULL)
		snprintf(r->signature, sizeof r->signature, "(%s) -> (%s)", in, out);
	else
		snprintf(r->signature, sizeof r->signature, "(%s) -> %s", in, out);
	r->attrs[0] = '\0';
	for (int i = 0; k->attrs[i].name != NULL && n < sizeof r->attrs; i++) {
		char d[32];
		ops_attr_default(k, i, d, sizeof d);
		n += (size_t)snprintf(r->attrs + n, sizeof r->attrs - n, "%s%s%s%s", i ? " " : "",
		                      k->attrs[i].name, d[0] ? "=" : "", d);
		/* rope_type's parameters follow it: too many for one line */
		if (strcmp(k->attrs[i].name, "rope_type") == 0) {
			if (n < sizeof r->attrs)
				snprintf(r->attrs + n, sizeof r->attrs - n, " ...");
			break;
		}
	}
	if (r->attrs[0] == '\0')
		snprintf(r->attrs, sizeof r->attrs, "-");
	ops_dtypes(k->dtypes, r->dtypes, sizeof r->dtypes);
}

static void ops_print_text(void)
{
	struct ops_row rows[OP_COUNT];
	int w[4] = { 4, 9, 10, 6 };

	for (int i = 0; i < OP_COUNT; i++) {
		const struct op_kind *k = op_kind_get((enum op_id)i);
		ops_row_fill(k, &rows[i]);
		const char *f[4] = { k->name, rows[i].signature, rows[i].attrs, rows[i].dtypes };
		for (int c = 0; c < 4; c++)
			if ((int)strlen(f[c]) > w[c])
				w[c] = (int)strlen(f[c]);
	}
	printf("%-*s  %-*s  %-*s  %-*s  %-8s  %s\n", w[0], "kind", w[1], "signature", w[2],
	       "attributes", w[3], "dtypes", "in-place", "capture");
	for (int i = 0; i < OP_COUNT; i++) {
		const struct op_kind *k = op_kind_get((enum op_id)i);
		printf("%-*s  %-*s  %-*s  %-*s  %-8s  %s\n", w[0], k->name, w[1], rows[i].signature,
		       w[2], rows[i].attrs, w[3], rows[i].dtypes,
		       (k->flags & OP_INPLACE) ? "yes" : "no", ops_capture_name(k->capture));
	}
	printf("\nAttributes shown as NAME=DEFAULT are optional, the others required.\n"
	       "dtypes are those of the main operand; pos, ids and argmax's out are i32.\n"
	       "capture: always = captured in every mode; safe-form = a breakpoint in\n"
	       "breakable mode, captured in its graph-safe form in full mode.\n"
	       "rope_type=default ...: rope_type and its parameters (factor,\n"
	       "low_freq_factor, high_freq_factor, original_max_position_embeddings,\n"
	       "beta_fast, beta_slow, attention_factor, truncate); see --json.\n");
	for (int i = 0; i < OP_COUNT; i++) {
		const struct op_kind *k = op_kind_get((enum op_id)i);
		if (k->capture_why != NULL)
			printf("  %s: %s\n", k->name, k->capture_why);
	}
}

static void ops_json_names(struct plan_json *j, const char *const *names)
{
	plan_json_array_begin(j);
	for (int i = 0; names[i] != NULL; i++)
		plan_json_string(j, names[i]);
	plan_json_array_end(j);
}

static void ops_json_attr(struct plan_json *j, const struct op_kind *k, int a)
{
	const struct op_attr_spec *s = &k->attrs[a];

	plan_json_object_begin(j);
	plan_json_key(j, "name");
	plan_json_string(j, s->name);
	plan_json_key(j, "type");
	plan_json_string(j, ops_attr_type_name(s->type));
	plan_json_key(j, "required");
	plan_json_bool(j, s->required);
	plan_json_key(j, "default");
	if (s->required)
		plan_json_null(j);
	else if (ops_defaults_to_heads(k, a))
		plan_json_string(j, "heads");
	else if (s->type == OP_ATTR_BOOL)
		plan_json_bool(j, s->dflt != 0.0);
	else if (s->type == OP_ATTR_ENUM)
		plan_json_string(j, op_attr_choices(s)[(int)s->dflt]);
	else if (s->type == OP_ATTR_FLOAT)
		plan_json_double(j, s->dflt);
	else
		plan_json_int(j, (int64_t)s->dflt);
	plan_json_key(j, "help");
	plan_json_string(j, s->help);
	plan_json_object_end(j);
}

static void ops_print_json(void)
{
	struct plan_json *j = plan_json_new(stdout);

	if (j == NULL)
		return;
	plan_json_array_begin(j);
	for (int i = 0; i < OP_COUNT; i++) {
		const struct op_kind *k = op_kind_get((enum op_id)i);
		char dt[32];
		const char *p = dt;

		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, k->name);
		plan_json_key(j, "summary");
		plan_json_string(j, k->summary);
		plan_json_key(j, "inputs");
		ops_json_names(j, k->inputs);
		plan_json_key(j, "min_inputs");             /* the rest optional, all or none */
		plan_json_int(j, op_kind_min_inputs(k));
		plan_json_key(j, "outputs");
		ops_json_names(j, k->outputs);
		plan_json_key(j, "attrs");
		plan_json_array_begin(j);
		for (int a = 0; k->attrs[a].name != NULL; a++)
			ops_json_attr(j, k, a);
		plan_json_array_end(j);
		plan_json_key(j, "dtypes");
		plan_json_array_begin(j);
		ops_dtypes(k->dtypes, dt, sizeof dt);
		while (*p != '\0') {
			char one[8];
			size_t l = strcspn(p, " ");
			snprintf(one, sizeof one, "%.*s", (int)l, p);
			plan_json_string(j, one);
			p += l;
			p += *p == ' ';
		}
		plan_json_array_end(j);
		plan_json_key(j, "inplace");
		plan_json_bool(j, (k->flags & OP_INPLACE) != 0);
		plan_json_key(j, "capture");
		plan_json_string(j, ops_capture_name(k->capture));
		plan_json_key(j, "capture_why");
		if (k->capture_why != NULL)
			plan_json_string(j, k->capture_why);
		else
			plan_json_null(j);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_free(j);
}

static int cmd_ops_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, json = 0;

	while ((c = cmd_getopt(&cmd_ops_entry, argc, argv, "h", longopts)) != -1) {
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
	if (optind < argc)
		return cmd_usage_error(&cmd_ops_entry, "unexpected argument '%s'", argv[optind]);
	if (json)
		ops_print_json();
	else
		ops_print_text();
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "bcgtool ops: cannot write the list\n");
		return BCG_EXIT_RUNTIME;
	}
	return BCG_EXIT_OK;
}
