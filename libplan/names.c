/*
 * names.c - enumerations as the words scripts, output and JSON use.
 */
#include "config.h"

#include <string.h>

#include "plan.h"

#define NAME_AT(table, v) \
	((v) >= 0 && (size_t)(v) < sizeof(table) / sizeof(table[0]) && (table)[v] ? (table)[v] : "?")

static const char *const dtype_names[] = {
	[PLAN_DTYPE_F32] = "f32", [PLAN_DTYPE_F16] = "f16",
	[PLAN_DTYPE_BF16] = "bf16", [PLAN_DTYPE_I32] = "i32",
};
static const char *const role_names[] = {
	[PLAN_ROLE_WEIGHT] = "weight", [PLAN_ROLE_INPUT] = "input",
	[PLAN_ROLE_OUTPUT] = "output", [PLAN_ROLE_STATE] = "state",
	[PLAN_ROLE_ACTIVATION] = "activation",
};
static const char *const backend_names[] = {
	[PLAN_BACKEND_HOST] = "host", [PLAN_BACKEND_CUDA] = "cuda",
};
static const char *const mode_names[] = {
	[PLAN_MODE_BREAKABLE] = "breakable", [PLAN_MODE_FULL] = "full",
	[PLAN_MODE_EAGER] = "eager",
};
static const char *const init_names[] = {
	[PLAN_INIT_NONE] = "none", [PLAN_INIT_ZEROS] = "zeros", [PLAN_INIT_ONES] = "ones",
	[PLAN_INIT_CONST] = "const", [PLAN_INIT_RANDOM] = "random",
	[PLAN_INIT_ARANGE] = "arange", [PLAN_INIT_SAFETENSORS] = "safetensors",
};
static const char *const feed_names[] = {
	[PLAN_FEED_NONE] = "none", [PLAN_FEED_POSITIONS] = "positions",
	[PLAN_FEED_TOKENS] = "tokens", [PLAN_FEED_RANDOM] = "random",
	[PLAN_FEED_PROMPT] = "prompt",
	[PLAN_FEED_SEQ_LENS] = "seq_lens", [PLAN_FEED_QUERY_START] = "query_start",
	[PLAN_FEED_BLOCK_TABLE] = "block_table", [PLAN_FEED_SLOTS] = "slots",
	[PLAN_FEED_SEQ_POSITIONS] = "seq_positions",
};
static const char *const attr_type_names[] = {
	[PLAN_ATTR_INT] = "int", [PLAN_ATTR_FLOAT] = "float", [PLAN_ATTR_BOOL] = "bool",
	[PLAN_ATTR_VAR] = "var", [PLAN_ATTR_STR] = "str",
};
static const char *const node_type_names[] = {
	[PLAN_NODE_KERNEL] = "kernel", [PLAN_NODE_MEMCPY] = "memcpy",
	[PLAN_NODE_MEMSET] = "memset", [PLAN_NODE_HOST] = "host",
	[PLAN_NODE_GRAPH] = "graph", [PLAN_NODE_EMPTY] = "empty",
	[PLAN_NODE_EVENT_RECORD] = "event-record", [PLAN_NODE_EVENT_WAIT] = "event-wait",
	[PLAN_NODE_OTHER] = "other",
};
static const char *const break_reason_names[] = {
	[PLAN_BREAK_KIND] = "kind", [PLAN_BREAK_FORCED] = "forced",
	[PLAN_BREAK_MODE] = "mode", [PLAN_BREAK_RECORDED] = "recorded",
};
static const char *const origin_names[] = {
	[PLAN_ORIGIN_SCRIPT] = "script", [PLAN_ORIGIN_RECORDED] = "recorded",
};
static const char *const edge_type_names[] = {
	[PLAN_EDGE_DEFAULT] = "default", [PLAN_EDGE_PROGRAMMATIC] = "programmatic",
};
static const char *const edge_port_names[] = {
	[PLAN_PORT_DEFAULT] = "default", [PLAN_PORT_PROGRAMMATIC] = "programmatic",
	[PLAN_PORT_LAUNCH_COMPLETION] = "launch-completion",
};

const char *plan_dtype_name(int v) { return NAME_AT(dtype_names, v); }
const char *plan_role_name(int v) { return NAME_AT(role_names, v); }
const char *plan_backend_name(int v) { return NAME_AT(backend_names, v); }
const char *plan_mode_name(int v) { return NAME_AT(mode_names, v); }
const char *plan_init_name(int v) { return NAME_AT(init_names, v); }
const char *plan_feed_name(int v) { return NAME_AT(feed_names, v); }
const char *plan_attr_type_name(int v) { return NAME_AT(attr_type_names, v); }
const char *plan_node_type_name(int v) { return NAME_AT(node_type_names, v); }
const char *plan_break_reason_name(int v) { return NAME_AT(break_reason_names, v); }
const char *plan_edge_type_name(int v) { return NAME_AT(edge_type_names, v); }
const char *plan_edge_port_name(int v) { return NAME_AT(edge_port_names, v); }
const char *plan_origin_name(int v) { return NAME_AT(origin_names, v); }

static int lookup(const char *const *table, size_t n, const char *name)
{
	for (size_t i = 1; i < n; i++)
		if (table[i] != NULL && strcmp(table[i], name) == 0)
			return (int)i;
	return 0;
}

#define LOOKUP(table, name) lookup(table, sizeof(table) / sizeof(table[0]), name)

int plan_dtype_from_name(const char *name) { return LOOKUP(dtype_names, name); }
int plan_role_from_name(const char *name) { return LOOKUP(role_names, name); }
int plan_mode_from_name(const char *name) { return LOOKUP(mode_names, name); }

size_t plan_dtype_size(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:  return 4;
	case PLAN_DTYPE_F16:  return 2;
	case PLAN_DTYPE_BF16: return 2;
	case PLAN_DTYPE_I32:  return 4;
	default:              return 0;
	}
}
