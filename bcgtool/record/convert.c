/*
 * convert.c - recording logs to a plan (convert.h says what the plan
 * holds and how steps, segments and breaks are found).
 *
 * Per process: one pass over the log decodes its tables (functions,
 * modules, allocations, graphs, GPU times) and its timeline of work and
 * NVTX ranges; steps are cut from the timeline, grouped by shape into
 * variants, and each variant's first step is written into the plan
 * through libplan's model functions.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "record/convert.h"

/* ---------------------------------------------------------------------- */
/* A map from 64-bit keys to indexes (open addressing, grows).             */

struct map {
	uint64_t *keys;
	uint32_t *vals;
	size_t    cap;      /* a power of two; 0 empty */
	size_t    n;
};

static size_t map_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static uint32_t map_get(const struct map *m, uint64_t key)
{
	if (m->cap == 0)
		return PLAN_NONE;
	for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == PLAN_NONE)
			return PLAN_NONE;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int map_put(struct map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		uint64_t *keys = malloc(cap * sizeof *keys);
		uint32_t *vals = malloc(cap * sizeof *vals);

		if (keys == NULL || vals == NULL) {
			free(keys);
			free(vals);
			return -1;
		}
		for (size_t i = 0; i < cap; i++)
			vals[i] = PLAN_NONE;
		for (size_t i = 0; i < m->cap; i++) {
			if (m->vals[i] == PLAN_NONE)
				continue;
			size_t j = map_slot(m->keys[i], cap);
			while (vals[j] != PLAN_NONE)
				j = (j + 1) & (cap - 1);
			keys[j] = m->keys[i];
			vals[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->cap = cap;
	}
	for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == PLAN_NONE) {
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return 0;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	}
}

static void map_free(struct map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* Grow *ARR (of *N elements of SIZE bytes, room for *CAP) by one; the new
 * element is zeroed. NULL when out of memory. */
static void *grow(void **arr, size_t *n, size_t *cap, size_t size)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		void *na = realloc(*arr, ncap * size);
		if (na == NULL)
			return NULL;
		*arr = na;
		*cap = ncap;
	}
	memset((char *)*arr + *n * size, 0, size);
	return (char *)*arr + (*n)++ * size;
}

#define GROW(arr, n, cap) grow((void **)&(arr), &(n), &(cap), sizeof *(arr))

/* ---------------------------------------------------------------------- */
/* What a log holds, decoded.                                              */

struct cv_module {
	uint32_t       id;
	uint32_t       flags;     /* RECLOG_MODULE_* */
	const uint8_t *image;
	uint32_t       bytes;
	char          *note;
	uint64_t       seq;
	uint64_t       handle;    /* its CUmodule (MODULE_HANDLE), 0 unknown */
	uint64_t       seq_link;  /* where the handle was given */
	uint64_t       seq_unload; /* UINT64_MAX: never unloaded */
	uint32_t       plan;      /* plan_module index, PLAN_NONE until added */
};

struct cv_function {
	uint64_t                handle;
	uint64_t                module;   /* its CUmodule, 0 unknown */
	char                   *name;
	uint32_t                nparams;
	struct plan_param_info *params;
	uint64_t                seq;
	uint32_t                plan;
};

struct cv_alloc {
	uint32_t       device;
	uint64_t       address;
	uint64_t       bytes;
	uint32_t       flags;     /* RECLOG_ALLOC_* */
	uint64_t       seq_alloc;
	uint64_t       seq_free;  /* UINT64_MAX: never freed */
	const uint8_t *snap;      /* BYTES bytes, or NULL */
	uint32_t       range;     /* cv_range index */
};

/* The plan's allocations do not overlap on a device, but a run reuses
 * addresses: the recorded allocations of a device (of every process)
 * that overlap are merged into one range, and a range is what the plan
 * keeps. */
struct cv_range {
	uint32_t       device;
	uint64_t       address;
	uint64_t       bytes;
	uint32_t       flags;     /* RECLOG_ALLOC_*, of any allocation in it */
	uint32_t       nallocs;
	const uint8_t *snap;      /* the one allocation's snapshot, when it
	                             alone makes the range */
	uint32_t       plan;      /* plan_alloc index, PLAN_NONE until added */
};

/* One piece of work: an eager launch, copy or memset, or a graph node. */
struct cv_op {
	int            type;      /* PLAN_NODE_* */
	uint32_t       func;      /* KERNEL: cv_function index */
	uint32_t       grid[3], block[3], cluster[3];
	uint32_t       shmem;
	uint32_t       flags;
	const uint8_t *args;
	uint32_t       nargs;
	uint64_t       dst, src, bytes;
	uint32_t       copy;      /* RECLOG_COPY_* */
	const uint8_t *data;
	uint32_t       ndata;
	uint32_t       value, element;
	uint64_t       width, height, pitch;
	uint32_t       cuda_type; /* other nodes: CUDA's node type */
};

/* What an executable graph runs: as instantiated, or after an update
 * (cuGraphExecUpdate, a kernel node set). An executable that comes back
 * to what it ran before gets that graph again (same CONTENT, same EXEC):
 * a graph of a plan is what ran, not how often it was set. */
struct cv_graph {
	uint64_t          exec;
	uint32_t          device;
	uint64_t          seq;
	uint64_t          content;    /* graph_content() */
	uint32_t          nnodes;
	struct cv_op     *nodes;
	uint32_t          nedges;
	struct plan_edge *edges;
};

enum cv_event_kind {
	EV_OP = 1,        /* eager work: OP */
	EV_GRAPH,         /* a graph launch: GRAPH */
	EV_PUSH,
	EV_POP,
	EV_START,
	EV_END,
};

struct cv_event {
	int          kind;
	uint64_t     seq;
	uint32_t     device;
	uint32_t     corr;
	uint32_t     graph;      /* EV_GRAPH */
	struct cv_op op;         /* EV_OP */
	uint64_t     thread;     /* PUSH, POP: the thread; START, END: the range */
	const char  *name;       /* PUSH, START: the message (in the log); */
	uint32_t     namelen;
};

struct cv_time {
	uint64_t start, end;
};

struct cv_order {
	uint64_t address;
	uint32_t index;
};

struct cv_device {
	uint32_t ordinal;
	char    *name;
	uint32_t cc_major, cc_minor, driver;
};

struct cv_proc {
	const struct reclog *log;
	struct cv_module    *mods;   size_t nmods, cmods;
	struct cv_function  *funcs;  size_t nfuncs, cfuncs;
	struct cv_alloc     *allocs; size_t nallocs, callocs;
	struct cv_graph     *graphs; size_t ngraphs, cgraphs;
	struct cv_event     *evs;    size_t nevs, cevs;
	struct cv_time      *times;  size_t ntimes, ctimes;
	struct cv_device    *devs;   size_t ndevs, cdevs;
	struct map           func_by_handle;
	struct map           graph_by_exec;
	struct map           graph_by_content;
	struct map           time_by_corr;
	struct cv_order     *alloc_order;   /* allocs sorted by address */
	uint64_t             alloc_max;     /* the largest allocation */
	char                *libraries;     /* "name version; ..." */
	char                *cudart;        /* the runtime's version text */
	char                *cublas;
	uint32_t             unknown_module; /* plan index of the stand-in */
};

/* The conversion's state. */
struct cv {
	const struct record_opts *opts;
	plan_t                   *plan;
	struct record_summary     sum;
	struct cv_range          *ranges;
	size_t                    nranges, cranges;
	uint32_t                  updates;   /* exec updates and node sets followed */
	int                       rc;
	char                     *msg;
	size_t                    msglen;
	uint32_t                  next_variant;
};

static void cv_note(struct cv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cv_note(struct cv *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (c->opts->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	c->opts->note(c->opts->note_ctx, buf);
}

static int cv_fail(struct cv *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cv_fail(struct cv *c, int rc, const char *fmt, ...)
{
	va_list ap;

	if (c->rc != RECORD_OK)
		return -1;
	c->rc = rc;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
	return -1;
}

static int cv_nomem(struct cv *c)
{
	return cv_fail(c, RECORD_NO_MEMORY, "out of memory");
}

static int cv_plan(struct cv *c, int err, const struct plan_diag *d)
{
	if (err == 0)
		return 0;
	return cv_fail(c, RECORD_PLAN_ERROR, "building the plan: %s",
	               d->message[0] ? d->message : plan_strerror(err));
}

/* ---------------------------------------------------------------------- */
/* Decoding.                                                               */

static uint32_t proc_function(struct cv *c, struct cv_proc *p, uint64_t handle, uint64_t seq)
{
	uint32_t i = map_get(&p->func_by_handle, handle);
	struct cv_function *f;
	char name[64];

	if (i != PLAN_NONE)
		return i;
	/* A launch of a function the log never described: keep the launch,
	 * under a name that says so. */
	f = GROW(p->funcs, p->nfuncs, p->cfuncs);
	if (f == NULL)
		return cv_nomem(c), PLAN_NONE;
	snprintf(name, sizeof name, "unknown-function-0x%" PRIx64, handle);
	f->handle = handle;
	f->name = strdup(name);
	f->seq = seq;
	f->plan = PLAN_NONE;
	if (f->name == NULL || map_put(&p->func_by_handle, handle, (uint32_t)(p->nfuncs - 1)) != 0)
		return cv_nomem(c), PLAN_NONE;
	cv_note(c, "process %u: a launch of function 0x%" PRIx64 " the log never described",
	        p->log->pid, handle);
	return (uint32_t)(p->nfuncs - 1);
}

static void decode_kernel(struct cv *c, struct cv_proc *p, struct reclog_cur *k,
                          struct cv_op *op, uint64_t seq)
{
	uint64_t handle = reclog_get_u64(k);

	op->type = PLAN_NODE_KERNEL;
	for (int i = 0; i < 3; i++)
		op->grid[i] = reclog_get_u32(k);
	for (int i = 0; i < 3; i++)
		op->block[i] = reclog_get_u32(k);
	for (int i = 0; i < 3; i++)
		op->cluster[i] = reclog_get_u32(k);
	op->shmem = reclog_get_u32(k);
	op->flags = reclog_get_u32(k);
	op->args = reclog_get_bytes(k, &op->nargs);
	if (!k->bad)
		op->func = proc_function(c, p, handle, seq);
}

static void decode_copy(struct reclog_cur *k, struct cv_op *op)
{
	op->type = PLAN_NODE_MEMCPY;
	op->dst = reclog_get_u64(k);
	op->src = reclog_get_u64(k);
	op->bytes = reclog_get_u64(k);
	op->copy = reclog_get_u32(k);
	op->data = reclog_get_bytes(k, &op->ndata);
}

static void decode_memset(struct reclog_cur *k, struct cv_op *op)
{
	op->type = PLAN_NODE_MEMSET;
	op->dst = reclog_get_u64(k);
	op->value = reclog_get_u32(k);
	op->element = reclog_get_u32(k);
	op->width = reclog_get_u64(k);
	op->height = reclog_get_u64(k);
	op->pitch = reclog_get_u64(k);
}

static int decode_node(struct cv *c, struct cv_proc *p, struct reclog_cur *k, struct cv_op *op,
                       uint64_t seq)
{
	uint32_t type = reclog_get_u32(k);

	switch (type) {
	case PLAN_NODE_KERNEL:
		decode_kernel(c, p, k, op, seq);
		break;
	case PLAN_NODE_MEMCPY:
		decode_copy(k, op);
		break;
	case PLAN_NODE_MEMSET:
		decode_memset(k, op);
		break;
	default:
		op->type = (int)type;
		op->cuda_type = reclog_get_u32(k);
		break;
	}
	return k->bad || c->rc != RECORD_OK ? -1 : 0;
}

static uint64_t exec_key(uint64_t exec, uint32_t device)
{
	return exec ^ ((uint64_t)device << 56);
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return plan_hash64(b, sizeof b, h);
}

/* A hash of what graph G runs: each node's fields and bytes, the edges. */
static uint64_t graph_content(const struct cv_graph *g)
{
	uint64_t h = hash_u64(PLAN_HASH64_INIT, g->device);

	h = hash_u64(h, g->nnodes);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct cv_op *o = &g->nodes[i];
		uint64_t v[] = { (uint64_t)o->type, o->func, o->grid[0], o->grid[1], o->grid[2],
		                 o->block[0], o->block[1], o->block[2], o->cluster[0],
		                 o->cluster[1], o->cluster[2], o->shmem, o->flags, o->nargs,
		                 o->dst, o->src, o->bytes, o->copy, o->ndata, o->value, o->element,
		                 o->width, o->height, o->pitch, o->cuda_type };
		for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
			h = hash_u64(h, v[k]);
		if (o->nargs)
			h = plan_hash64(o->args, o->nargs, h);
		if (o->ndata)
			h = plan_hash64(o->data, o->ndata, h);
	}
	h = hash_u64(h, g->nedges);
	for (uint32_t i = 0; i < g->nedges; i++) {
		const struct plan_edge *e = &g->edges[i];
		h = hash_u64(h, (uint64_t)e->from << 32 | e->to);
		h = hash_u64(h, (uint64_t)e->type << 16 | (uint64_t)e->from_port << 8 | e->to_port);
	}
	return h;
}

/* Make the last graph (just decoded or derived) what its executable runs
 * from now on; when that executable ran the same content before, that
 * graph is taken again and the last one dropped. */
static int graph_settle(struct cv *c, struct cv_proc *p)
{
	struct cv_graph *g = &p->graphs[p->ngraphs - 1];
	uint64_t key;
	uint32_t same;

	g->content = graph_content(g);
	key = hash_u64(hash_u64(g->content, g->exec), g->device);
	same = map_get(&p->graph_by_content, key);
	if (same != PLAN_NONE && p->graphs[same].exec == g->exec &&
	    p->graphs[same].device == g->device && p->graphs[same].nnodes == g->nnodes &&
	    p->graphs[same].nedges == g->nedges && p->graphs[same].content == g->content) {
		free(g->nodes);
		free(g->edges);
		p->ngraphs--;
		return map_put(&p->graph_by_exec, exec_key(p->graphs[same].exec,
		                                           p->graphs[same].device), same) != 0
		       ? cv_nomem(c) : 0;
	}
	if (map_put(&p->graph_by_content, key, (uint32_t)(p->ngraphs - 1)) != 0 ||
	    map_put(&p->graph_by_exec, exec_key(g->exec, g->device), (uint32_t)(p->ngraphs - 1)) != 0)
		return cv_nomem(c);
	return 0;
}

/* A GRAPH record (an instantiation) or a GRAPH_UPDATE (the executable
 * runs another graph's parameters from now on): the same fields. */
static int decode_graph(struct cv *c, struct cv_proc *p, const struct reclog_record *r)
{
	struct reclog_cur k;
	struct cv_graph *g;
	uint32_t nnodes, nedges;

	if (r->type == RECLOG_GRAPH_UPDATE)
		c->updates++;
	reclog_cur_init(&k, r);
	g = GROW(p->graphs, p->ngraphs, p->cgraphs);
	if (g == NULL)
		return cv_nomem(c);
	g->exec = reclog_get_u64(&k);
	(void)reclog_get_u64(&k);      /* the graph it came from */
	g->device = reclog_get_u32(&k);
	g->seq = r->seq;
	nnodes = reclog_get_u32(&k);
	nedges = reclog_get_u32(&k);
	if (k.bad || nnodes > r->len / 4 || nedges > r->len / 20)
		return cv_fail(c, RECORD_BAD_LOG, "record %" PRIu64 ": a malformed graph", r->seq);
	g->nodes = calloc(nnodes ? nnodes : 1, sizeof *g->nodes);
	g->edges = calloc(nedges ? nedges : 1, sizeof *g->edges);
	if (g->nodes == NULL || g->edges == NULL)
		return cv_nomem(c);
	for (uint32_t i = 0; i < nnodes; i++, g->nnodes++)
		if (decode_node(c, p, &k, &g->nodes[i], r->seq) != 0)
			return cv_fail(c, RECORD_BAD_LOG, "record %" PRIu64 ": a malformed graph node",
			               r->seq);
	for (uint32_t i = 0; i < nedges; i++, g->nedges++) {
		struct plan_edge *e = &g->edges[i];
		e->from = reclog_get_u32(&k);
		e->to = reclog_get_u32(&k);
		e->type = (uint8_t)reclog_get_u32(&k);
		e->from_port = (uint8_t)reclog_get_u32(&k);
		e->to_port = (uint8_t)reclog_get_u32(&k);
		if (k.bad || e->from >= nnodes || e->to >= nnodes)
			return cv_fail(c, RECORD_BAD_LOG, "record %" PRIu64 ": a malformed graph edge",
			               r->seq);
	}
	return graph_settle(c, p);
}

/* A GRAPH_NODE_SET record: the executable's graph as it runs now, with
 * one kernel node's function, shape and parameters replaced (its cluster
 * and flags stay: they are the node's attributes, which the call does not
 * set). A node the recorder could not place, or that is no kernel, keeps
 * its parameters, with a note. */
static int decode_node_set(struct cv *c, struct cv_proc *p, const struct reclog_record *r)
{
	struct reclog_cur k;
	struct cv_graph *g;
	struct cv_op op = { 0 };
	uint64_t exec;
	uint32_t device, node, cur;

	reclog_cur_init(&k, r);
	exec = reclog_get_u64(&k);
	device = reclog_get_u32(&k);
	node = reclog_get_u32(&k);
	decode_kernel(c, p, &k, &op, r->seq);
	if (k.bad)
		return cv_fail(c, RECORD_BAD_LOG, "record %" PRIu64 ": a malformed node update",
		               r->seq);
	if (c->rc != RECORD_OK)
		return -1;
	cur = map_get(&p->graph_by_exec, exec_key(exec, device));
	if (cur == PLAN_NONE || node >= p->graphs[cur].nnodes ||
	    p->graphs[cur].nodes[node].type != PLAN_NODE_KERNEL) {
		cv_note(c, "process %u: a kernel node of graph 0x%" PRIx64 " was given new "
		        "parameters, but %s: the plan keeps what it ran before", p->log->pid, exec,
		        cur == PLAN_NONE ? "the graph was never seen instantiated"
		        : node == UINT32_MAX ? "the recorder could not tell which node"
		        : node >= p->graphs[cur].nnodes ? "the graph has no such node"
		                                        : "that node is no kernel");
		return 0;
	}
	c->updates++;
	g = GROW(p->graphs, p->ngraphs, p->cgraphs);
	if (g == NULL)
		return cv_nomem(c);
	*g = p->graphs[cur];
	g->seq = r->seq;
	g->nodes = malloc((g->nnodes ? g->nnodes : 1) * sizeof *g->nodes);
	g->edges = malloc((g->nedges ? g->nedges : 1) * sizeof *g->edges);
	if (g->nodes == NULL || g->edges == NULL) {
		free(g->nodes);
		free(g->edges);
		p->ngraphs--;
		return cv_nomem(c);
	}
	memcpy(g->nodes, p->graphs[cur].nodes, g->nnodes * sizeof *g->nodes);
	memcpy(g->edges, p->graphs[cur].edges, g->nedges * sizeof *g->edges);
	memcpy(op.cluster, g->nodes[node].cluster, sizeof op.cluster);
	op.flags = g->nodes[node].flags;
	g->nodes[node] = op;
	return graph_settle(c, p);
}

/* A graph launch of an executable graph the log never described: a
 * segment without nodes. */
static uint32_t stub_graph(struct cv *c, struct cv_proc *p, uint64_t exec, uint32_t device,
                           uint64_t seq)
{
	struct cv_graph *g = GROW(p->graphs, p->ngraphs, p->cgraphs);

	if (g == NULL)
		return cv_nomem(c), PLAN_NONE;
	g->exec = exec;
	g->device = device;
	g->seq = seq;
	if (map_put(&p->graph_by_exec, exec_key(exec, device), (uint32_t)(p->ngraphs - 1)) != 0)
		return cv_nomem(c), PLAN_NONE;
	cv_note(c, "process %u: graph 0x%" PRIx64 " was launched but never seen instantiated",
	        p->log->pid, exec);
	return (uint32_t)(p->ngraphs - 1);
}

static void add_library(struct cv_proc *p, const char *name, const char *version)
{
	size_t old = p->libraries ? strlen(p->libraries) : 0;
	size_t n = old + strlen(name) + strlen(version) + 4;
	char *s = realloc(p->libraries, n);

	if (s == NULL)
		return;
	snprintf(s + old, n - old, "%s%s %s", old ? "; " : "", name, version);
	p->libraries = s;
}

static int decode_record(struct cv *c, struct cv_proc *p, const struct reclog_record *r)
{
	struct reclog_cur k;
	struct cv_event *e;

	reclog_cur_init(&k, r);
	switch (r->type) {
	case RECLOG_DEVICE: {
		struct cv_device *d = GROW(p->devs, p->ndevs, p->cdevs);
		if (d == NULL)
			return cv_nomem(c);
		d->ordinal = reclog_get_u32(&k);
		d->name = reclog_get_strdup(&k);
		d->cc_major = reclog_get_u32(&k);
		d->cc_minor = reclog_get_u32(&k);
		d->driver = reclog_get_u32(&k);
		if (d->name == NULL)
			return cv_nomem(c);
		break;
	}
	case RECLOG_LIBRARY: {
		char name[128], version[128];
		reclog_get_str(&k, name, sizeof name);
		reclog_get_str(&k, version, sizeof version);
		add_library(p, name, version);
		if (strcmp(name, "cudart") == 0 && p->cudart == NULL)
			p->cudart = strdup(version);
		if (strcmp(name, "cublas") == 0 && p->cublas == NULL)
			p->cublas = strdup(version);
		break;
	}
	case RECLOG_NOTE: {
		char text[400];
		reclog_get_str(&k, text, sizeof text);
		cv_note(c, "process %u: %s", p->log->pid, text);
		break;
	}
	case RECLOG_MODULE: {
		struct cv_module *m = GROW(p->mods, p->nmods, p->cmods);
		if (m == NULL)
			return cv_nomem(c);
		m->id = reclog_get_u32(&k);
		m->flags = reclog_get_u32(&k);
		(void)reclog_get_u64(&k);
		m->image = reclog_get_bytes(&k, &m->bytes);
		m->note = reclog_get_strdup(&k);
		m->seq = r->seq;
		m->seq_unload = UINT64_MAX;
		m->plan = PLAN_NONE;
		if (m->note == NULL)
			return cv_nomem(c);
		if (m->bytes == 0)
			m->flags &= ~RECLOG_MODULE_IMAGE;
		break;
	}
	case RECLOG_FUNCTION: {
		struct cv_function *f = GROW(p->funcs, p->nfuncs, p->cfuncs);
		if (f == NULL)
			return cv_nomem(c);
		f->handle = reclog_get_u64(&k);
		f->module = reclog_get_u64(&k);
		f->name = reclog_get_strdup(&k);
		f->nparams = reclog_get_u32(&k);
		f->seq = r->seq;
		f->plan = PLAN_NONE;
		if (f->name == NULL)
			return cv_nomem(c);
		if (f->nparams > r->len / 8)
			return cv_fail(c, RECORD_BAD_LOG, "record %" PRIu64 ": a malformed function",
			               r->seq);
		f->params = calloc(f->nparams ? f->nparams : 1, sizeof *f->params);
		if (f->params == NULL)
			return cv_nomem(c);
		for (uint32_t i = 0; i < f->nparams; i++) {
			f->params[i].offset = reclog_get_u32(&k);
			f->params[i].size = reclog_get_u32(&k);
		}
		if (map_put(&p->func_by_handle, f->handle, (uint32_t)(p->nfuncs - 1)) != 0)
			return cv_nomem(c);
		break;
	}
	case RECLOG_MODULE_HANDLE:
	case RECLOG_MODULE_UNLOAD: {
		/* Module ids are unique in a process: the latest module of the
		 * id is the one meant. */
		uint32_t id = reclog_get_u32(&k);
		uint64_t handle = r->type == RECLOG_MODULE_HANDLE ? reclog_get_u64(&k) : 0;
		for (size_t i = p->nmods; i-- > 0;) {
			struct cv_module *m = &p->mods[i];
			if (m->id != id)
				continue;
			if (r->type == RECLOG_MODULE_UNLOAD) {
				if (m->seq_unload == UINT64_MAX)
					m->seq_unload = r->seq;
			} else if (m->handle == 0) {
				m->handle = handle;
				m->seq_link = r->seq;
			}
			break;
		}
		break;
	}
	case RECLOG_ALLOC: {
		struct cv_alloc *a = GROW(p->allocs, p->nallocs, p->callocs);
		if (a == NULL)
			return cv_nomem(c);
		a->device = reclog_get_u32(&k);
		a->address = reclog_get_u64(&k);
		a->bytes = reclog_get_u64(&k);
		a->flags = reclog_get_u32(&k);
		a->seq_alloc = r->seq;
		a->seq_free = UINT64_MAX;
		a->range = PLAN_NONE;
		if (a->bytes > p->alloc_max)
			p->alloc_max = a->bytes;
		break;
	}
	case RECLOG_FREE: {
		uint32_t device = reclog_get_u32(&k);
		uint64_t address = reclog_get_u64(&k);
		for (size_t i = p->nallocs; i-- > 0;) {
			struct cv_alloc *a = &p->allocs[i];
			if (a->device == device && a->address == address && a->seq_free == UINT64_MAX) {
				a->seq_free = r->seq;
				break;
			}
		}
		break;
	}
	case RECLOG_SNAPSHOT: {
		uint32_t device = reclog_get_u32(&k), n;
		uint64_t address = reclog_get_u64(&k);
		const uint8_t *data = reclog_get_bytes(&k, &n);
		for (size_t i = p->nallocs; i-- > 0;) {
			struct cv_alloc *a = &p->allocs[i];
			if (a->device == device && a->address == address && a->bytes == n) {
				a->snap = data;
				break;
			}
		}
		break;
	}
	case RECLOG_KERNEL:
	case RECLOG_MEMCPY:
	case RECLOG_MEMSET:
		e = GROW(p->evs, p->nevs, p->cevs);
		if (e == NULL)
			return cv_nomem(c);
		e->kind = EV_OP;
		e->seq = r->seq;
		e->device = reclog_get_u32(&k);
		(void)reclog_get_u64(&k);      /* the stream */
		e->corr = reclog_get_u32(&k);
		if (r->type == RECLOG_KERNEL)
			decode_kernel(c, p, &k, &e->op, r->seq);
		else if (r->type == RECLOG_MEMCPY)
			decode_copy(&k, &e->op);
		else
			decode_memset(&k, &e->op);
		break;
	case RECLOG_GRAPH:
	case RECLOG_GRAPH_UPDATE:
		return decode_graph(c, p, r);
	case RECLOG_GRAPH_NODE_SET:
		return decode_node_set(c, p, r);
	case RECLOG_GRAPH_LAUNCH: {
		uint64_t exec;
		e = GROW(p->evs, p->nevs, p->cevs);
		if (e == NULL)
			return cv_nomem(c);
		e->kind = EV_GRAPH;
		e->seq = r->seq;
		e->device = reclog_get_u32(&k);
		(void)reclog_get_u64(&k);
		exec = reclog_get_u64(&k);
		e->corr = reclog_get_u32(&k);
		e->graph = map_get(&p->graph_by_exec, exec_key(exec, e->device));
		if (e->graph == PLAN_NONE && !k.bad)
			e->graph = stub_graph(c, p, exec, e->device, r->seq);
		break;
	}
	case RECLOG_RANGE_PUSH:
	case RECLOG_RANGE_START:
		e = GROW(p->evs, p->nevs, p->cevs);
		if (e == NULL)
			return cv_nomem(c);
		e->kind = r->type == RECLOG_RANGE_PUSH ? EV_PUSH : EV_START;
		e->seq = r->seq;
		e->thread = reclog_get_u64(&k);
		e->name = (const char *)reclog_get_bytes(&k, &e->namelen);
		break;
	case RECLOG_RANGE_POP:
	case RECLOG_RANGE_END:
		e = GROW(p->evs, p->nevs, p->cevs);
		if (e == NULL)
			return cv_nomem(c);
		e->kind = r->type == RECLOG_RANGE_POP ? EV_POP : EV_END;
		e->seq = r->seq;
		e->thread = reclog_get_u64(&k);
		break;
	case RECLOG_ACTIVITY: {
		uint32_t corr = reclog_get_u32(&k), i;
		uint64_t start, end;
		(void)reclog_get_u32(&k);
		start = reclog_get_u64(&k);
		end = reclog_get_u64(&k);
		if (k.bad || end < start || start == 0)
			break;
		i = map_get(&p->time_by_corr, corr);
		if (i == PLAN_NONE) {
			struct cv_time *t = GROW(p->times, p->ntimes, p->ctimes);
			if (t == NULL || map_put(&p->time_by_corr, corr, (uint32_t)(p->ntimes - 1)) != 0)
				return cv_nomem(c);
			t->start = start;
			t->end = end;
		} else {
			if (start < p->times[i].start)
				p->times[i].start = start;
			if (end > p->times[i].end)
				p->times[i].end = end;
		}
		break;
	}
	default:
		break;   /* PROCESS, CAPTURE_*, END, and types of later versions */
	}
	if (k.bad)
		return cv_fail(c, RECORD_BAD_LOG, "%s: record %" PRIu64 " (%s) is malformed",
		               p->log->path ? p->log->path : "log", r->seq, reclog_type_name(r->type));
	return c->rc == RECORD_OK ? 0 : -1;
}

static int by_address(const void *x, const void *y)
{
	const struct cv_order *a = x, *b = y;

	return a->address < b->address ? -1 : a->address > b->address;
}

static int proc_decode(struct cv *c, struct cv_proc *p)
{
	for (size_t i = 0; i < p->log->nrec; i++)
		if (decode_record(c, p, &p->log->rec[i]) != 0)
			return -1;
	if (p->log->truncated)
		cv_note(c, "process %u: the recording log ends in the middle of a record "
		        "(the process died?); what came before is kept", p->log->pid);
	else if (!p->log->ended)
		cv_note(c, "process %u: the recording log has no end mark (the process did not "
		        "exit normally?)", p->log->pid);
	p->alloc_order = malloc((p->nallocs ? p->nallocs : 1) * sizeof *p->alloc_order);
	if (p->alloc_order == NULL)
		return cv_nomem(c);
	for (size_t i = 0; i < p->nallocs; i++) {
		p->alloc_order[i].address = p->allocs[i].address;
		p->alloc_order[i].index = (uint32_t)i;
	}
	qsort(p->alloc_order, p->nallocs, sizeof *p->alloc_order, by_address);
	return 0;
}

static void proc_free(struct cv_proc *p)
{
	for (size_t i = 0; i < p->nmods; i++)
		free(p->mods[i].note);
	for (size_t i = 0; i < p->nfuncs; i++) {
		free(p->funcs[i].name);
		free(p->funcs[i].params);
	}
	for (size_t i = 0; i < p->ngraphs; i++) {
		free(p->graphs[i].nodes);
		free(p->graphs[i].edges);
	}
	for (size_t i = 0; i < p->ndevs; i++)
		free(p->devs[i].name);
	free(p->mods);
	free(p->funcs);
	free(p->allocs);
	free(p->graphs);
	free(p->evs);
	free(p->times);
	free(p->devs);
	free(p->alloc_order);
	free(p->libraries);
	free(p->cudart);
	free(p->cublas);
	map_free(&p->func_by_handle);
	map_free(&p->graph_by_exec);
	map_free(&p->graph_by_content);
	map_free(&p->time_by_corr);
}

/* ---------------------------------------------------------------------- */
/* Steps.                                                                  */

/* A step: the work of one device between two positions of the log,
 * inclusive. */
struct cv_step {
	uint32_t device;
	uint64_t first;
	uint64_t last;
	size_t   ev_first;   /* the events from FIRST to LAST */
	size_t   ev_last;
};

struct cv_steps {
	struct cv_step *s;
	size_t          n, cap;
};

static int add_step(struct cv *c, struct cv_steps *st, uint32_t device, const struct cv_proc *p,
                    size_t ev_first, size_t ev_last)
{
	struct cv_step *s = GROW(st->s, st->n, st->cap);

	if (s == NULL)
		return cv_nomem(c);
	s->device = device;
	s->first = p->evs[ev_first].seq;
	s->last = p->evs[ev_last].seq;
	s->ev_first = ev_first;
	s->ev_last = ev_last;
	return 0;
}

static int name_is(const struct cv_event *e, const char *name)
{
	return e->namelen == strlen(name) && memcmp(e->name, name, e->namelen) == 0;
}

/* The devices with work between FIRST and LAST: one step each. */
static int split_devices(struct cv *c, struct cv_proc *p, struct cv_steps *st, size_t ev_first,
                         size_t ev_last)
{
	uint32_t seen[64];
	size_t nseen = 0;

	for (size_t i = ev_first; i <= ev_last; i++) {
		const struct cv_event *e = &p->evs[i];
		size_t j;

		if (e->kind != EV_OP && e->kind != EV_GRAPH)
			continue;
		for (j = 0; j < nseen && seen[j] != e->device; j++)
			;
		if (j < nseen)
			continue;
		if (nseen == sizeof seen / sizeof seen[0])
			break;
		seen[nseen++] = e->device;
		if (add_step(c, st, e->device, p, ev_first, ev_last) != 0)
			return -1;
	}
	return 0;
}

/* Steps marked by NVTX ranges named NAME: pushes and pops are matched per
 * thread; a range of the name inside another of it belongs to the outer
 * one. */
static int steps_nvtx(struct cv *c, struct cv_proc *p, const char *name, struct cv_steps *st)
{
	struct thread_state {
		uint64_t thread;
		uint32_t depth;      /* ranges open */
		uint32_t step_depth; /* depth at the step's push; 0 none */
		size_t   first;      /* the event that opened the step */
	} *ts = NULL;
	size_t nts = 0, cts = 0;
	uint64_t open_range = 0;
	size_t range_first = 0;
	int range_open = 0, rc = -1, unclosed = 0;

	for (size_t i = 0; i < p->nevs; i++) {
		const struct cv_event *e = &p->evs[i];
		struct thread_state *t = NULL;

		if (e->kind == EV_PUSH || e->kind == EV_POP) {
			for (size_t j = 0; j < nts; j++)
				if (ts[j].thread == e->thread)
					t = &ts[j];
			if (t == NULL) {
				t = GROW(ts, nts, cts);
				if (t == NULL) {
					cv_nomem(c);
					goto out;
				}
				t->thread = e->thread;
			}
		}
		switch (e->kind) {
		case EV_PUSH:
			t->depth++;
			if (t->step_depth == 0 && name_is(e, name)) {
				t->step_depth = t->depth;
				t->first = i;
			}
			break;
		case EV_POP:
			if (t->depth == 0)
				break;
			if (t->step_depth == t->depth) {
				if (split_devices(c, p, st, t->first, i) != 0)
					goto out;
				t->step_depth = 0;
			}
			t->depth--;
			break;
		case EV_START:
			if (!range_open && name_is(e, name)) {
				range_open = 1;
				open_range = e->thread;
				range_first = i;
			}
			break;
		case EV_END:
			if (range_open && e->thread == open_range) {
				if (split_devices(c, p, st, range_first, i) != 0)
					goto out;
				range_open = 0;
			}
			break;
		default:
			break;
		}
	}
	for (size_t j = 0; j < nts; j++)
		unclosed += ts[j].step_depth != 0;
	unclosed += range_open;
	if (unclosed)
		cv_note(c, "process %u: %d step range(s) '%s' never closed: left out", p->log->pid,
		        unclosed, name);
	rc = 0;
out:
	free(ts);
	return rc;
}

/* Steps found in the sequence of graph launches of each device (the rule
 * in convert.h). */
static int steps_repeat(struct cv *c, struct cv_proc *p, struct cv_steps *st)
{
	enum { START = PLAN_NONE - 1 };
	uint32_t *succ = NULL, *pred = NULL, *stamp = NULL;
	uint8_t *succ_multi = NULL, *pred_multi = NULL;
	uint32_t devices[64];
	size_t ndev = 0, ng = p->ngraphs;
	int rc = -1;

	for (size_t i = 0; i < p->nevs; i++) {
		size_t j;
		if (p->evs[i].kind != EV_GRAPH)
			continue;
		for (j = 0; j < ndev && devices[j] != p->evs[i].device; j++)
			;
		if (j == ndev && ndev < sizeof devices / sizeof devices[0])
			devices[ndev++] = p->evs[i].device;
	}
	succ = malloc((ng + 1) * sizeof *succ);
	pred = malloc((ng + 1) * sizeof *pred);
	stamp = malloc((ng + 1) * sizeof *stamp);
	succ_multi = malloc(ng + 1);
	pred_multi = malloc(ng + 1);
	if (!succ || !pred || !stamp || !succ_multi || !pred_multi) {
		cv_nomem(c);
		goto out;
	}
	for (size_t d = 0; d < ndev; d++) {
		uint32_t prev = START, step = 0;
		size_t first = 0, last = 0;
		int open = 0;

		for (size_t g = 0; g < ng; g++) {
			succ[g] = pred[g] = PLAN_NONE;
			succ_multi[g] = pred_multi[g] = 0;
			stamp[g] = 0;
		}
		/* Who follows whom, over the whole run. */
		for (size_t i = 0; i < p->nevs; i++) {
			const struct cv_event *e = &p->evs[i];
			if (e->kind != EV_GRAPH || e->device != devices[d])
				continue;
			if (pred[e->graph] == PLAN_NONE)
				pred[e->graph] = prev;
			else if (pred[e->graph] != prev)
				pred_multi[e->graph] = 1;
			if (prev != START) {
				if (succ[prev] == PLAN_NONE)
					succ[prev] = e->graph;
				else if (succ[prev] != e->graph)
					succ_multi[prev] = 1;
			}
			prev = e->graph;
		}
		/* Cut. */
		prev = START;
		for (size_t i = 0; i < p->nevs; i++) {
			const struct cv_event *e = &p->evs[i];
			int cut;
			if (e->kind != EV_GRAPH || e->device != devices[d])
				continue;
			cut = !open || stamp[e->graph] == step || (prev != START && succ_multi[prev]) ||
			      pred_multi[e->graph];
			if (cut) {
				if (open && add_step(c, st, devices[d], p, first, last) != 0)
					goto out;
				step++;
				open = 1;
				first = i;
			}
			stamp[e->graph] = step;
			last = i;
			prev = e->graph;
		}
		if (open && add_step(c, st, devices[d], p, first, last) != 0)
			goto out;
	}
	rc = 0;
out:
	free(succ);
	free(pred);
	free(stamp);
	free(succ_multi);
	free(pred_multi);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* One step's items and shape.                                             */

struct cv_item {
	int      kind;        /* PLAN_ITEM_SEGMENT or _BREAK */
	uint32_t graph;       /* SEGMENT */
	size_t   ev;          /* SEGMENT: its launch; BREAK: the first op */
	uint32_t nops;        /* BREAK: ops, ev.. (eager ops of this device) */
	uint64_t launches;    /* BREAK: its launch shape (a hash; not in the key) */
	uint64_t start;       /* its GPU start (a break's first), 0 unknown */
	uint64_t issue;       /* the time of its launch call (a break's first) */
};

struct cv_shape {
	uint64_t        key;
	uint32_t        device;
	struct cv_item *items;
	size_t          nitems;
	uint64_t        time;  /* the step's GPU time, 0 unknown */
};

/* The GPU time of the work with correlation CORR. */
static const struct cv_time *proc_time(const struct cv_proc *p, uint32_t corr)
{
	uint32_t i = map_get(&p->time_by_corr, corr);
	return i == PLAN_NONE ? NULL : &p->times[i];
}

/* The time from the first start to the last end of the events' work,
 * over an item (or a whole step): 0 when no time was recorded. */
struct span {
	uint64_t start, end;
};

static void span_add(struct span *s, const struct cv_time *t)
{
	if (t == NULL)
		return;
	if (s->start == 0 || t->start < s->start)
		s->start = t->start;
	if (t->end > s->end)
		s->end = t->end;
}

static uint64_t span_ns(const struct span *s)
{
	return s->start != 0 && s->end > s->start ? s->end - s->start : 0;
}

static uint64_t item_time(const struct cv_proc *p, const struct cv_item *it)
{
	struct span s = { 0, 0 };

	if (it->kind == PLAN_ITEM_SEGMENT) {
		span_add(&s, proc_time(p, p->evs[it->ev].corr));
	} else {
		uint32_t n = 0;
		for (size_t i = it->ev; n < it->nops; i++) {
			if (p->evs[i].kind != EV_OP || p->evs[i].device != p->evs[it->ev].device)
				continue;
			span_add(&s, proc_time(p, p->evs[i].corr));
			n++;
		}
	}
	return span_ns(&s);
}

/* Cut step S into items; its shape key: the device, the executable graphs
 * launched in order and the places of the breaks between them, not what
 * the breaks run (their launches change from step to step: attention's
 * split count follows the KV length, the first step loads modules). Each
 * break gets the hash of its launch shape (each launch's type, kernel,
 * grid and block) to count how many a variant's steps had. */
static int step_shape(struct cv *c, const struct cv_proc *p, const struct cv_step *s,
                      struct cv_shape *sh)
{
	size_t cap = 0;
	struct cv_item *open = NULL;
	struct span all = { 0, 0 };
	uint64_t h = PLAN_HASH64_INIT;

	memset(sh, 0, sizeof *sh);
	sh->device = s->device;
	h = plan_hash64(&s->device, sizeof s->device, h);
	for (size_t i = s->ev_first; i <= s->ev_last; i++) {
		const struct cv_event *e = &p->evs[i];
		struct cv_item *it;
		if ((e->kind != EV_OP && e->kind != EV_GRAPH) || e->device != s->device)
			continue;
		if (e->kind == EV_GRAPH) {
			it = GROW(sh->items, sh->nitems, cap);
			if (it == NULL)
				return cv_nomem(c);
			it->kind = PLAN_ITEM_SEGMENT;
			it->graph = e->graph;
			it->ev = i;
			it->issue = p->log->rec[e->seq].time;
			open = NULL;
			/* The graph itself, not its structure: an engine's graphs of
			 * two batch sizes may hold the same kernels alike. */
			h = plan_hash64("S", 1, h);
			h = plan_hash64(&e->graph, sizeof e->graph, h);
		} else if (e->kind == EV_OP) {
			if (open == NULL) {
				it = GROW(sh->items, sh->nitems, cap);
				if (it == NULL)
					return cv_nomem(c);
				it->kind = PLAN_ITEM_BREAK;
				it->ev = i;
				it->launches = PLAN_HASH64_INIT;
				it->issue = p->log->rec[e->seq].time;
				open = it;
				h = plan_hash64("B", 1, h);
			}
			open->nops++;
			open->launches = plan_hash64(&e->op.type, sizeof e->op.type, open->launches);
			if (e->op.type == PLAN_NODE_KERNEL) {
				const char *name = p->funcs[e->op.func].name;
				open->launches = plan_hash64(name, strlen(name) + 1, open->launches);
				open->launches = plan_hash64(e->op.grid, sizeof e->op.grid, open->launches);
				open->launches = plan_hash64(e->op.block, sizeof e->op.block, open->launches);
			}
		} else {
			continue;
		}
		span_add(&all, proc_time(p, e->corr));
	}
	/* An item starts with its first launch: the graph's, a break's first
	 * eager op's. */
	for (size_t k = 0; k < sh->nitems; k++) {
		const struct cv_time *t = proc_time(p, p->evs[sh->items[k].ev].corr);
		sh->items[k].start = t != NULL ? t->start : 0;
	}
	sh->key = h;
	sh->time = span_ns(&all);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Writing into the plan.                                                  */

/* Whether IMAGE holds NAME as a whole string (ELF string tables hold
 * symbol names between NULs). */
static int image_has_name(const uint8_t *image, size_t bytes, const char *name)
{
	size_t n = strlen(name);
	const uint8_t *p = image, *end = image + bytes;

	if (n == 0)
		return 0;
	while (p + n <= end) {
		const uint8_t *q = memchr(p, (unsigned char)name[0], (size_t)(end - p - n + 1));
		if (q == NULL)
			return 0;
		if (memcmp(q, name, n) == 0 && (q == image || q[-1] == '\0') &&
		    (q + n == end || q[n] == '\0'))
			return 1;
		p = q + 1;
	}
	return 0;
}

static uint32_t plan_module_of(struct cv *c, struct cv_proc *p, struct cv_module *m)
{
	struct plan_diag d = { 0 };
	struct plan_module pm = { 0 };
	char name[32];
	int err;

	if (m->plan != PLAN_NONE)
		return m->plan;
	snprintf(name, sizeof name, "module %u", m->id);
	pm.name = name;
	pm.bytes = m->bytes;
	if (m->flags & RECLOG_MODULE_IMAGE) {
		pm.flags = PLAN_MODULE_IMAGE;
		pm.image = m->image;
		pm.hash = XXH64(m->image, m->bytes, 0);
		pm.note = "";
	} else {
		pm.note = m->note[0] ? m->note : "the recording kept no image of it";
		c->sum.modules_without_image++;
	}
	err = plan_add_module(c->plan, &pm, &m->plan, &d);
	(void)p;
	return cv_plan(c, err, &d) == 0 ? m->plan : PLAN_NONE;
}

/* The module a function comes from (convert.h). */
static uint32_t function_module(struct cv *c, struct cv_proc *p, const struct cv_function *f)
{
	struct plan_diag d = { 0 };
	struct plan_module pm = { 0 };
	int err;

	/* The module its handle names: the latest linked to that handle
	 * before the function was first seen and not unloaded then, if its
	 * image holds the name (several modules may hold a kernel of one
	 * name: a compiler's candidates). */
	if (f->module != 0)
		for (size_t i = p->nmods; i-- > 0;) {
			struct cv_module *m = &p->mods[i];
			if (m->handle != f->module || m->seq_link > f->seq || m->seq_unload < f->seq)
				continue;
			if ((m->flags & RECLOG_MODULE_IMAGE) && image_has_name(m->image, m->bytes, f->name))
				return plan_module_of(c, p, m);
			break;
		}
	/* Else by name: the newest module loaded before the function was
	 * first seen whose image holds it, else the newest of all. */
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = p->nmods; i-- > 0;) {
			struct cv_module *m = &p->mods[i];
			if (pass == 0 && m->seq > f->seq)
				continue;
			if ((m->flags & RECLOG_MODULE_IMAGE) && image_has_name(m->image, m->bytes, f->name))
				return plan_module_of(c, p, m);
		}
	/* No image holds its name (a compressed image?): the newest module
	 * loaded before the function was first seen, which lazy loading makes
	 * the one that holds it, said in a note; a module without an image is
	 * not replayable. Else a stand-in, not replayable either. */
	for (size_t i = p->nmods; i-- > 0;)
		if (p->mods[i].seq < f->seq) {
			cv_note(c, "process %u: no module image holds the name %s: taken to be "
			        "module %u, the newest loaded before it", p->log->pid, f->name,
			        p->mods[i].id);
			return plan_module_of(c, p, &p->mods[i]);
		}
	if (p->unknown_module != PLAN_NONE)
		return p->unknown_module;
	pm.name = "unknown";
	pm.note = "no recorded module image holds its functions";
	err = plan_add_module(c->plan, &pm, &p->unknown_module, &d);
	c->sum.modules_without_image++;
	cv_note(c, "process %u: no recorded module image holds %s: its module is recorded "
	        "as not replayable", p->log->pid, f->name);
	return cv_plan(c, err, &d) == 0 ? p->unknown_module : PLAN_NONE;
}

static uint32_t plan_function_of(struct cv *c, struct cv_proc *p, uint32_t fi)
{
	struct cv_function *f = &p->funcs[fi];
	struct plan_diag d = { 0 };
	struct plan_function pf;
	int err;

	if (f->plan != PLAN_NONE)
		return f->plan;
	pf.module = function_module(c, p, f);
	if (pf.module == PLAN_NONE)
		return PLAN_NONE;
	pf.name = f->name;
	pf.nparams = f->nparams;
	pf.params = f->params;
	err = plan_add_function(c->plan, &pf, &f->plan, &d);
	return cv_plan(c, err, &d) == 0 ? f->plan : PLAN_NONE;
}

/* The recorded allocation of DEVICE holding ADDRESS at log position SEQ,
 * or NULL. */
static struct cv_alloc *find_alloc(struct cv_proc *p, uint32_t device, uint64_t address,
                                   uint64_t seq)
{
	size_t lo = 0, hi = p->nallocs;

	if (address == 0 || p->nallocs == 0)
		return NULL;
	/* The first allocation starting above ADDRESS. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->alloc_order[mid].address <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		struct cv_alloc *a = &p->allocs[p->alloc_order[lo].index];
		if (address - a->address >= p->alloc_max)
			break;
		if (a->device == device && address - a->address < a->bytes && a->seq_alloc < seq &&
		    seq < a->seq_free)
			return a;
	}
	return NULL;
}

static int plan_addr_of(struct cv *c, struct cv_proc *p, uint32_t device, uint64_t address,
                        uint64_t seq, struct plan_addr *out)
{
	struct cv_alloc *a = find_alloc(p, device, address, seq);
	struct plan_diag d = { 0 };
	struct cv_range *g;
	int err;

	out->alloc = PLAN_NONE;
	out->offset = address;
	if (a == NULL)
		return 0;
	g = &c->ranges[a->range];
	if (g->plan == PLAN_NONE) {
		struct plan_alloc pa = { 0 };
		pa.address = g->address;
		pa.bytes = g->bytes;
		pa.device = g->device;
		pa.flags = (g->flags & RECLOG_ALLOC_VMM) ? PLAN_ALLOC_VMM : 0;
		if (g->snap != NULL) {
			pa.flags |= PLAN_ALLOC_SNAPSHOT;
			pa.data = g->snap;
			c->sum.snapshots++;
		}
		err = plan_add_alloc(c->plan, &pa, &g->plan, &d);
		if (cv_plan(c, err, &d) != 0)
			return -1;
		c->sum.allocs++;
	}
	out->alloc = g->plan;
	out->offset = address - g->address;
	return 0;
}

struct range_ref {
	uint32_t       device;
	uint64_t       address;
	struct cv_alloc *alloc;
};

static int by_device_address(const void *x, const void *y)
{
	const struct range_ref *a = x, *b = y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->address < b->address ? -1 : a->address > b->address;
}

/* Merge the allocations of every process into ranges (struct cv_range). */
static int make_ranges(struct cv *c, struct cv_proc *procs, size_t nprocs)
{
	struct range_ref *refs;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < nprocs; i++)
		n += procs[i].nallocs;
	refs = malloc((n ? n : 1) * sizeof *refs);
	if (refs == NULL)
		return cv_nomem(c);
	for (size_t i = 0; i < nprocs; i++)
		for (size_t j = 0; j < procs[i].nallocs; j++) {
			struct cv_alloc *a = &procs[i].allocs[j];
			if (a->bytes == 0 || a->address > UINT64_MAX - a->bytes)
				continue;
			refs[k].device = a->device;
			refs[k].address = a->address;
			refs[k].alloc = a;
			k++;
		}
	qsort(refs, k, sizeof *refs, by_device_address);
	for (size_t i = 0; i < k; i++) {
		struct cv_alloc *a = refs[i].alloc;
		struct cv_range *g = c->nranges ? &c->ranges[c->nranges - 1] : NULL;
		if (g == NULL || g->device != a->device || a->address >= g->address + g->bytes) {
			g = GROW(c->ranges, c->nranges, c->cranges);
			if (g == NULL) {
				free(refs);
				return cv_nomem(c);
			}
			g->device = a->device;
			g->address = a->address;
			g->plan = PLAN_NONE;
		}
		if (a->address + a->bytes > g->address + g->bytes)
			g->bytes = a->address + a->bytes - g->address;
		g->flags |= a->flags;
		g->nallocs++;
		g->snap = g->nallocs == 1 && a->snap != NULL && a->address == g->address ? a->snap : NULL;
		a->range = (uint32_t)(c->nranges - 1);
	}
	/* A snapshot stands only for a range of exactly its allocation. */
	for (size_t i = 0; i < k; i++) {
		struct cv_alloc *a = refs[i].alloc;
		struct cv_range *g = &c->ranges[a->range];
		if (g->nallocs != 1 || g->bytes != a->bytes)
			g->snap = NULL;
	}
	free(refs);
	return 0;
}

static uint64_t rd64le(const uint8_t *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* Add OP (issued at SEQ on DEVICE) as a plan launch. */
static int add_launch(struct cv *c, struct cv_proc *p, const struct cv_op *op, uint32_t device,
                      uint64_t seq, uint32_t *index)
{
	struct plan_launch l = { 0 };
	struct plan_patch *patches = NULL;
	struct plan_diag d = { 0 };
	int err, rc = -1;

	l.type = op->type;
	if (op->type == PLAN_NODE_KERNEL) {
		uint32_t n = 0;
		l.function = plan_function_of(c, p, op->func);
		if (l.function == PLAN_NONE)
			return -1;
		memcpy(l.grid, op->grid, sizeof l.grid);
		memcpy(l.block, op->block, sizeof l.block);
		memcpy(l.cluster, op->cluster, sizeof l.cluster);
		l.shmem = op->shmem;
		l.flags = op->flags;
		l.nargs = op->nargs;
		l.args = op->args;
		patches = malloc((op->nargs / 8 + 1) * sizeof *patches);
		if (patches == NULL)
			return cv_nomem(c);
		for (uint32_t b = 0; b + 8 <= op->nargs; b += 8) {
			uint64_t w = rd64le(op->args + b);
			if (find_alloc(p, device, w, seq) == NULL)
				continue;
			patches[n].byte = b;
			if (plan_addr_of(c, p, device, w, seq, &patches[n].addr) != 0)
				goto out;
			n++;
		}
		l.npatches = n;
		l.patches = patches;
	} else if (op->type == PLAN_NODE_MEMCPY) {
		if (plan_addr_of(c, p, device, op->dst, seq, &l.dst) != 0 ||
		    plan_addr_of(c, p, device, op->src, seq, &l.src) != 0)
			goto out;
		l.bytes = op->bytes;
		l.ndata = op->ndata;
		l.data = op->ndata ? op->data : NULL;
	} else {
		if (plan_addr_of(c, p, device, op->dst, seq, &l.dst) != 0)
			goto out;
		l.value = op->value;
		l.element = op->element;
		l.width = op->width;
		l.height = op->height;
		l.pitch = op->pitch;
	}
	err = plan_add_launch(c->plan, &l, index, &d);
	if (cv_plan(c, err, &d) != 0)
		goto out;
	c->sum.launches++;
	rc = 0;
out:
	free(patches);
	return rc;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* The median of the N values at V (sorted here); 0 values are left out
 * (no time recorded); 0 when none is left. */
static uint64_t median(uint64_t *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i] != 0)
			v[k++] = v[i];
	if (k == 0)
		return 0;
	qsort(v, k, sizeof *v, cmp_u64);
	return k % 2 ? v[k / 2] : v[k / 2 - 1] / 2 + v[k / 2] / 2 + (v[k / 2 - 1] % 2 + v[k / 2] % 2) / 2;
}

static const char *kernel_name(const struct cv_proc *p, const struct cv_op *op)
{
	switch (op->type) {
	case PLAN_NODE_KERNEL: return p->funcs[op->func].name;
	case PLAN_NODE_MEMCPY: return "memcpy";
	case PLAN_NODE_MEMSET: return "memset";
	default: return "";
	}
}

/* An item's recorded times: its median duration and start offsets. */
struct cv_times {
	uint64_t recorded, start, issue;
};

static int add_segment(struct cv *c, struct cv_proc *p, uint32_t variant, const struct cv_graph *g,
                       const struct cv_times *tm)
{
	struct plan_node *nodes = calloc(g->nnodes ? g->nnodes : 1, sizeof *nodes);
	struct plan_segment s = { 0 };
	struct plan_diag d = { 0 };
	int err, rc = -1;

	if (nodes == NULL)
		return cv_nomem(c);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct cv_op *op = &g->nodes[i];
		struct plan_node *n = &nodes[i];
		n->type = op->type;
		n->op = PLAN_NONE;
		n->kernel = op->type == PLAN_NODE_KERNEL ? p->funcs[op->func].name : "";
		memcpy(n->grid, op->grid, sizeof n->grid);
		memcpy(n->block, op->block, sizeof n->block);
		n->shmem = op->shmem;
		n->launch = PLAN_NONE;
		if ((op->type == PLAN_NODE_KERNEL || op->type == PLAN_NODE_MEMCPY ||
		     op->type == PLAN_NODE_MEMSET) &&
		    add_launch(c, p, op, g->device, g->seq, &n->launch) != 0)
			goto out;
	}
	s.variant = variant;
	s.flags = PLAN_SEG_NODES;
	s.nnodes = g->nnodes;
	s.nodes = nodes;
	s.nedges = g->nedges;
	s.edges = g->edges;
	s.recorded_ns = tm->recorded;
	s.start_ns = tm->start;
	s.issue_ns = tm->issue;
	s.fingerprint = plan_fingerprint_recorded(c->plan, &s);
	err = plan_add_segment(c->plan, &s, NULL, &d);
	if (cv_plan(c, err, &d) != 0)
		goto out;
	c->sum.segments++;
	rc = 0;
out:
	free(nodes);
	return rc;
}

/* A break: the launches of IT (the variant's representative step), with
 * SHAPES distinct launch shapes over STEPS steps in its detail. */
static int add_break(struct cv *c, struct cv_proc *p, uint32_t variant, const struct cv_item *it,
                     uint32_t number, const struct cv_times *tm, size_t shapes, size_t steps)
{
	struct plan_breakpoint b = { 0 };
	struct plan_diag d = { 0 };
	uint32_t device = p->evs[it->ev].device, n = 0, first = PLAN_NONE;
	char name[32], detail[512];
	size_t dl;
	int err;

	dl = (size_t)snprintf(detail, sizeof detail, "%u eager op%s, %zu launch shape%s over %zu step%s:",
	                      it->nops, it->nops == 1 ? "" : "s", shapes, shapes == 1 ? "" : "s",
	                      steps, steps == 1 ? "" : "s");
	for (size_t i = it->ev; n < it->nops; i++) {
		const struct cv_event *e = &p->evs[i];
		uint32_t idx;
		if (e->kind != EV_OP || e->device != device)
			continue;
		if (add_launch(c, p, &e->op, device, e->seq, &idx) != 0)
			return -1;
		if (first == PLAN_NONE)
			first = idx;
		if (dl < sizeof detail)
			dl += (size_t)snprintf(detail + dl, sizeof detail - dl, "%s %s", n ? "," : "",
			                       kernel_name(p, &e->op));
		n++;
	}
	snprintf(name, sizeof name, "eager.%u", number);
	b.variant = variant;
	b.op = PLAN_NONE;
	b.name = name;
	b.reason = PLAN_BREAK_RECORDED;
	b.detail = detail;
	b.launch_first = first;
	b.launch_count = n;
	b.recorded_ns = tm->recorded;
	b.start_ns = tm->start;
	b.issue_ns = tm->issue;
	err = plan_add_breakpoint(c->plan, &b, NULL, &d);
	if (cv_plan(c, err, &d) != 0)
		return -1;
	c->sum.breaks++;
	return 0;
}

/* The number of distinct values among the N at V (sorted here). */
static size_t distinct(uint64_t *v, size_t n)
{
	size_t k = n > 0;

	qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 1; i < n; i++)
		k += v[i] != v[i - 1];
	return k;
}

/* Whether step SH's items started in their order, each after the one
 * before it: on the GPU (HOST 0; every item's start recorded) or on the
 * host (HOST 1, their launch calls). A step whose items' GPU starts go
 * back (eager work on another stream than the graphs, overlapping them)
 * or whose times are missing gives no offsets. */
static int step_in_order(const struct cv_shape *sh, int host)
{
	for (size_t k = 0; k < sh->nitems; k++) {
		uint64_t t = host ? sh->items[k].issue : sh->items[k].start;
		uint64_t prev = k == 0 ? 0 : host ? sh->items[k - 1].issue : sh->items[k - 1].start;
		if (t == 0 || (k > 0 && t <= prev))
			return 0;
	}
	return 1;
}

/* The median offset of item K from its step's first item over the N
 * steps of a shape at IDX that started in order (step_in_order), on the
 * GPU (HOST 0) or the host (HOST 1); 0 for the first item and where no
 * step did. Every step counted has every item's time, so the medians of
 * a variant's items never decrease along them, and those past the first
 * are above 0. VALS has room for N values. */
static uint64_t item_offset(const struct cv_shape *shapes, const size_t *idx, size_t n, size_t k,
                            int host, uint64_t *vals)
{
	size_t m = 0;

	if (k == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct cv_shape *sh = &shapes[idx[i]];
		if (!step_in_order(sh, host))
			continue;
		vals[m++] = host ? sh->items[k].issue - sh->items[0].issue
		                 : sh->items[k].start - sh->items[0].start;
	}
	return median(vals, m);
}

/* Write one variant: the steps of a shape (the shapes at IDX, N of them,
 * in the order they ran), with the medians of their times. The most
 * recent step is the representative whose breaks' launches are kept: the
 * first step of a shape may still load modules or do a library's
 * first-call work, the last one runs as the program does by then. */
static int add_variant(struct cv *c, struct cv_proc *p, struct cv_shape *shapes,
                       const size_t *idx, size_t n)
{
	const struct cv_shape *rep = &shapes[idx[n - 1]];
	struct plan_variant v = { 0 };
	struct plan_diag d = { 0 };
	uint64_t *vals = malloc((n ? n : 1) * sizeof *vals);
	uint32_t vi, nbreaks = 0;
	const char *step = c->opts->step;
	int err, rc = -1;

	if (vals == NULL)
		return cv_nomem(c);
	for (size_t k = 0; k < rep->nitems; k++)
		nbreaks += rep->items[k].kind == PLAN_ITEM_BREAK;
	for (size_t i = 0; i < n; i++)
		vals[i] = shapes[idx[i]].time;
	v.tokens = ++c->next_variant;
	/* A step of graph launches only is a full-graph step. */
	v.mode = nbreaks == 0 ? PLAN_MODE_FULL : PLAN_MODE_BREAKABLE;
	v.label = step != NULL ? step : "repeat";
	v.seen = n;
	v.recorded_ns = median(vals, n);
	v.device = rep->device;
	err = plan_add_variant(c->plan, &v, &vi, &d);
	if (cv_plan(c, err, &d) != 0)
		goto out;
	nbreaks = 0;
	for (size_t k = 0; k < rep->nitems; k++) {
		const struct cv_item *it = &rep->items[k];
		struct cv_times tm = { 0, 0, 0 };
		size_t nshapes = 0;
		if (it->kind == PLAN_ITEM_BREAK) {
			for (size_t i = 0; i < n; i++)
				vals[i] = shapes[idx[i]].items[k].launches;
			nshapes = distinct(vals, n);
		}
		for (size_t i = 0; i < n; i++)
			vals[i] = item_time(p, &shapes[idx[i]].items[k]);
		tm.recorded = median(vals, n);
		tm.start = item_offset(shapes, idx, n, k, 0, vals);
		tm.issue = item_offset(shapes, idx, n, k, 1, vals);
		if (it->kind == PLAN_ITEM_SEGMENT)
			err = add_segment(c, p, vi, &p->graphs[it->graph], &tm);
		else
			err = add_break(c, p, vi, it, nbreaks++, &tm, nshapes, n);
		if (err != 0)
			goto out;
	}
	c->sum.variants++;
	rc = 0;
out:
	free(vals);
	return rc;
}

/* Every step of a process, grouped by shape into variants. */
static int proc_variants(struct cv *c, struct cv_proc *p, const struct cv_steps *st)
{
	struct cv_shape *shapes = calloc(st->n ? st->n : 1, sizeof *shapes);
	size_t *idx = malloc((st->n ? st->n : 1) * sizeof *idx);
	uint8_t *done = calloc(st->n ? st->n : 1, 1);
	int rc = -1;

	if (shapes == NULL || idx == NULL || done == NULL) {
		cv_nomem(c);
		goto out;
	}
	for (size_t i = 0; i < st->n; i++)
		if (step_shape(c, p, &st->s[i], &shapes[i]) != 0)
			goto out;
	for (size_t i = 0; i < st->n; i++) {
		size_t n = 0;
		if (done[i] || shapes[i].nitems == 0)
			continue;
		for (size_t j = i; j < st->n; j++)
			if (!done[j] && shapes[j].key == shapes[i].key &&
			    shapes[j].nitems == shapes[i].nitems) {
				idx[n++] = j;
				done[j] = 1;
			}
		c->sum.steps += n;
		if (add_variant(c, p, shapes, idx, n) != 0)
			goto out;
	}
	rc = 0;
out:
	if (shapes != NULL)
		for (size_t i = 0; i < st->n; i++)
			free(shapes[i].items);
	free(shapes);
	free(idx);
	free(done);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The plan's meta and recording.                                          */

/* "13.0.1" -> 13000 (as cudaRuntimeGetVersion), or with CUBLAS 130001. */
static int32_t version_number(const char *text, int cublas)
{
	unsigned a = 0, b = 0, cc = 0;

	if (text == NULL || sscanf(text, "%u.%u.%u", &a, &b, &cc) < 2)
		return 0;
	return cublas ? (int32_t)(a * 10000 + b * 100 + cc) : (int32_t)(a * 1000 + b * 10);
}

/* The recording: set before the first module or launch (libplan wants
 * it first) and again at the end, with the steps counted. */
static int set_recording(struct cv *c, struct cv_proc *procs)
{
	struct plan_recording r = { 0 };
	struct plan_diag d = { 0 };
	char *rule = NULL;
	int err;

	r.command = c->opts->command != NULL ? c->opts->command : "";
	r.step_rule = "repeat";
	if (c->opts->step != NULL) {
		size_t n = strlen(c->opts->step) + 6;
		rule = malloc(n);
		if (rule == NULL)
			return cv_nomem(c);
		snprintf(rule, n, "nvtx:%s", c->opts->step);
		r.step_rule = rule;
		r.flags |= PLAN_RECORD_NVTX_STEP;
	}
	r.libraries = procs[0].libraries != NULL ? procs[0].libraries : "";
	r.pid = procs[0].log->pid;
	if (c->opts->snapshot)
		r.flags |= PLAN_RECORD_SNAPSHOT;
	r.wall_ns = c->opts->wall_ns;
	r.steps = c->sum.steps;
	err = plan_set_recording(c->plan, &r, &d);
	free(rule);
	return cv_plan(c, err, &d);
}

static int set_meta(struct cv *c, struct cv_proc *procs, size_t nprocs)
{
	struct plan_meta m = { 0 };
	struct plan_diag d = { 0 };
	const struct cv_device *dev = NULL;
	const struct plan_variant *v0 = plan_get_variant(c->plan, 0);
	int err;

	for (size_t i = 0; i < nprocs && dev == NULL; i++)
		for (size_t j = 0; j < procs[i].ndevs; j++)
			if (v0 == NULL || procs[i].devs[j].ordinal == v0->device) {
				dev = &procs[i].devs[j];
				break;
			}
	m.tool = c->opts->tool != NULL ? c->opts->tool : "bcgtool";
	m.script = "";
	m.created = c->opts->created;
	m.backend = PLAN_BACKEND_CUDA;
	m.device = dev != NULL ? dev->name : "";
	m.cc_major = dev != NULL ? (int32_t)dev->cc_major : 0;
	m.cc_minor = dev != NULL ? (int32_t)dev->cc_minor : 0;
	m.cuda_driver = dev != NULL ? (int32_t)dev->driver : 0;
	m.cuda_runtime = version_number(procs[0].cudart, 0);
	m.cublas = version_number(procs[0].cublas, 1);
	err = plan_set_meta(c->plan, &m, &d);
	if (cv_plan(c, err, &d) != 0)
		return -1;
	return set_recording(c, procs);
}

/* ---------------------------------------------------------------------- */

int record_log_has_work(const struct reclog *log)
{
	for (size_t i = 0; i < log->nrec; i++) {
		uint32_t t = log->rec[i].type;
		if (t == RECLOG_KERNEL || t == RECLOG_MEMCPY || t == RECLOG_MEMSET ||
		    t == RECLOG_GRAPH_LAUNCH)
			return 1;
	}
	return 0;
}

static int any_event(const struct cv_proc *p, size_t np, int kind)
{
	for (size_t i = 0; i < np; i++)
		for (size_t j = 0; j < p[i].nevs; j++)
			if (p[i].evs[j].kind == kind)
				return 1;
	return 0;
}

int record_convert(struct reclog *const *logs, size_t nlogs, const struct record_opts *opts,
                   plan_t **out, struct record_summary *sum, char *msg, size_t msglen)
{
	struct cv c = { 0 };
	struct cv_proc *procs = calloc(nlogs ? nlogs : 1, sizeof *procs);
	struct cv_steps *steps = calloc(nlogs ? nlogs : 1, sizeof *steps);
	uint32_t devices[64];
	size_t ndev = 0;

	*out = NULL;
	c.opts = opts;
	c.msg = msg;
	c.msglen = msglen;
	if (msglen > 0)
		msg[0] = '\0';
	c.plan = plan_new();
	if (procs == NULL || steps == NULL || c.plan == NULL) {
		cv_nomem(&c);
		goto out;
	}
	for (size_t i = 0; i < nlogs; i++) {
		procs[i].log = logs[i];
		procs[i].unknown_module = PLAN_NONE;
		if (proc_decode(&c, &procs[i]) != 0)
			goto out;
	}
	if (make_ranges(&c, procs, nlogs) != 0)
		goto out;
	if (!any_event(procs, nlogs, EV_OP) && !any_event(procs, nlogs, EV_GRAPH)) {
		cv_fail(&c, RECORD_NO_GPU_WORK, "the command did no GPU work that the recorder saw");
		goto out;
	}
	if (!any_event(procs, nlogs, EV_GRAPH)) {
		cv_fail(&c, RECORD_NO_GRAPHS, "the command launched no CUDA graph (it captured "
		        "nothing, or never replayed what it captured)");
		goto out;
	}
	for (size_t i = 0; i < nlogs; i++) {
		if (opts->step != NULL ? steps_nvtx(&c, &procs[i], opts->step, &steps[i])
		                       : steps_repeat(&c, &procs[i], &steps[i]))
			goto out;
	}
	if (opts->step != NULL) {
		size_t total = 0;
		for (size_t i = 0; i < nlogs; i++)
			total += steps[i].n;
		if (total == 0) {
			cv_fail(&c, RECORD_NO_STEPS, "no NVTX range named '%s' held GPU work "
			        "(see --step in bcgtool-record(1))", opts->step);
			goto out;
		}
	}
	if (set_recording(&c, procs) != 0)
		goto out;
	for (size_t i = 0; i < nlogs; i++)
		if (proc_variants(&c, &procs[i], &steps[i]) != 0)
			goto out;
	for (uint32_t i = 0; i < plan_count_variants(c.plan); i++) {
		uint32_t dv = plan_get_variant(c.plan, i)->device;
		size_t j;
		for (j = 0; j < ndev && devices[j] != dv; j++)
			;
		if (j == ndev && ndev < sizeof devices / sizeof devices[0])
			devices[ndev++] = dv;
	}
	if (set_meta(&c, procs, nlogs) != 0)
		goto out;
	for (size_t i = 0; i < nlogs; i++)
		for (size_t j = 0; j < procs[i].nevs; j++) {
			c.sum.graph_launches += procs[i].evs[j].kind == EV_GRAPH;
			c.sum.eager_launches += procs[i].evs[j].kind == EV_OP;
		}
	c.sum.processes = (uint32_t)nlogs;
	c.sum.updates = c.updates;
	c.sum.devices = (uint32_t)ndev;
	c.sum.modules = plan_count_modules(c.plan);
out:
	for (size_t i = 0; i < nlogs && procs != NULL; i++) {
		proc_free(&procs[i]);
		if (steps != NULL)
			free(steps[i].s);
	}
	free(procs);
	free(steps);
	free(c.ranges);
	if (c.rc != RECORD_OK) {
		plan_free(c.plan);
		return c.rc;
	}
	if (sum != NULL)
		*sum = c.sum;
	*out = c.plan;
	return RECORD_OK;
}
