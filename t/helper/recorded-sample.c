/*
 * recorded-sample.c - the small recorded plan of recorded-sample.h.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "recorded-sample.h"

static const char rs_ptx[] =
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .entry k_write(\n"
	"\t.param .u64 k_write_dst,\n"
	"\t.param .u32 k_write_n,\n"
	"\t.param .u32 k_write_base\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<8>;\n"
	"\t.reg .b64 %rd<5>;\n"
	"\tgriddepcontrol.launch_dependents;\n"
	"\tld.param.u64 %rd1, [k_write_dst];\n"
	"\tld.param.u32 %r1, [k_write_n];\n"
	"\tld.param.u32 %r2, [k_write_base];\n"
	"\tmov.u32 %r3, %ctaid.x;\n"
	"\tmov.u32 %r4, %ntid.x;\n"
	"\tmov.u32 %r5, %tid.x;\n"
	"\tmad.lo.s32 %r6, %r3, %r4, %r5;\n"
	"\tsetp.ge.u32 %p1, %r6, %r1;\n"
	"\t@%p1 bra DONE;\n"
	"\tadd.s32 %r7, %r2, %r6;\n"
	"\tcvta.to.global.u64 %rd2, %rd1;\n"
	"\tmul.wide.u32 %rd3, %r6, 4;\n"
	"\tadd.s64 %rd4, %rd2, %rd3;\n"
	"\tst.global.u32 [%rd4], %r7;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n"
	"\n"
	".visible .entry k_read(\n"
	"\t.param .align 8 .b8 k_read_s[16],\n"
	"\t.param .u64 k_read_out\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<10>;\n"
	"\t.reg .b64 %rd<8>;\n"
	"\tgriddepcontrol.wait;\n"
	"\tld.param.u64 %rd1, [k_read_s];\n"
	"\tld.param.u32 %r1, [k_read_s+8];\n"
	"\tld.param.u32 %r2, [k_read_s+12];\n"
	"\tld.param.u64 %rd2, [k_read_out];\n"
	"\tmov.u32 %r3, %ctaid.x;\n"
	"\tmov.u32 %r4, %ntid.x;\n"
	"\tmov.u32 %r5, %tid.x;\n"
	"\tmad.lo.s32 %r6, %r3, %r4, %r5;\n"
	"\tsetp.ge.u32 %p1, %r6, %r1;\n"
	"\t@%p1 bra DONE;\n"
	"\tcvta.to.global.u64 %rd3, %rd1;\n"
	"\tmul.wide.u32 %rd4, %r6, 4;\n"
	"\tadd.s64 %rd5, %rd3, %rd4;\n"
	"\tld.global.u32 %r7, [%rd5];\n"
	"\tmul.lo.s32 %r8, %r7, %r2;\n"
	"\tadd.s32 %r9, %r8, 1;\n"
	"\tcvta.to.global.u64 %rd6, %rd2;\n"
	"\tadd.s64 %rd7, %rd6, %rd4;\n"
	"\tst.global.u32 [%rd7], %r9;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n"
	"\n"
	".visible .entry k_indirect(\n"
	"\t.param .u64 k_indirect_table,\n"
	"\t.param .u32 k_indirect_n,\n"
	"\t.param .u64 k_indirect_out\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<8>;\n"
	"\t.reg .b64 %rd<10>;\n"
	"\tld.param.u64 %rd1, [k_indirect_table];\n"
	"\tld.param.u32 %r1, [k_indirect_n];\n"
	"\tld.param.u64 %rd2, [k_indirect_out];\n"
	"\tmov.u32 %r3, %ctaid.x;\n"
	"\tmov.u32 %r4, %ntid.x;\n"
	"\tmov.u32 %r5, %tid.x;\n"
	"\tmad.lo.s32 %r6, %r3, %r4, %r5;\n"
	"\tsetp.ge.u32 %p1, %r6, %r1;\n"
	"\t@%p1 bra DONE;\n"
	"\tcvta.to.global.u64 %rd3, %rd1;\n"
	"\tld.global.u64 %rd4, [%rd3];\n"
	"\tcvta.to.global.u64 %rd5, %rd4;\n"
	"\tmul.wide.u32 %rd6, %r6, 4;\n"
	"\tadd.s64 %rd7, %rd5, %rd6;\n"
	"\tld.global.u32 %r7, [%rd7];\n"
	"\tcvta.to.global.u64 %rd8, %rd2;\n"
	"\tadd.s64 %rd9, %rd8, %rd6;\n"
	"\tst.global.u32 [%rd9], %r7;\n"
	"DONE:\n"
	"\tret;\n"
	"}\n";

#define RS_TRY(call)                                                            \
	do {                                                                    \
		struct plan_diag d_ = { 0 };                                    \
		if ((call) != 0) {                                              \
			snprintf(msg, len, "%s: %s", #call, d_.message);        \
			goto fail;                                              \
		}                                                               \
	} while (0)

/* A kernel launch of one block of N threads. */
static void rs_kernel(struct plan_launch *l, uint32_t fn, const uint8_t *args, uint32_t nargs,
                      const struct plan_patch *patches, uint32_t npatches, uint32_t flags)
{
	memset(l, 0, sizeof *l);
	l->type = PLAN_NODE_KERNEL;
	l->function = fn;
	l->grid[0] = l->grid[1] = l->grid[2] = 1;
	l->block[0] = RS_N;
	l->block[1] = l->block[2] = 1;
	l->flags = flags;
	l->nargs = nargs;
	l->args = args;
	l->npatches = npatches;
	l->patches = patches;
	l->dst.alloc = l->src.alloc = PLAN_NONE;
}

/* The argument bytes of k_write(DST, N, BASE), DST at its recorded
 * address. */
static void rs_write_args(uint8_t *b, uint64_t dst, uint32_t base)
{
	uint32_t n = RS_N;
	memcpy(b, &dst, 8);
	memcpy(b + 8, &n, 4);
	memcpy(b + 12, &base, 4);
}

static void rs_read_args(uint8_t *b, uint64_t src, uint32_t mul, uint64_t out)
{
	uint32_t n = RS_N;
	memcpy(b, &src, 8);
	memcpy(b + 8, &n, 4);
	memcpy(b + 12, &mul, 4);
	memcpy(b + 16, &out, 8);
}

plan_t *rs_build(const struct rs_opts *o, char *msg, size_t len)
{
	plan_t *p = plan_new();
	uint64_t addr[RS_NALLOCS];
	uint8_t table[RS_BYTES], hostsrc[RS_N * 4];
	uint8_t a_w0[16], a_r0[24], a_w1[16], a_r1[24], a_ind[24];
	char ptx[sizeof rs_ptx + 16];
	uint32_t mod, f_write, f_read, f_ind, li, l0 = 0, lb;

	if (p == NULL) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	for (int i = 0; i < RS_NALLOCS; i++)
		addr[i] = o->base + (uint64_t)i * RS_STRIDE;
	memset(table, 0, sizeof table);
	memcpy(table, &addr[RS_A], 8);
	for (uint32_t i = 0; i < RS_N; i++) {
		uint32_t v = i * i;
		memcpy(hostsrc + 4 * i, &v, 4);
	}

	/* The foreign module: the same text for an architecture to come. */
	if (o->foreign) {
		const char *at = strstr(rs_ptx, ".target sm_90\n");
		if (at == NULL || sizeof rs_ptx + 8 > sizeof ptx) {
			snprintf(msg, len, "the PTX text has no target line");
			goto fail;
		}
		snprintf(ptx, sizeof ptx, ".version 8.6\n.target sm_100\n%s",
		         at + strlen(".target sm_90\n"));
	} else {
		memcpy(ptx, rs_ptx, sizeof rs_ptx);
	}
	RS_TRY(plan_set_meta(p, &(struct plan_meta){
		.tool = "bcgtool test", .script = "", .backend = PLAN_BACKEND_CUDA,
		.device = o->foreign ? "NVIDIA B200" : "NVIDIA H100 80GB HBM3",
		.cc_major = o->foreign ? 10 : 9, .cc_minor = 0,
		.cuda_runtime = 13000, .cuda_driver = o->foreign ? 13010 : 13000 }, &d_));
	RS_TRY(plan_set_recording(p, &(struct plan_recording){
		.command = "recorded-sample", .step_rule = "nvtx:step", .libraries = "",
		.pid = 1, .flags = PLAN_RECORD_SNAPSHOT | PLAN_RECORD_NVTX_STEP,
		.wall_ns = 1000000000, .steps = 5 }, &d_));
	RS_TRY(plan_add_module(p, &(struct plan_module){
		.name = "recorded-sample.ptx", .hash = XXH64(ptx, strlen(ptx) + 1, 0),
		.bytes = strlen(ptx) + 1, .flags = o->no_image ? 0 : PLAN_MODULE_IMAGE,
		.note = o->no_image ? "not kept for the test" : "",
		.image = o->no_image ? NULL : ptx }, &mod, &d_));
	RS_TRY(plan_add_function(p, &(struct plan_function){
		.module = mod, .name = "k_write", .nparams = o->layout ? 2 : 3,
		.params = o->layout ? (struct plan_param_info[]){ { 0, 8 }, { 8, 8 } }
		                    : (struct plan_param_info[]){ { 0, 8 }, { 8, 4 }, { 12, 4 } } },
		&f_write, &d_));
	RS_TRY(plan_add_function(p, &(struct plan_function){
		.module = mod, .name = "k_read", .nparams = 2,
		.params = (struct plan_param_info[]){ { 0, 16 }, { 16, 8 } } }, &f_read, &d_));
	RS_TRY(plan_add_function(p, &(struct plan_function){
		.module = mod, .name = "k_indirect", .nparams = 3,
		.params = (struct plan_param_info[]){ { 0, 8 }, { 8, 4 }, { 16, 8 } } }, &f_ind, &d_));
	for (int i = 0; i < RS_NALLOCS; i++)
		RS_TRY(plan_add_alloc(p, &(struct plan_alloc){
			.address = addr[i], .bytes = RS_BYTES, .device = 0,
			.flags = i == RS_T ? PLAN_ALLOC_SNAPSHOT : 0u,
			.data = i == RS_T ? table : NULL }, NULL, &d_));

	/* The segment's launches: 0 to 3. */
	{
		struct plan_launch l;
		struct plan_patch pw[1] = { { 0, { RS_A, 0 } } };
		struct plan_patch pr[2] = { { 0, { RS_A, 0 } },
		                            { 16, { o->stray ? PLAN_NONE : RS_B,
		                                    o->stray ? UINT64_C(0x10000) : 0 } } };
		rs_write_args(a_w0, addr[RS_A], 7);
		rs_read_args(a_r0, addr[RS_A], 3, o->stray ? UINT64_C(0x10000) : addr[RS_B]);
		rs_kernel(&l, f_write, a_w0, sizeof a_w0, pw, 1, 0);
		RS_TRY(plan_add_launch(p, &l, &l0, &d_));
		rs_kernel(&l, f_read, a_r0, sizeof a_r0, pr, 2, 0);
		RS_TRY(plan_add_launch(p, &l, &li, &d_));
		memset(&l, 0, sizeof l);
		l.type = PLAN_NODE_MEMCPY;
		l.dst = (struct plan_addr){ RS_C, 0 };
		l.src = (struct plan_addr){ RS_B, 0 };
		l.bytes = RS_N * 4;
		RS_TRY(plan_add_launch(p, &l, &li, &d_));
		memset(&l, 0, sizeof l);
		l.type = PLAN_NODE_MEMSET;
		l.dst = (struct plan_addr){ RS_F, 0 };
		l.src.alloc = PLAN_NONE;
		l.value = 5;
		l.element = 4;
		l.width = 64;
		l.height = 1;
		l.pitch = 256;
		RS_TRY(plan_add_launch(p, &l, &li, &d_));
	}
	/* The break's launches. */
	{
		struct plan_launch l;
		struct plan_patch pw[1] = { { 0, { RS_D, 0 } } };
		struct plan_patch pr[2] = { { 0, { RS_D, 0 } }, { 16, { RS_G, 0 } } };
		struct plan_patch pi[2] = { { 0, { RS_T, 0 } }, { 16, { RS_H, 0 } } };
		uint32_t n = RS_N;
		rs_write_args(a_w1, addr[RS_D], 100);
		rs_read_args(a_r1, addr[RS_D], 3, addr[RS_G]);
		memcpy(a_ind, &addr[RS_T], 8);
		memcpy(a_ind + 8, &n, 4);
		memset(a_ind + 12, 0, 4);
		memcpy(a_ind + 16, &addr[RS_H], 8);
		rs_kernel(&l, f_write, a_w1, sizeof a_w1, pw, 1, 0);
		RS_TRY(plan_add_launch(p, &l, &lb, &d_));
		memset(&l, 0, sizeof l);
		l.type = PLAN_NODE_MEMCPY;
		l.dst = (struct plan_addr){ RS_E, 0 };
		l.src = (struct plan_addr){ PLAN_NONE, UINT64_C(0x7f0000001000) };
		l.bytes = RS_N * 4;
		l.ndata = RS_N * 4;
		l.data = hostsrc;
		RS_TRY(plan_add_launch(p, &l, &li, &d_));
		rs_kernel(&l, f_read, a_r1, sizeof a_r1, pr, 2, PLAN_LAUNCH_PDL);
		RS_TRY(plan_add_launch(p, &l, &li, &d_));
		if (o->indirect) {
			rs_kernel(&l, f_ind, a_ind, sizeof a_ind, pi, 2, 0);
			RS_TRY(plan_add_launch(p, &l, &li, &d_));
		}
	}
	RS_TRY(plan_add_variant(p, &(struct plan_variant){
		.tokens = 1, .mode = PLAN_MODE_BREAKABLE, .label = "step", .seen = 5,
		.recorded_ns = 60000, .device = 0 }, NULL, &d_));
	{
		struct plan_node nodes[5] = {
			{ .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .kernel = "k_write",
			  .grid = { 1, 1, 1 }, .block = { RS_N, 1, 1 }, .launch = l0 },
			{ .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .kernel = "k_read",
			  .grid = { 1, 1, 1 }, .block = { RS_N, 1, 1 }, .launch = l0 + 1 },
			{ .type = PLAN_NODE_MEMCPY, .op = PLAN_NONE, .kernel = "", .launch = l0 + 2 },
			{ .type = PLAN_NODE_MEMSET, .op = PLAN_NONE, .kernel = "", .launch = l0 + 3 },
			{ .type = PLAN_NODE_HOST, .op = PLAN_NONE, .kernel = "", .launch = PLAN_NONE },
		};
		struct plan_edge edges[4] = {
			{ 0, 1, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_PROGRAMMATIC, PLAN_PORT_DEFAULT },
			{ 1, 2, PLAN_EDGE_DEFAULT, PLAN_PORT_DEFAULT, PLAN_PORT_DEFAULT },
			{ 2, 3, PLAN_EDGE_DEFAULT, PLAN_PORT_DEFAULT, PLAN_PORT_DEFAULT },
			{ 3, 4, PLAN_EDGE_DEFAULT, PLAN_PORT_DEFAULT, PLAN_PORT_DEFAULT },
		};
		struct plan_segment seg = {
			.variant = 0, .flags = PLAN_SEG_NODES, .nnodes = o->host_node ? 5 : 4,
			.nodes = nodes, .nedges = o->host_node ? 4 : 3, .edges = edges,
			.recorded_ns = 20000,
		};
		seg.fingerprint = plan_fingerprint_recorded(p, &seg);
		RS_TRY(plan_add_segment(p, &seg, NULL, &d_));
	}
	RS_TRY(plan_add_breakpoint(p, &(struct plan_breakpoint){
		.variant = 0, .op = PLAN_NONE, .name = "tail", .reason = PLAN_BREAK_RECORDED,
		.detail = "", .launch_first = lb, .launch_count = o->indirect ? 4 : 3,
		.recorded_ns = 30000, .start_ns = o->offsets ? 30000 : 0,
		.issue_ns = o->offsets ? 25000 : 0 }, NULL, &d_));
	return p;
fail:
	plan_free(p);
	return NULL;
}
