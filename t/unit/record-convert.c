/*
 * record-convert.c - recording logs to plans: logs written by hand with
 * the recorder's own writer (reclog.h), converted, and the plans checked
 * against what the hand-made runs did: segments, breaks, variants, their
 * counts and median times, patches and allocations, modules.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#include "record/convert.h"
#include "record/reclog.h"
#include "tap.h"

/* ---------------------------------------------------------------------- */
/* Writing logs.                                                           */

struct tlog {
	char                  path[64];
	struct reclog_writer *w;
	uint64_t              time;
};

static void tlog_open(struct tlog *t)
{
	static int n;

	snprintf(t->path, sizeof t->path, "record-convert.%d.%d.bcglog", (int)getpid(), n++);
	unlink(t->path);
	t->w = reclog_open(t->path, 4242);
	t->time = 1000;
	if (t->w == NULL) {
		perror(t->path);
		exit(99);
	}
}

static void put(struct tlog *t, struct reclog_rec *r)
{
	if (reclog_write(t->w, r) != 0) {
		fprintf(stderr, "cannot write %s\n", t->path);
		exit(99);
	}
	reclog_rec_end(r);
}

static struct reclog *tlog_close(struct tlog *t, size_t cut)
{
	struct reclog *log;
	char err[128];

	if (reclog_close(t->w) != 0)
		exit(99);
	if (cut > 0) {
		FILE *f = fopen(t->path, "rb+");
		long size;
		if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		    ftruncate(fileno(f), size - (long)cut) != 0)
			exit(99);
		fclose(f);
	}
	if (reclog_read_file(t->path, &log, err, sizeof err) != 0) {
		fprintf(stderr, "%s: %s\n", t->path, err);
		exit(99);
	}
	unlink(t->path);
	return log;
}

static void w_device(struct tlog *t, uint32_t dev)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_DEVICE, t->time++);
	reclog_put_u32(&r, dev);
	reclog_put_str(&r, "Test GPU");
	reclog_put_u32(&r, 9);
	reclog_put_u32(&r, 0);
	reclog_put_u32(&r, 13000);
	put(t, &r);
}

static void w_library(struct tlog *t, const char *name, const char *version)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_LIBRARY, t->time++);
	reclog_put_str(&r, name);
	reclog_put_str(&r, version);
	reclog_put_str(&r, "/lib/x");
	put(t, &r);
}

/* A module whose image is an ELF-like string table of NAMES. */
static void w_module(struct tlog *t, uint32_t id, const char *const *names, int with_image)
{
	uint8_t image[256];
	size_t n = 0;
	struct reclog_rec r;

	image[n++] = 0x7f;
	image[n++] = '\0';
	for (; *names != NULL; names++) {
		memcpy(image + n, *names, strlen(*names) + 1);
		n += strlen(*names) + 1;
	}
	reclog_rec_begin(&r, RECLOG_MODULE, t->time++);
	reclog_put_u32(&r, id);
	reclog_put_u32(&r, with_image ? RECLOG_MODULE_IMAGE : 0);
	reclog_put_u64(&r, n);
	reclog_put_bytes(&r, image, with_image ? n : 0);
	reclog_put_str(&r, with_image ? "" : "CUPTI gave no image");
	put(t, &r);
}

/* A function whose parameters are 8-byte words, of the CUmodule MODULE
 * (0: unknown). */
static void w_function_of(struct tlog *t, uint64_t handle, uint64_t module, const char *name,
                          uint32_t nparams)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_FUNCTION, t->time++);
	reclog_put_u64(&r, handle);
	reclog_put_u64(&r, module);
	reclog_put_str(&r, name);
	reclog_put_u32(&r, nparams);
	for (uint32_t i = 0; i < nparams; i++) {
		reclog_put_u32(&r, 8 * i);
		reclog_put_u32(&r, 8);
	}
	put(t, &r);
}

static void w_function(struct tlog *t, uint64_t handle, const char *name, uint32_t nparams)
{
	w_function_of(t, handle, 0, name, nparams);
}

/* Module ID's load returned the CUmodule HANDLE. */
static void w_module_handle(struct tlog *t, uint32_t id, uint64_t handle)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_MODULE_HANDLE, t->time++);
	reclog_put_u32(&r, id);
	reclog_put_u64(&r, handle);
	put(t, &r);
}

static void w_module_unload(struct tlog *t, uint32_t id)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_MODULE_UNLOAD, t->time++);
	reclog_put_u32(&r, id);
	put(t, &r);
}

static void w_alloc(struct tlog *t, int type, uint32_t dev, uint64_t addr, uint64_t bytes)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, (uint32_t)type, t->time++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, addr);
	if (type == RECLOG_ALLOC) {
		reclog_put_u64(&r, bytes);
		reclog_put_u32(&r, 0);
	}
	put(t, &r);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A kernel: FUNC, grid (GX,1,1), block (32,1,1), NW 8-byte words W. */
static void put_kernel(struct reclog_rec *r, uint64_t func, uint32_t gx, const uint64_t *w,
                       uint32_t nw)
{
	uint8_t args[64];

	reclog_put_u64(r, func);
	reclog_put_u32(r, gx);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 32);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 1);
	for (int i = 0; i < 3; i++)
		reclog_put_u32(r, 0);
	reclog_put_u32(r, 0);
	reclog_put_u32(r, 0);
	for (uint32_t i = 0; i < nw; i++)
		put_le64(args + 8 * i, w[i]);
	reclog_put_bytes(r, args, 8 * nw);
}

static void w_kernel(struct tlog *t, uint32_t dev, uint32_t corr, uint64_t func, uint32_t gx,
                     const uint64_t *w, uint32_t nw)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_KERNEL, t->time++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 0x5000);
	reclog_put_u32(&r, corr);
	put_kernel(&r, func, gx, w, nw);
	put(t, &r);
}

static void w_memcpy(struct tlog *t, uint32_t dev, uint32_t corr, uint64_t dst, uint64_t src,
                     uint64_t bytes)
{
	struct reclog_rec r;
	uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	reclog_rec_begin(&r, RECLOG_MEMCPY, t->time++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 0x5000);
	reclog_put_u32(&r, corr);
	reclog_put_u64(&r, dst);
	reclog_put_u64(&r, src);
	reclog_put_u64(&r, bytes);
	reclog_put_u32(&r, RECLOG_COPY_SRC_HOST);
	reclog_put_bytes(&r, data, bytes < 8 ? bytes : 8);
	put(t, &r);
}

/* A graph of kernels in a chain: FUNCS[i] with one argument word W[i],
 * instantiated (GRAPH) or given to EXEC by cuGraphExecUpdate
 * (GRAPH_UPDATE). */
static void w_graph_as(struct tlog *t, uint32_t type, uint32_t dev, uint64_t exec,
                       const uint64_t *funcs, const uint64_t *w, uint32_t n)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, type, t->time++);
	reclog_put_u64(&r, exec);
	reclog_put_u64(&r, exec + 1);
	reclog_put_u32(&r, dev);
	reclog_put_u32(&r, n);
	reclog_put_u32(&r, n ? n - 1 : 0);
	for (uint32_t i = 0; i < n; i++) {
		reclog_put_u32(&r, PLAN_NODE_KERNEL);
		put_kernel(&r, funcs[i], 4, &w[i], 1);
	}
	for (uint32_t i = 0; i + 1 < n; i++) {
		reclog_put_u32(&r, i);
		reclog_put_u32(&r, i + 1);
		reclog_put_u32(&r, 0);
		reclog_put_u32(&r, 0);
		reclog_put_u32(&r, 0);
	}
	put(t, &r);
}

static void w_graph(struct tlog *t, uint32_t dev, uint64_t exec, const uint64_t *funcs,
                    const uint64_t *w, uint32_t n)
{
	w_graph_as(t, RECLOG_GRAPH, dev, exec, funcs, w, n);
}

/* Kernel node NODE of EXEC set to FUNC, grid (GX,1,1), NW words W. */
static void w_node_set(struct tlog *t, uint32_t dev, uint64_t exec, uint32_t node, uint64_t func,
                       uint32_t gx, const uint64_t *w, uint32_t nw)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_GRAPH_NODE_SET, t->time++);
	reclog_put_u64(&r, exec);
	reclog_put_u32(&r, dev);
	reclog_put_u32(&r, node);
	put_kernel(&r, func, gx, w, nw);
	put(t, &r);
}

static void w_launch(struct tlog *t, uint32_t dev, uint64_t exec, uint32_t corr)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_GRAPH_LAUNCH, t->time++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 0x5000);
	reclog_put_u64(&r, exec);
	reclog_put_u32(&r, corr);
	put(t, &r);
}

static void w_activity(struct tlog *t, uint32_t corr, uint64_t start, uint64_t end)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_ACTIVITY, t->time++);
	reclog_put_u32(&r, corr);
	reclog_put_u32(&r, RECLOG_ACT_KERNEL);
	reclog_put_u64(&r, start);
	reclog_put_u64(&r, end);
	put(t, &r);
}

static void w_push(struct tlog *t, uint64_t thread, const char *name)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, name ? RECLOG_RANGE_PUSH : RECLOG_RANGE_POP, t->time++);
	reclog_put_u64(&r, thread);
	if (name != NULL)
		reclog_put_str(&r, name);
	put(t, &r);
}

static void w_end(struct tlog *t)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_END, t->time++);
	put(t, &r);
}

/* ---------------------------------------------------------------------- */

static int notes;

static void count_note(void *ctx, const char *msg)
{
	(void)ctx;
	printf("# note: %s\n", msg);
	notes++;
}

static int convert(struct reclog *log, const char *step, plan_t **plan,
                   struct record_summary *sum)
{
	struct record_opts o = { 0 };
	char msg[256];
	int rc;

	o.step = step;
	o.command = "python3 step.py";
	o.tool = "bcgtool test";
	o.wall_ns = 5000000;
	o.created = 1;
	o.note = count_note;
	rc = record_convert(&log, 1, &o, plan, sum, msg, sizeof msg);
	if (rc != RECORD_OK)
		printf("# record_convert: %d %s\n", rc, msg);
	return rc;
}

enum {
	F_QKV = 0x100, F_MLP = 0x200, F_ATTN = 0x300,
	ARENA = 0x7000000, ARENA_BYTES = 0x10000,
	EXEC_A = 0xA000, EXEC_B = 0xB000, EXEC_A2 = 0xA200, EXEC_B2 = 0xB200,
};

static const char *const names[] = { "qkv_kernel", "mlp_kernel", "attn_kernel", NULL };

/* The preamble of every test log: a device, libraries, the module, its
 * three functions and the arena. */
static void preamble(struct tlog *t, int with_image)
{
	w_device(t, 0);
	w_library(t, "cudart", "13.0.48");
	w_library(t, "cublas", "13.1.0.3");
	w_module(t, 7, names, with_image);
	w_function(t, F_QKV, "qkv_kernel", 1);
	w_function(t, F_MLP, "mlp_kernel", 1);
	w_function(t, F_ATTN, "attn_kernel", 2);
	w_alloc(t, RECLOG_ALLOC, 0, ARENA, ARENA_BYTES);
}

/* A breakable step as vLLM makes one: graph A, eager attention, graph B;
 * three steps with attention grids 1, 2, 3 (the KV length grows); found
 * without NVTX. */
static void test_breakable_repeat(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t fa[2] = { F_QKV, F_MLP }, wa[2] = { ARENA + 0x100, ARENA + 0x200 };
	uint64_t fb[1] = { F_MLP }, wb[1] = { 0x1234 };   /* outside every allocation */
	/* Times of graph A, attention, graph B in each step (ns). */
	uint64_t ta[3] = { 10000, 12000, 11000 }, tt[3] = { 3000, 5000, 4000 },
	         tb[3] = { 7000, 7000, 9000 };

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, fa, wa, 2);
	w_graph(&t, 0, EXEC_B, fb, wb, 1);
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t base = 1000000 * (s + 1);
		uint64_t attn[2] = { ARENA + 0x300, 17 + s };
		w_launch(&t, 0, EXEC_A, 10 * s + 1);
		w_kernel(&t, 0, 10 * s + 2, F_ATTN, s + 1, attn, 2);
		w_launch(&t, 0, EXEC_B, 10 * s + 3);
		w_activity(&t, 10 * s + 1, base, base + ta[s]);
		w_activity(&t, 10 * s + 2, base + 20000, base + 20000 + tt[s]);
		w_activity(&t, 10 * s + 3, base + 30000, base + 30000 + tb[s]);
	}
	w_end(&t);
	log = tlog_close(&t, 0);

	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "breakable: converts");
	if (plan == NULL) {
		reclog_free(log);
		return;
	}
	is_int(plan_get_origin(plan), PLAN_ORIGIN_RECORDED, "breakable: origin recorded");
	is_int(plan_count_variants(plan), 1, "breakable: one variant (grids of breaks vary)");
	const struct plan_variant *v = plan_get_variant(plan, 0);
	is_int(v->tokens, 1, "breakable: variant number 1");
	is_int(v->seen, 3, "breakable: seen 3 times");
	is_str(v->label, "repeat", "breakable: label says how steps were found");
	is_int(v->mode, PLAN_MODE_BREAKABLE, "breakable: mode breakable");
	/* The step: from A's start to B's end; 30000 + tb - 0: 37000,
	 * 37000, 39000: median 37000. */
	is_u64(v->recorded_ns, 37000, "breakable: step time is the median span");
	is_int(v->nitems, 3, "breakable: segment, break, segment");
	is_int(v->items[0].kind, PLAN_ITEM_SEGMENT, "item 0 is a segment");
	is_int(v->items[1].kind, PLAN_ITEM_BREAK, "item 1 is a break");
	is_int(v->items[2].kind, PLAN_ITEM_SEGMENT, "item 2 is a segment");
	is_int(sum.segments, 2, "summary: two segments");
	is_int(sum.breaks, 1, "summary: one break");
	is_u64(sum.steps, 3, "summary: three steps");

	const struct plan_segment *sa = plan_get_segment(plan, v->items[0].index);
	const struct plan_segment *sb = plan_get_segment(plan, v->items[2].index);
	is_int(sa->nnodes, 2, "segment A has two nodes");
	is_str(sa->nodes[0].kernel, "qkv_kernel", "segment A node 0 is qkv");
	is_int(sa->nedges, 1, "segment A has one edge");
	is_u64(sa->recorded_ns, 11000, "segment A: median of 10000, 12000, 11000");
	is_u64(sb->recorded_ns, 7000, "segment B: median of 7000, 7000, 9000");
	ok(sa->fingerprint == plan_fingerprint_recorded(plan, sa), "segment A's fingerprint is its own");

	const struct plan_launch *la = plan_get_launch(plan, sa->nodes[0].launch);
	ok(la != NULL, "node 0 names its launch");
	if (la != NULL) {
		is_int(la->type, PLAN_NODE_KERNEL, "the launch is a kernel");
		is_str(plan_get_function(plan, la->function)->name, "qkv_kernel",
		       "the launch's function");
		is_int(la->npatches, 1, "one word points into the arena");
		is_int(la->patches[0].byte, 0, "the patch is word 0");
		is_int(la->patches[0].addr.offset, 0x100, "at arena offset 0x100");
		is_int(plan_get_alloc(plan, la->patches[0].addr.alloc)->address, ARENA,
		       "in the arena's allocation");
		is_int(plan_get_alloc(plan, la->patches[0].addr.alloc)->bytes, ARENA_BYTES,
		       "the allocation's size");
	}
	const struct plan_launch *lb = plan_get_launch(plan, sb->nodes[0].launch);
	is_int(lb != NULL ? lb->npatches : 99, 0, "a word outside every allocation is no patch");

	const struct plan_breakpoint *bp = plan_get_breakpoint(plan, v->items[1].index);
	is_int(bp->reason, PLAN_BREAK_RECORDED, "the break is recorded eager work");
	is_int(bp->op, PLAN_NONE, "the break has no op");
	is_int(bp->launch_count, 1, "the break holds one launch");
	is_str(bp->detail, "1 eager op, 3 launch shapes over 3 steps: attn_kernel",
	       "the break's detail: its three grids are three launch shapes");
	is_u64(bp->recorded_ns, 4000, "the break: median of 3000, 5000, 4000");
	const struct plan_launch *lt = plan_get_launch(plan, bp->launch_first);
	if (lt != NULL) {
		is_int(lt->grid[0], 3, "the break's launch is the last step's (grid 3)");
		is_int(lt->nargs, 16, "its parameter bytes");
		is_int(lt->npatches, 1, "its arena word");
		is_int(lt->patches[0].addr.offset, 0x300, "at offset 0x300");
	} else {
		ok(0, "the break's launch exists");
	}
	is_int(plan_count_modules(plan), 1, "one module");
	ok(plan_get_module(plan, 0)->flags & PLAN_MODULE_IMAGE, "its image is kept");
	is_int(plan_count_allocs(plan), 1, "one allocation (the arena)");

	const struct plan_recording *rec = plan_get_recording(plan);
	is_str(rec->step_rule, "repeat", "recording: steps found by repetition");
	is_int(rec->pid, 4242, "recording: the pid");
	is_u64(rec->steps, 3, "recording: three steps");
	is_str(rec->command, "python3 step.py", "recording: the command");
	ok(strstr(rec->libraries, "cublas 13.1.0.3") != NULL, "recording: cuBLAS seen");
	const struct plan_meta *m = plan_get_meta(plan);
	is_int(m->cuda_runtime, 13000, "meta: runtime 13.0");
	is_int(m->cublas, 130100, "meta: cuBLAS 13.1.0");
	is_str(m->device, "Test GPU", "meta: the device");
	is_int(m->cc_major, 9, "meta: compute capability 9");
	plan_free(plan);
	reclog_free(log);
}

/* Two batch sizes, each its own graphs, in the order 1 2 1 1 2: two
 * variants, seen 3 and 2, told apart without NVTX. */
static void test_batch_sizes(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f1[1] = { F_QKV }, f2[2] = { F_QKV, F_QKV }, w[2] = { ARENA, ARENA + 8 };
	int order[5] = { 1, 2, 1, 1, 2 };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, f1, w, 1);
	w_graph(&t, 0, EXEC_B, f1, w, 1);
	w_graph(&t, 0, EXEC_A2, f2, w, 2);
	w_graph(&t, 0, EXEC_B2, f1, w, 1);
	for (int s = 0; s < 5; s++) {
		uint64_t attn[2] = { ARENA, 5 };
		w_launch(&t, 0, order[s] == 1 ? EXEC_A : EXEC_A2, corr++);
		w_kernel(&t, 0, corr++, F_ATTN, 1, attn, 2);
		w_launch(&t, 0, order[s] == 1 ? EXEC_B : EXEC_B2, corr++);
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "sizes: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "sizes: two variants");
		is_int(plan_get_variant(plan, 0)->seen, 3, "sizes: the first seen 3 times");
		is_int(plan_get_variant(plan, 1)->seen, 2, "sizes: the second seen 2 times");
		is_int(plan_get_variant(plan, 1)->tokens, 2, "sizes: numbered in order");
		is_int(plan_get_segment(plan, plan_get_variant(plan, 1)->items[0].index)->nnodes, 2,
		       "sizes: the second variant's first graph has two nodes");
		is_int(plan_get_variant(plan, 0)->recorded_ns, 0, "sizes: no activity, no time");
		is_u64(sum.steps, 5, "sizes: five steps");
	}
	plan_free(plan);
	reclog_free(log);
}

/* Two batch sizes whose graphs hold the same kernels alike: still two
 * variants (their graphs are not the same graphs). */
static void test_alike_graphs(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { ARENA };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_graph(&t, 0, EXEC_B, f, w, 1);
	for (int s = 0; s < 6; s++)
		w_launch(&t, 0, s < 3 ? EXEC_A : EXEC_B, corr++);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "alike: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "alike: two variants");
		is_int(plan_get_variant(plan, 0)->seen, 3, "alike: the first seen 3 times");
		is_int(plan_get_variant(plan, 1)->seen, 3, "alike: the second seen 3 times");
	}
	plan_free(plan);
	reclog_free(log);
}

/* One graph sequence, breaks whose launches differ: the first step's
 * break runs a copy and another kernel first (a module loaded, a
 * library's first call), steps 2 and 4 another kernel: one variant of 5
 * steps, its break the last step's launches, 3 launch shapes over 5
 * steps in its detail. */
static void test_break_contents(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t fa[1] = { F_QKV }, fb[1] = { F_MLP }, w[1] = { ARENA };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, fa, w, 1);
	w_graph(&t, 0, EXEC_B, fb, w, 1);
	for (int s = 0; s < 5; s++) {
		uint64_t attn[2] = { ARENA + 0x40, (uint64_t)s };
		w_launch(&t, 0, EXEC_A, corr++);
		if (s == 0) {
			w_memcpy(&t, 0, corr++, ARENA + 0x80, 0x7ffff000, 8);
			w_kernel(&t, 0, corr++, F_MLP, 1, attn, 1);
		}
		w_kernel(&t, 0, corr++, s == 1 || s == 3 ? F_QKV : F_ATTN, 2, attn, 2);
		w_launch(&t, 0, EXEC_B, corr++);
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "break contents: converts");
	if (plan != NULL) {
		const struct plan_variant *v = plan_get_variant(plan, 0);
		is_int(plan_count_variants(plan), 1, "break contents: one variant");
		is_int(v->seen, 5, "break contents: seen 5 times");
		is_int(v->nitems, 3, "break contents: segment, break, segment");
		is_int(v->mode, PLAN_MODE_BREAKABLE, "break contents: breakable");
		const struct plan_breakpoint *b = plan_get_breakpoint(plan, v->items[1].index);
		is_int(b->launch_count, 1, "break contents: the last step's one launch");
		const struct plan_launch *l = plan_get_launch(plan, b->launch_first);
		is_str(l != NULL ? plan_get_function(plan, l->function)->name : "", "attn_kernel",
		       "break contents: the last step's kernel");
		is_str(b->detail, "1 eager op, 3 launch shapes over 5 steps: attn_kernel",
		       "break contents: three launch shapes counted");
	}
	plan_free(plan);
	reclog_free(log);
}

/* The same graphs in two orders, A B and B A, each with a break between:
 * two variants (a step's shape is its sequence of graphs). NVTX marks
 * the steps (the repetition rule would cut them otherwise). */
static void test_graph_order(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t fa[1] = { F_QKV }, fb[1] = { F_MLP }, w[1] = { ARENA };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, fa, w, 1);
	w_graph(&t, 0, EXEC_B, fb, w, 1);
	for (int s = 0; s < 5; s++) {
		uint64_t attn[2] = { ARENA + 0x40, 0 };
		int ab = s != 1 && s != 4;
		w_push(&t, 1, "step");
		w_launch(&t, 0, ab ? EXEC_A : EXEC_B, corr++);
		w_kernel(&t, 0, corr++, F_ATTN, 2, attn, 2);
		w_launch(&t, 0, ab ? EXEC_B : EXEC_A, corr++);
		w_push(&t, 1, NULL);
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, "step", &plan, &sum), RECORD_OK, "graph order: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "graph order: two variants");
		is_int(plan_get_variant(plan, 0)->seen, 3, "graph order: A B seen 3 times");
		is_int(plan_get_variant(plan, 1)->seen, 2, "graph order: B A seen 2 times");
		const struct plan_segment *s =
			plan_get_segment(plan, plan_get_variant(plan, 1)->items[0].index);
		is_str(s->nodes[0].kernel, "mlp_kernel", "graph order: the second starts with B");
	}
	plan_free(plan);
	reclog_free(log);
}

/* Steps marked by NVTX, with eager work before the first graph (an input
 * copy) inside the step, work outside every step, a nested range of
 * another name and a second thread's ranges. */
static void test_nvtx(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { ARENA };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_graph(&t, 0, EXEC_B, f, w, 1);
	/* Warm-up outside any step. */
	w_launch(&t, 0, EXEC_A, corr++);
	for (int s = 0; s < 4; s++) {
		uint64_t attn[2] = { ARENA + 0x40, 0 };
		w_push(&t, 1, "step");
		w_push(&t, 2, "other thread");
		w_memcpy(&t, 0, corr++, ARENA + 0x80, 0x7ffff000, 8);
		w_launch(&t, 0, EXEC_A, corr++);
		w_push(&t, 1, "attention");
		w_kernel(&t, 0, corr++, F_ATTN, 2, attn, 2);
		w_push(&t, 1, NULL);
		w_launch(&t, 0, EXEC_B, corr++);
		w_push(&t, 2, NULL);
		w_push(&t, 1, NULL);
		w_launch(&t, 0, EXEC_B, corr++);   /* after the step: not in it */
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, "step", &plan, &sum), RECORD_OK, "nvtx: converts");
	if (plan != NULL) {
		const struct plan_variant *v = plan_get_variant(plan, 0);
		is_int(plan_count_variants(plan), 1, "nvtx: one variant");
		is_int(v->seen, 4, "nvtx: four steps");
		is_str(v->label, "step", "nvtx: labelled by the range");
		is_int(v->nitems, 4, "nvtx: break, segment, break, segment");
		is_int(v->items[0].kind, PLAN_ITEM_BREAK, "nvtx: the input copy is a break");
		const struct plan_breakpoint *b = plan_get_breakpoint(plan, v->items[0].index);
		const struct plan_launch *l = plan_get_launch(plan, b->launch_first);
		is_int(l->type, PLAN_NODE_MEMCPY, "nvtx: the break's launch is a copy");
		is_int(l->dst.alloc, 0, "nvtx: into the arena");
		is_int(l->dst.offset, 0x80, "nvtx: at offset 0x80");
		is_int(l->src.alloc, PLAN_NONE, "nvtx: from host memory");
		is_u64(l->src.offset, 0x7ffff000, "nvtx: the raw host address");
		is_int(l->ndata, 8, "nvtx: the host bytes kept");
		is_str(plan_get_recording(plan)->step_rule, "nvtx:step", "nvtx: the step rule");
		ok(plan_get_recording(plan)->flags & PLAN_RECORD_NVTX_STEP, "nvtx: flag set");
	}
	plan_free(plan);
	plan = NULL;
	is_int(convert(log, "decode", &plan, &sum), RECORD_NO_STEPS,
	       "nvtx: a step name no range has");
	ok(plan == NULL, "nvtx: no plan then");
	reclog_free(log);
}

/* One graph a step, nothing eager: a full-graph variant; on two devices. */
static void test_full_two_devices(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { ARENA };

	tlog_open(&t);
	preamble(&t, 1);
	w_device(&t, 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_graph(&t, 1, EXEC_B, f, w, 1);
	for (uint32_t s = 0; s < 3; s++) {
		w_launch(&t, 0, EXEC_A, 2 * s + 1);
		w_launch(&t, 1, EXEC_B, 2 * s + 2);
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "full: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "full: one variant per device");
		is_int(plan_get_variant(plan, 0)->device, 0, "full: device 0");
		is_int(plan_get_variant(plan, 1)->device, 1, "full: device 1");
		is_int(plan_get_variant(plan, 0)->mode, PLAN_MODE_FULL, "full: mode full");
		is_int(plan_get_variant(plan, 0)->nitems, 1, "full: one segment");
		is_int(plan_get_variant(plan, 1)->seen, 3, "full: device 1 seen 3 times");
		is_int(sum.devices, 2, "full: two devices");
		/* Device 1 has no allocation at ARENA: its word is no patch. */
		const struct plan_segment *s =
			plan_get_segment(plan, plan_get_variant(plan, 1)->items[0].index);
		is_int(plan_get_launch(plan, s->nodes[0].launch)->npatches, 0,
		       "full: allocations are per device");
		void *buf = NULL;
		size_t len = 0;
		struct plan_diag d = { 0 };
		is_int(plan_write_memory(plan, &buf, &len, &d), 0,
		       "full: a plan of full-graph steps is written (%s)", d.message);
		free(buf);
	}
	plan_free(plan);
	reclog_free(log);
}

/* An engine that keeps one executable graph and updates it with the
 * graph of another capture (cuGraphExecUpdate), then back: the launches
 * after the update ran the new parameters, a distinct step shape; back
 * to the first content is the first graph again. Launches 1 2 3 of the
 * first content, 4 5 of the second, 6 of the first: variants seen 4 and
 * 2. */
static void test_exec_update(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_QKV }, w1[1] = { ARENA + 0x100 }, w2[1] = { ARENA + 0x200 };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_A, f, w1, 1);
	for (int s = 0; s < 3; s++)
		w_launch(&t, 0, EXEC_A, corr++);
	w_graph_as(&t, RECLOG_GRAPH_UPDATE, 0, EXEC_A, f, w2, 1);
	for (int s = 0; s < 2; s++)
		w_launch(&t, 0, EXEC_A, corr++);
	w_graph_as(&t, RECLOG_GRAPH_UPDATE, 0, EXEC_A, f, w1, 1);
	w_launch(&t, 0, EXEC_A, corr++);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "exec update: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "exec update: two step shapes");
		is_int(plan_get_variant(plan, 0)->seen, 4, "exec update: the first content 4 times");
		is_int(plan_get_variant(plan, 1)->seen, 2, "exec update: the updated one twice");
		is_int(sum.updates, 2, "exec update: two updates followed");
		is_int(sum.segments, 2, "exec update: one segment each");
		const struct plan_segment *s0 =
			plan_get_segment(plan, plan_get_variant(plan, 0)->items[0].index);
		const struct plan_segment *s1 =
			plan_get_segment(plan, plan_get_variant(plan, 1)->items[0].index);
		const struct plan_launch *l0 = plan_get_launch(plan, s0->nodes[0].launch);
		const struct plan_launch *l1 = plan_get_launch(plan, s1->nodes[0].launch);
		is_int(l0->patches[0].addr.offset, 0x100, "exec update: before, the word at 0x100");
		is_int(l1->patches[0].addr.offset, 0x200, "exec update: after, the word at 0x200");
		ok(s0->fingerprint != s1->fingerprint,
		   "exec update: the fingerprints differ (another buffer)");
	}
	plan_free(plan);
	reclog_free(log);
}

/* One kernel node of an executable set anew (cuGraphExecKernelNodeSetParams):
 * node 1 of a two-node graph becomes attention with grid 7 and two
 * words; a set whose node the recorder could not tell, and one of a
 * graph never instantiated, are noted and change nothing. */
static void test_node_set(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[2] = { F_QKV, F_MLP }, w[2] = { ARENA, ARENA + 8 };
	uint64_t attn[2] = { ARENA + 0x300, 5 };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_graph(&t, 0, EXEC_B, f, w, 2);
	w_launch(&t, 0, EXEC_B, corr++);
	w_launch(&t, 0, EXEC_B, corr++);
	w_node_set(&t, 0, EXEC_B, 1, F_ATTN, 7, attn, 2);
	w_launch(&t, 0, EXEC_B, corr++);
	w_node_set(&t, 0, EXEC_B, UINT32_MAX, F_QKV, 9, attn, 1);
	w_node_set(&t, 0, EXEC_A, 0, F_QKV, 9, attn, 1);
	w_launch(&t, 0, EXEC_B, corr++);
	w_launch(&t, 0, EXEC_B, corr++);
	w_end(&t);
	log = tlog_close(&t, 0);
	notes = 0;
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "node set: converts");
	is_int(notes, 2, "node set: the two sets not followed are noted");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "node set: two step shapes");
		is_int(plan_get_variant(plan, 0)->seen, 2, "node set: before, 2 steps");
		is_int(plan_get_variant(plan, 1)->seen, 3, "node set: after, 3 steps");
		is_int(sum.updates, 1, "node set: one update followed");
		const struct plan_segment *s =
			plan_get_segment(plan, plan_get_variant(plan, 1)->items[0].index);
		is_int(s->nnodes, 2, "node set: two nodes still");
		is_int(s->nedges, 1, "node set: the edge kept");
		is_str(s->nodes[0].kernel, "qkv_kernel", "node set: node 0 as it was");
		is_str(s->nodes[1].kernel, "attn_kernel", "node set: node 1 is attention");
		is_int(s->nodes[1].grid[0], 7, "node set: with its grid");
		const struct plan_launch *l = plan_get_launch(plan, s->nodes[1].launch);
		is_int(l->nargs, 16, "node set: its two words");
		is_int(l->npatches, 1, "node set: one of them an address");
		is_int(l->patches[0].addr.offset, 0x300, "node set: at arena offset 0x300");
		const struct plan_segment *s0 =
			plan_get_segment(plan, plan_get_variant(plan, 0)->items[0].index);
		is_str(s0->nodes[1].kernel, "mlp_kernel", "node set: before, node 1 was mlp");
	}
	plan_free(plan);
	reclog_free(log);
}

/* A breakable step on each of two devices, inside one NVTX range that
 * drives both (one thread, as a process with a GPU a layer group does),
 * each device with its own allocation at the same address: one variant
 * per device, each with its device's segments, break and allocation. */
static void test_two_devices_breakable(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_QKV }, w[1] = { ARENA + 0x10 };
	uint32_t corr = 1;

	tlog_open(&t);
	preamble(&t, 1);
	w_device(&t, 1);
	w_alloc(&t, RECLOG_ALLOC, 1, ARENA, ARENA_BYTES);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_graph(&t, 0, EXEC_B, f, w, 1);
	w_graph(&t, 1, EXEC_A, f, w, 1);   /* the same handle on another device */
	w_graph(&t, 1, EXEC_B2, f, w, 1);
	for (int s = 0; s < 3; s++) {
		uint64_t a0[2] = { ARENA + 0x20, 0 }, a1[2] = { ARENA + 0x40, 1 };
		w_push(&t, 1, "step");
		for (uint32_t d = 0; d < 2; d++) {
			w_launch(&t, d, EXEC_A, corr++);
			w_kernel(&t, d, corr++, F_ATTN, 2, d ? a1 : a0, 2);
			w_launch(&t, d, d ? EXEC_B2 : EXEC_B, corr++);
		}
		w_push(&t, 1, NULL);
	}
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, "step", &plan, &sum), RECORD_OK, "two devices: converts");
	if (plan != NULL) {
		is_int(plan_count_variants(plan), 2, "two devices: a variant per device");
		is_int(sum.devices, 2, "two devices: counted");
		is_int(plan_count_allocs(plan), 2, "two devices: an allocation each");
		for (uint32_t d = 0; d < 2 && plan_count_variants(plan) == 2; d++) {
			const struct plan_variant *v = plan_get_variant(plan, d);
			is_int(v->device, d, "two devices: variant %u on device %u", d + 1, d);
			is_int(v->seen, 3, "two devices: variant %u seen 3 times", d + 1);
			is_int(v->nitems, 3, "two devices: variant %u segment, break, segment", d + 1);
			is_int(v->mode, PLAN_MODE_BREAKABLE, "two devices: variant %u breakable", d + 1);
			const struct plan_breakpoint *b = plan_get_breakpoint(plan, v->items[1].index);
			const struct plan_launch *l = plan_get_launch(plan, b->launch_first);
			is_int(b->launch_count, 1, "two devices: its break has its own launch");
			is_int(l->patches[0].addr.offset, d ? 0x40 : 0x20,
			       "two devices: the break's word on device %u", d);
			is_int(plan_get_alloc(plan, l->patches[0].addr.alloc)->device, d,
			       "two devices: in device %u's allocation", d);
			const struct plan_segment *sg = plan_get_segment(plan, v->items[0].index);
			const struct plan_launch *ls = plan_get_launch(plan, sg->nodes[0].launch);
			is_int(plan_get_alloc(plan, ls->patches[0].addr.alloc)->device, d,
			       "two devices: the graph's word in device %u's allocation", d);
		}
		void *buf = NULL;
		size_t len = 0;
		struct plan_diag d = { 0 };
		is_int(plan_write_memory(plan, &buf, &len, &d), 0,
		       "two devices: the plan is written (%s)", d.message);
		free(buf);
	}
	plan_free(plan);
	reclog_free(log);
}

/* Faults: no GPU work; eager work only; a module without its image; a
 * freed allocation; a log cut short. */
static void test_faults(void)
{
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { ARENA + 4 };

	tlog_open(&t);
	w_device(&t, 0);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_NO_GPU_WORK, "faults: no GPU work");
	reclog_free(log);

	tlog_open(&t);
	preamble(&t, 1);
	w_kernel(&t, 0, 1, F_MLP, 1, w, 1);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_NO_GRAPHS, "faults: nothing captured");
	reclog_free(log);

	tlog_open(&t);
	preamble(&t, 0);
	w_alloc(&t, RECLOG_FREE, 0, ARENA, 0);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_launch(&t, 0, EXEC_A, 1);
	w_launch(&t, 0, EXEC_A, 2);
	w_launch(&t, 0, EXEC_A, 3);
	w_end(&t);
	notes = 0;
	log = tlog_close(&t, 8);   /* the end mark cut in half */
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "faults: a cut log converts");
	ok(notes >= 1, "faults: and says it was cut");
	if (plan != NULL) {
		const struct plan_module *m = plan_get_module(plan, 0);
		ok(m != NULL && !(m->flags & PLAN_MODULE_IMAGE), "faults: module without image");
		ok(m != NULL && m->note[0] != '\0', "faults: with a note saying why");
		is_int(sum.modules_without_image, 1, "faults: counted");
		is_int(plan_count_allocs(plan), 0, "faults: a freed allocation is not kept");
		is_int(plan_get_variant(plan, 0)->seen, 3, "faults: one graph thrice: 3 steps");
	}
	plan_free(plan);
	reclog_free(log);
}

/* A module image that does not hold a function's name (compressed):
 * the newest module loaded before the function, kept, with a note. */
static void test_module_by_order(void)
{
	static const char *const other[] = { "compressed", NULL };
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { 0 };

	tlog_open(&t);
	w_device(&t, 0);
	w_module(&t, 3, names, 1);
	w_module(&t, 4, other, 1);
	w_function(&t, F_MLP, "not_in_any_image", 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_launch(&t, 0, EXEC_A, 1);
	w_end(&t);
	log = tlog_close(&t, 0);
	notes = 0;
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "by order: converts");
	if (plan != NULL) {
		const struct plan_function *fn = plan_get_function(plan, 0);
		const struct plan_module *m = fn != NULL ? plan_get_module(plan, fn->module) : NULL;
		ok(m != NULL && strcmp(m->name, "module 4") == 0, "by order: the newest module");
		ok(m != NULL && (m->flags & PLAN_MODULE_IMAGE), "by order: kept, replayable");
		ok(notes >= 1, "by order: said in a note");
		is_int(plan_count_modules(plan), 1, "by order: only modules in use are kept");
	}
	plan_free(plan);
	reclog_free(log);
}

/* The name of the module of the plan's function FI ("" when none). */
static const char *module_of(const plan_t *plan, uint32_t fi)
{
	const struct plan_function *fn = plan_get_function(plan, fi);
	const struct plan_module *m = fn != NULL ? plan_get_module(plan, fn->module) : NULL;

	return m != NULL ? m->name : "";
}

/* Two modules hold a kernel of one name (a compiler's tuning candidates,
 * both loaded before the launch): the function's CUmodule, linked to the
 * older one by its load, names it; a log without the links keeps the
 * newest by name; a link to a module whose image lacks the name is
 * passed over. */
static void test_module_by_handle(void)
{
	static const char *const poi[] = { "triton_poi_fused_0", "m30", NULL };
	static const char *const poi31[] = { "triton_poi_fused_0", "m31", NULL };
	enum { MOD_30 = 0xC0DE30, MOD_31 = 0xC0DE31 };
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { 0 };

	for (int linked = 1; linked >= 0; linked--) {
		tlog_open(&t);
		w_device(&t, 0);
		w_module(&t, 30, poi, 1);
		if (linked)
			w_module_handle(&t, 30, MOD_30);
		w_module(&t, 31, poi31, 1);
		if (linked)
			w_module_handle(&t, 31, MOD_31);
		w_function_of(&t, F_MLP, MOD_30, "triton_poi_fused_0", 1);
		w_graph(&t, 0, EXEC_A, f, w, 1);
		w_launch(&t, 0, EXEC_A, 1);
		w_end(&t);
		log = tlog_close(&t, 0);
		is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "by handle: converts (%s)",
		       linked ? "linked" : "an older log");
		if (plan != NULL) {
			is_str(module_of(plan, 0), linked ? "module 30" : "module 31",
			       linked ? "by handle: the module its CUmodule names, not the newest"
			              : "by handle: an older log: the newest holding the name");
			is_int(plan_count_modules(plan), 1, "by handle: one module kept (%s)",
			       linked ? "linked" : "an older log");
		}
		plan_free(plan);
		plan = NULL;
		reclog_free(log);
	}

	/* The linked module's image lacks the name: by name, as before. */
	tlog_open(&t);
	w_device(&t, 0);
	w_module(&t, 30, names, 1);
	w_module_handle(&t, 30, MOD_30);
	w_module(&t, 31, poi31, 1);
	w_module_handle(&t, 31, MOD_31);
	w_module(&t, 32, names, 1);
	w_function_of(&t, F_MLP, MOD_30, "triton_poi_fused_0", 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_launch(&t, 0, EXEC_A, 1);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "by handle: a link without the name");
	if (plan != NULL)
		is_str(module_of(plan, 0), "module 31", "by handle: falls back to the name");
	plan_free(plan);
	reclog_free(log);
}

/* A module unloaded and its CUmodule handle given to a newer module: a
 * function described again after the reuse comes from the newer one, not
 * from the newest holding its name. */
static void test_module_unload_reuse(void)
{
	/* Images alike are one module of the plan: each its own. */
	static const char *const poi40[] = { "triton_poi_fused_0", "m40", NULL };
	static const char *const poi41[] = { "triton_poi_fused_0", "m41", NULL };
	static const char *const poi42[] = { "triton_poi_fused_0", "m42", NULL };
	enum { MOD = 0xC0DE00, MOD_OTHER = 0xC0DE99 };
	struct tlog t;
	struct reclog *log;
	struct record_summary sum;
	plan_t *plan = NULL;
	uint64_t f[1] = { F_MLP }, w[1] = { 0 };
	int from40 = 0, from41 = 0, from42 = 0;

	tlog_open(&t);
	w_device(&t, 0);
	w_module(&t, 40, poi40, 1);
	w_module_handle(&t, 40, MOD);
	w_function_of(&t, F_MLP, MOD, "triton_poi_fused_0", 1);
	w_graph(&t, 0, EXEC_A, f, w, 1);
	w_launch(&t, 0, EXEC_A, 1);
	w_module_unload(&t, 40);
	w_module(&t, 41, poi41, 1);
	w_module_handle(&t, 41, MOD);
	w_module(&t, 42, poi42, 1);
	w_module_handle(&t, 42, MOD_OTHER);
	w_function_of(&t, F_MLP, MOD, "triton_poi_fused_0", 1);
	w_graph(&t, 0, EXEC_B, f, w, 1);
	w_launch(&t, 0, EXEC_B, 2);
	w_end(&t);
	log = tlog_close(&t, 0);
	is_int(convert(log, NULL, &plan, &sum), RECORD_OK, "unload: converts");
	if (plan != NULL) {
		is_int(plan_count_functions(plan), 2, "unload: the function twice, one a module");
		for (uint32_t i = 0; i < plan_count_functions(plan); i++) {
			from40 += strcmp(module_of(plan, i), "module 40") == 0;
			from41 += strcmp(module_of(plan, i), "module 41") == 0;
			from42 += strcmp(module_of(plan, i), "module 42") == 0;
		}
		is_int(from40, 1, "unload: before the unload, the first module");
		is_int(from41, 1, "unload: after it, the module the handle names now");
		is_int(from42, 0, "unload: not the newest holding the name");
	}
	plan_free(plan);
	reclog_free(log);
}

int main(void)
{
	test_breakable_repeat();
	test_batch_sizes();
	test_alike_graphs();
	test_break_contents();
	test_graph_order();
	test_nvtx();
	test_full_two_devices();
	test_exec_update();
	test_node_set();
	test_two_devices_breakable();
	test_faults();
	test_module_by_order();
	test_module_by_handle();
	test_module_unload_reuse();
	return tap_done();
}
