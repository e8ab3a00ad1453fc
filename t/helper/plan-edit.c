/*
 * plan-edit - make test plans that `bcgtool capture --backend host` cannot:
 * copy a plan through the libplan API, changing it on the way.
 *
 *   plan-edit IN OUT EDIT [EDIT...]
 *
 * Edits, applied in the order given:
 *
 *   cudaify
 *       Give every segment kernel nodes as a CUDA capture would record
 *       them: one node per op (a memcpy node for kv_write, a kernel node
 *       named KIND_DTYPE for the others) with a launch shape from the
 *       op's output size, one parameter per operand pointing at its
 *       tensor, edges chaining the nodes in op order, and the
 *       fingerprint; set the backend to cuda on an H100 with CUDA 13.0.
 *       The nodes are made up: the plan is for inspecting and diffing,
 *       not for replay.
 *   env DEVICE CC RUNTIME DRIVER CUBLAS
 *       Set the device name, compute capability ("9.0") and toolkit
 *       versions (as the CUDA calls report them: 13000, 130000).
 *   kernel SEGMENT NODE NAME
 *       Rename the kernel of a node (the fingerprint follows).
 *   rename-op OLD NEW
 *       Rename an op, and the breakpoints named after it.
 *   add-tensor NAME DTYPE ROLE SHAPE
 *       Add a tensor (SHAPE: dims or sizes separated by commas, "T,H") at
 *       the end of the arena, which grows to hold it.
 *   times NS
 *       Set every time the plan records (capture statistics, each
 *       segment's capture and instantiate times, each choice's measured
 *       times) to NS plus a different small number each, and the
 *       verification's largest error to 1e-3: what another capture of the
 *       same script changes.
 *   pdl
 *       Set the PDL capture feature.
 *   programmatic SEGMENT EDGE
 *       Make an edge programmatic, leaving from the programmatic port
 *       (the fingerprint follows).
 *   choice TOKENS OP IMPL HOW [CAND=US,...]
 *       Record (or replace) the choice for the op labelled OP in the
 *       variant of TOKENS tokens: IMPL chosen, HOW one of default, tuned,
 *       tuned,close, tuned,step, tuned,close,step; the candidates with
 *       their times in microseconds ("mma=3.5,cublas=4.25"), none when
 *       left out.
 *   drop-choice TOKENS OP
 *       Remove the choice for OP in the variant of TOKENS tokens.
 *
 * The fixtures of t/data/plans are made with it (t/data/plans/regen.sh).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define MAX_NODES 4096
#define MAX_EDITS 512   /* one choice a product of a 32-layer step at three sizes, and more */
#define MAX_CAND  8

/* One choice edit: IMPL NULL drops the choice. */
struct choice_edit {
	int64_t               tokens;
	const char           *op;
	const char           *impl;
	uint32_t              flags;
	uint32_t              ncand;
	struct plan_candidate cand[MAX_CAND];
	char                  names[MAX_CAND][32];
};

struct edit {
	int         cudaify;
	const char *env_device;
	int32_t     env_cc[2];
	int32_t     env_runtime, env_driver, env_cublas;
	int         has_env;
	uint32_t    kernel_segment, kernel_node;
	const char *kernel_name;
	const char *rename_old, *rename_new;
	const char *tensor_name, *tensor_dtype, *tensor_role, *tensor_shape;
	int         has_times;
	uint64_t    times;
	int         pdl;
	uint32_t    prog_segment[MAX_EDITS], prog_edge[MAX_EDITS];
	uint32_t    nprog;
	struct choice_edit choice[MAX_EDITS];
	uint32_t    nchoice;
};

static int fail(const char *what, const struct plan_diag *d)
{
	fprintf(stderr, "plan-edit: %s: %s%s%s\n", what, plan_strerror(d->code),
	        d->message[0] ? ": " : "", d->message);
	return 1;
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
	uint64_t q = (a + b - 1) / b;
	return q > 0 ? (uint32_t)q : 1;
}

/* The made-up node of op I at TOKENS tokens. PARAMS has room for the op's
 * operands. */
static void cudaify_node(const plan_t *p, uint32_t i, int64_t tokens, struct plan_node *n,
                         struct plan_param *params, char *kernel, size_t len)
{
	const struct plan_op *o = plan_get_op(p, i);
	uint32_t out = o->nout > 0 ? o->out[0] : o->in[0];
	const struct plan_tensor *t = plan_get_tensor(p, out);
	uint64_t numel = plan_tensor_numel(p, out, tokens);

	memset(n, 0, sizeof *n);
	n->op = i;
	if (strcmp(o->kind, "kv_write") == 0) {
		n->type = PLAN_NODE_MEMCPY;
		n->kernel = "";
		return;
	}
	n->type = PLAN_NODE_KERNEL;
	snprintf(kernel, len, "%s_%s", o->kind, plan_dtype_name(plan_get_tensor(p, o->in[0])->dtype));
	n->kernel = kernel;
	if (strcmp(o->kind, "matmul") == 0 && t->rank == 2) {
		int64_t rows = plan_axis_size(p, &t->shape[0], tokens);
		int64_t cols = plan_axis_size(p, &t->shape[1], tokens);
		n->grid[0] = ceil_div((uint64_t)cols, 32);
		n->grid[1] = ceil_div((uint64_t)rows, 32);
		n->grid[2] = 1;
		n->block[0] = 32;
		n->block[1] = 8;
		n->block[2] = 1;
		n->shmem = 8192;
	} else {
		n->grid[0] = ceil_div(numel, 256);
		n->grid[1] = n->grid[2] = 1;
		n->block[0] = 256;
		n->block[1] = n->block[2] = 1;
	}
	for (uint32_t k = 0; k < o->nin + o->nout; k++) {
		params[k].index = k;
		params[k].offset = plan_get_tensor(p, k < o->nin ? o->in[k] : o->out[k - o->nin])->offset;
	}
	n->params = params;
	n->nparams = o->nin + o->nout;
}

/* Copy segment SI of SRC into DST, edited. */
static int copy_segment(const plan_t *src, plan_t *dst, uint32_t si, const struct edit *e,
                        struct plan_diag *diag)
{
	struct plan_segment s = *plan_get_segment(src, si);
	int64_t tokens = plan_get_variant(src, s.variant)->tokens;
	struct plan_node *nodes = NULL;
	struct plan_edge *edges = NULL;
	struct plan_param *params = NULL;
	char (*kernels)[64] = NULL;
	int rc = 1;

	if (e->cudaify && !(s.flags & PLAN_SEG_NODES)) {
		uint32_t np = 0;
		for (uint32_t k = 0; k < s.op_count; k++) {
			const struct plan_op *o = plan_get_op(src, s.op_first + k);
			np += o->nin + o->nout;
		}
		nodes = calloc(s.op_count, sizeof *nodes);
		edges = calloc(s.op_count, sizeof *edges);
		params = calloc((size_t)np + 1, sizeof *params);
		kernels = calloc(s.op_count, sizeof *kernels);
		if (nodes == NULL || edges == NULL || params == NULL || kernels == NULL) {
			fprintf(stderr, "plan-edit: out of memory\n");
			goto out;
		}
		np = 0;
		for (uint32_t k = 0; k < s.op_count; k++) {
			cudaify_node(src, s.op_first + k, tokens, &nodes[k], params + np, kernels[k],
			             sizeof kernels[k]);
			np += nodes[k].nparams;
			if (k > 0)
				edges[k - 1] = (struct plan_edge){ .from = k - 1, .to = k };
		}
		s.flags |= PLAN_SEG_NODES;
		s.nodes = nodes;
		s.nnodes = s.op_count;
		s.edges = edges;
		s.nedges = s.op_count - 1;
	}
	for (uint32_t k = 0; k < e->nprog; k++) {
		if (e->prog_segment[k] != si)
			continue;
		if (e->prog_edge[k] >= s.nedges) {
			fprintf(stderr, "plan-edit: segment %u has no edge %u\n", si, e->prog_edge[k]);
			goto out;
		}
		if (edges == NULL) {
			if ((edges = calloc(s.nedges, sizeof *edges)) == NULL)
				goto out;
			memcpy(edges, s.edges, s.nedges * sizeof *edges);
			s.edges = edges;
		}
		edges[e->prog_edge[k]].type = PLAN_EDGE_PROGRAMMATIC;
		edges[e->prog_edge[k]].from_port = PLAN_PORT_PROGRAMMATIC;
	}
	if (e->kernel_name != NULL && si == e->kernel_segment) {
		if (e->kernel_node >= s.nnodes) {
			fprintf(stderr, "plan-edit: segment %u has no node %u\n", si, e->kernel_node);
			goto out;
		}
		if (nodes == NULL) {
			if ((nodes = calloc(s.nnodes, sizeof *nodes)) == NULL)
				goto out;
			memcpy(nodes, s.nodes, s.nnodes * sizeof *nodes);
			s.nodes = nodes;
		}
		nodes[e->kernel_node].kernel = e->kernel_name;
	}
	if (s.flags & PLAN_SEG_NODES)
		s.fingerprint = plan_fingerprint(&s);
	if (e->has_times) {
		s.capture_ns = e->times + 10 + si;
		s.instantiate_ns = e->times + 20 + si;
	}
	if (plan_add_segment(dst, &s, NULL, diag) != 0) {
		rc = fail("adding a segment", diag);
		goto out;
	}
	rc = 0;
out:
	free(nodes);
	free(edges);
	free(params);
	free(kernels);
	return rc;
}

static int add_tensor(const plan_t *src, plan_t *dst, const struct edit *e, struct plan_layout *l,
                      struct plan_diag *diag)
{
	struct plan_tensor t = { .name = e->tensor_name, .feed.var = PLAN_NONE };
	char shape[256], *tok, *save = NULL;
	uint64_t numel = 1;

	t.dtype = plan_dtype_from_name(e->tensor_dtype);
	t.role = plan_role_from_name(e->tensor_role);
	if (t.dtype == 0 || t.role == 0) {
		fprintf(stderr, "plan-edit: add-tensor: bad dtype or role\n");
		return 1;
	}
	snprintf(shape, sizeof shape, "%s", e->tensor_shape);
	for (tok = strtok_r(shape, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		uint32_t d = plan_find_dim(src, tok);
		if (t.rank == PLAN_MAX_RANK) {
			fprintf(stderr, "plan-edit: add-tensor: too many axes\n");
			return 1;
		}
		t.shape[t.rank].dim = d;
		t.shape[t.rank].size = d != PLAN_NONE ? plan_get_dim(src, d)->value : atoll(tok);
		numel *= (uint64_t)t.shape[t.rank].size;
		t.rank++;
	}
	t.bytes = numel * plan_dtype_size(t.dtype);
	t.offset = (l->arena_bytes + l->alignment - 1) / l->alignment * l->alignment;
	l->arena_bytes = t.offset + (t.bytes + l->alignment - 1) / l->alignment * l->alignment;
	l->unshared_bytes += t.bytes;
	if (plan_add_tensor(dst, &t, NULL, diag) != 0)
		return fail("adding the tensor", diag);
	return 0;
}

/* The edit for the choice of op OP in variant V of P, or NULL. */
static const struct choice_edit *find_choice_edit(const plan_t *p, const struct edit *e, uint32_t v,
                                                  uint32_t op)
{
	char label[160];

	plan_op_label(p, op, label, sizeof label);
	for (uint32_t k = 0; k < e->nchoice; k++)
		if (plan_get_variant(p, v)->tokens == e->choice[k].tokens &&
		    strcmp(e->choice[k].op, label) == 0)
			return &e->choice[k];
	return NULL;
}

static int add_choice_edit(plan_t *dst, const struct choice_edit *ce, uint32_t v, uint32_t op,
                           struct plan_diag *diag)
{
	struct plan_choice c = { v, op, ce->impl, ce->flags, ce->ncand, ce->cand };

	if (plan_add_choice(dst, &c, NULL, diag) != 0)
		return fail("adding a choice", diag);
	return 0;
}

/* The choices of SRC, edited, then those the edits add. */
static int copy_choices(const plan_t *src, plan_t *dst, const struct edit *e, struct plan_diag *diag)
{
	unsigned char used[MAX_EDITS] = { 0 };

	for (uint32_t i = 0; i < plan_count_choices(src); i++) {
		struct plan_choice c = *plan_get_choice(src, i);
		struct plan_candidate cand[64];
		const struct choice_edit *ce = find_choice_edit(src, e, c.variant, c.op);
		if (ce != NULL) {
			used[ce - e->choice] = 1;
			if (ce->impl != NULL && add_choice_edit(dst, ce, c.variant, c.op, diag) != 0)
				return 1;
			continue;
		}
		if (e->has_times && c.ncand > 0 && c.ncand <= 64) {
			memcpy(cand, c.cand, c.ncand * sizeof *cand);
			for (uint32_t k = 0; k < c.ncand; k++)
				cand[k].us = (double)(e->times / 1000 + 7 + k);
			c.cand = c.ncand ? cand : NULL;
		}
		if (plan_add_choice(dst, &c, NULL, diag) != 0)
			return fail("choices", diag);
	}
	for (uint32_t k = 0; k < e->nchoice; k++) {
		const struct choice_edit *ce = &e->choice[k];
		uint32_t v = plan_find_variant(src, ce->tokens), op;
		char label[160];
		if (used[k] || ce->impl == NULL)
			continue;
		for (op = 0; op < plan_count_ops(src); op++)
			if (strcmp(plan_op_label(src, op, label, sizeof label), ce->op) == 0)
				break;
		if (v == PLAN_NONE || op == plan_count_ops(src)) {
			fprintf(stderr, "plan-edit: choice: no op %s at %lld tokens\n", ce->op,
			        (long long)ce->tokens);
			return 1;
		}
		if (add_choice_edit(dst, ce, v, op, diag) != 0)
			return 1;
	}
	return 0;
}

/* "tuned,close" and "mma=3.5,cublas=4.25" into CE. */
static int parse_choice(struct choice_edit *ce, const char *how, const char *cands)
{
	char buf[512], *tok, *save = NULL;

	if (strcmp(how, "default") == 0)
		ce->flags = 0;
	else if (strcmp(how, "tuned") == 0)
		ce->flags = PLAN_CHOICE_TUNED;
	else if (strcmp(how, "tuned,close") == 0)
		ce->flags = PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE;
	else if (strcmp(how, "tuned,step") == 0)
		ce->flags = PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP;
	else if (strcmp(how, "tuned,close,step") == 0)
		ce->flags = PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE | PLAN_CHOICE_STEP;
	else
		return -1;
	if (cands == NULL)
		return 0;
	snprintf(buf, sizeof buf, "%s", cands);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (eq == NULL || ce->ncand == MAX_CAND)
			return -1;
		*eq = '\0';
		snprintf(ce->names[ce->ncand], sizeof ce->names[0], "%s", tok);
		ce->cand[ce->ncand].impl = ce->names[ce->ncand];
		ce->cand[ce->ncand].us = strtod(eq + 1, NULL);
		ce->ncand++;
	}
	return 0;
}

static int copy_plan(const plan_t *src, plan_t *dst, const struct edit *e)
{
	struct plan_diag diag = { 0 };
	struct plan_meta m = *plan_get_meta(src);
	struct plan_layout l = *plan_get_layout(src);

	if (e->cudaify) {
		m.backend = PLAN_BACKEND_CUDA;
		m.device = "NVIDIA H100 80GB HBM3";
		m.cc_major = 9;
		m.cc_minor = 0;
		m.cuda_runtime = 13000;
		m.cuda_driver = 13000;
		m.cublas = 130000;
	}
	if (e->has_env) {
		m.device = e->env_device;
		m.cc_major = e->env_cc[0];
		m.cc_minor = e->env_cc[1];
		m.cuda_runtime = e->env_runtime;
		m.cuda_driver = e->env_driver;
		m.cublas = e->env_cublas;
	}
	if (e->pdl)
		m.features |= PLAN_FEATURE_PDL;
	struct plan_stats st = *plan_get_stats(src);
	if (e->has_times) {
		st.materialize_ns = e->times + 1;
		st.reference_ns = e->times + 2;
		st.capture_ns = e->times + 3;
		st.instantiate_ns = e->times + 4;
		st.verify_ns = e->times + 5;
		st.verify_max_error = 1e-3;
	}
	if (plan_set_meta(dst, &m, &diag) != 0 || plan_set_stats(dst, &st, &diag) != 0)
		return fail("meta", &diag);
	for (uint32_t i = 0; i < plan_count_dims(src); i++)
		if (plan_add_dim(dst, plan_get_dim(src, i), NULL, &diag) != 0)
			return fail("dims", &diag);
	for (uint32_t i = 0; i < plan_count_vars(src); i++)
		if (plan_add_var(dst, plan_get_var(src, i), NULL, &diag) != 0)
			return fail("vars", &diag);
	for (uint32_t i = 0; i < plan_count_tensors(src); i++)
		if (plan_add_tensor(dst, plan_get_tensor(src, i), NULL, &diag) != 0)
			return fail("tensors", &diag);
	if (e->tensor_name != NULL && add_tensor(src, dst, e, &l, &diag) != 0)
		return 1;
	if (plan_set_layout(dst, &l, &diag) != 0)
		return fail("layout", &diag);
	for (uint32_t i = 0; i < plan_count_ops(src); i++) {
		struct plan_op o = *plan_get_op(src, i);
		if (e->rename_old != NULL && strcmp(o.name, e->rename_old) == 0)
			o.name = e->rename_new;
		if (plan_add_op(dst, &o, NULL, &diag) != 0)
			return fail("ops", &diag);
	}
	for (uint32_t v = 0; v < plan_count_variants(src); v++) {
		const struct plan_variant *var = plan_get_variant(src, v);
		if (plan_add_variant(dst, var, NULL, &diag) != 0)
			return fail("variants", &diag);
		/* Items in order: adding them appends them to the variant. */
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			if (it->kind == PLAN_ITEM_SEGMENT) {
				if (copy_segment(src, dst, it->index, e, &diag) != 0)
					return 1;
				continue;
			}
			struct plan_breakpoint b = *plan_get_breakpoint(src, it->index);
			if (e->rename_old != NULL && strcmp(b.name, e->rename_old) == 0)
				b.name = e->rename_new;
			if (plan_add_breakpoint(dst, &b, NULL, &diag) != 0)
				return fail("breakpoints", &diag);
		}
	}
	for (uint32_t i = 0; i < plan_count_checks(src); i++)
		if (plan_add_check(dst, plan_get_check(src, i), NULL, &diag) != 0)
			return fail("checks", &diag);
	for (uint32_t i = 0; i < plan_count_dispatch(src); i++)
		if (plan_add_dispatch(dst, plan_get_dispatch(src, i), NULL, &diag) != 0)
			return fail("dispatch", &diag);
	return copy_choices(src, dst, e, &diag);
}

static int usage(void)
{
	fprintf(stderr, "usage: plan-edit IN OUT EDIT [EDIT...]\n"
	        "edits: cudaify | env DEVICE CC RUNTIME DRIVER CUBLAS | kernel SEGMENT NODE NAME |\n"
	        "       rename-op OLD NEW | add-tensor NAME DTYPE ROLE SHAPE | times NS | pdl |\n"
	        "       programmatic SEGMENT EDGE | choice TOKENS OP IMPL HOW [CAND=US,...] |\n"
	        "       drop-choice TOKENS OP\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct edit e = { 0 };
	struct plan_diag diag = { 0 };
	plan_t *src = NULL, *dst = NULL;
	int rc = 1;

	if (argc < 4)
		return usage();
	for (int i = 3; i < argc;) {
		const char *w = argv[i];
		if (strcmp(w, "cudaify") == 0) {
			e.cudaify = 1;
			i += 1;
		} else if (strcmp(w, "env") == 0 && i + 5 < argc) {
			e.has_env = 1;
			e.env_device = argv[i + 1];
			if (sscanf(argv[i + 2], "%d.%d", &e.env_cc[0], &e.env_cc[1]) != 2)
				return usage();
			e.env_runtime = atoi(argv[i + 3]);
			e.env_driver = atoi(argv[i + 4]);
			e.env_cublas = atoi(argv[i + 5]);
			i += 6;
		} else if (strcmp(w, "kernel") == 0 && i + 3 < argc) {
			e.kernel_segment = (uint32_t)strtoul(argv[i + 1], NULL, 10);
			e.kernel_node = (uint32_t)strtoul(argv[i + 2], NULL, 10);
			e.kernel_name = argv[i + 3];
			i += 4;
		} else if (strcmp(w, "rename-op") == 0 && i + 2 < argc) {
			e.rename_old = argv[i + 1];
			e.rename_new = argv[i + 2];
			i += 3;
		} else if (strcmp(w, "add-tensor") == 0 && i + 4 < argc) {
			e.tensor_name = argv[i + 1];
			e.tensor_dtype = argv[i + 2];
			e.tensor_role = argv[i + 3];
			e.tensor_shape = argv[i + 4];
			i += 5;
		} else if (strcmp(w, "times") == 0 && i + 1 < argc) {
			e.has_times = 1;
			e.times = strtoull(argv[i + 1], NULL, 10);
			i += 2;
		} else if (strcmp(w, "pdl") == 0) {
			e.pdl = 1;
			i += 1;
		} else if (strcmp(w, "programmatic") == 0 && i + 2 < argc && e.nprog < MAX_EDITS) {
			e.prog_segment[e.nprog] = (uint32_t)strtoul(argv[i + 1], NULL, 10);
			e.prog_edge[e.nprog++] = (uint32_t)strtoul(argv[i + 2], NULL, 10);
			i += 3;
		} else if (strcmp(w, "choice") == 0 && i + 4 < argc && e.nchoice < MAX_EDITS) {
			struct choice_edit *ce = &e.choice[e.nchoice++];
			/* The candidates are optional: the next word is one when it
			 * holds a '='. */
			const char *cands = i + 5 < argc && strchr(argv[i + 5], '=') ? argv[i + 5] : NULL;
			ce->tokens = atoll(argv[i + 1]);
			ce->op = argv[i + 2];
			ce->impl = argv[i + 3];
			if (parse_choice(ce, argv[i + 4], cands) != 0)
				return usage();
			i += cands != NULL ? 6 : 5;
		} else if (strcmp(w, "drop-choice") == 0 && i + 2 < argc && e.nchoice < MAX_EDITS) {
			struct choice_edit *ce = &e.choice[e.nchoice++];
			ce->tokens = atoll(argv[i + 1]);
			ce->op = argv[i + 2];
			i += 3;
		} else {
			return usage();
		}
	}
	if (plan_read_file(argv[1], NULL, &src, &diag) != 0)
		return fail(argv[1], &diag);
	if ((dst = plan_new()) == NULL) {
		fprintf(stderr, "plan-edit: out of memory\n");
		goto out;
	}
	if (copy_plan(src, dst, &e) != 0)
		goto out;
	if (plan_write_file(dst, argv[2], &diag) != 0) {
		fail(argv[2], &diag);
		goto out;
	}
	rc = 0;
out:
	plan_free(src);
	plan_free(dst);
	return rc;
}
