/*
 * cuda-recorded.c - instantiate and replay of a recorded plan
 * (bcgtool/record/rebuild.c) on a real device, without the recorder: the
 * plan of t/helper/recorded-sample.h is built through the libplan API
 * from a module written as PTX text, written to bytes and read back, then
 * rebuilt and replayed, and device memory is compared with values worked
 * out by hand (recorded-sample.h lists them).
 *
 *  1. Fixed addresses: the recorded range is one this process found free
 *     (reserved, then released), so it is taken again exactly; the break's
 *     k_indirect follows the address of A that T's snapshot holds, which
 *     only works at the recorded addresses.
 *  2. Rebased on request (RR_REBASE): every allocation elsewhere, every
 *     patched word and copy moved, the same results.
 *  3. Rebased because the recorded range is taken (a live cudaMalloc).
 *  4. Drifts, each named: a parameter layout that differs from the
 *     driver's (a plan libplan writes and reads); a node grid and a
 *     recorded fingerprint changed in memory after the plan was built
 *     (libplan would not write such a plan), against what the rebuilt
 *     graph gives back.
 *  5. A plan recorded on another architecture: its module (PTX for
 *     sm_100) does not load here, and the segment is a drift that names
 *     it, not an error; it cannot be replayed.
 *  6. --fill random: the same seed gives the same bytes, another seed
 *     others; --fill zeros leaves T's snapshot out.
 *
 * Without a usable CUDA device the whole program is skipped.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "helper/recorded-sample.h"
#include "record/rebuild.h"
#include "tap.h"

#define TWO_MIB (UINT64_C(2) << 20)

/* The plan of O, through the file format and back. */
static plan_t *build_plan(const struct rs_opts *o)
{
	char msg[512];
	plan_t *p = rs_build(o, msg, sizeof msg), *q = NULL;
	struct plan_diag d = { 0 };
	void *buf = NULL;
	size_t len = 0;

	if (p == NULL) {
		diag("building the plan: %s", msg);
		return NULL;
	}
	if (plan_write_memory(p, &buf, &len, &d) != 0)
		diag("writing the plan: %s", d.message);
	else if (plan_read_memory(buf, len, NULL, &q, &d) != 0)
		diag("reading the plan back: %s", d.message);
	free(buf);
	plan_free(p);
	return q;
}

/* A 2 MiB-aligned range of 2 MiB that is free in this process now. */
static uint64_t free_range(void)
{
	typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
	typedef CUresult (*free_fn)(CUdeviceptr, size_t);
	enum cudaDriverEntryPointQueryResult q;
	void *r = NULL, *f = NULL;
	CUdeviceptr p = 0;

	if (cudaGetDriverEntryPointByVersion("cuMemAddressReserve", &r, CUDART_VERSION,
	                                     cudaEnableDefault, &q) != cudaSuccess ||
	    cudaGetDriverEntryPointByVersion("cuMemAddressFree", &f, CUDART_VERSION,
	                                     cudaEnableDefault, &q) != cudaSuccess ||
	    r == NULL || f == NULL)
		return 0;
	if (((reserve_fn)r)(&p, 8 * TWO_MIB, TWO_MIB, 0, 0) != CUDA_SUCCESS)
		return 0;
	((free_fn)f)(p, 8 * TWO_MIB);
	/* the middle of what was free: not the very edge the driver hands
	 * out next */
	return (p + 4 * TWO_MIB) / TWO_MIB * TWO_MIB;
}

static int check_words(struct rr_session *s, uint32_t alloc, uint32_t n, uint32_t mul,
                       uint32_t add, int square, const char *what)
{
	uint32_t got[RS_N];
	struct rr_error err = { 0 };

	if (rr_read(s, alloc, 0, got, n * 4, &err) != 0) {
		ok(0, "%s: read back: %s", what, err.msg);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t want = square ? i * i : mul * i + add;
		if (got[i] != want) {
			ok(0, "%s: word %u is %u, want %u", what, i, got[i], want);
			return -1;
		}
	}
	ok(1, "%s", what);
	return 0;
}

/* Rebuild and replay O's plan with OPTS; check every result. */
static void run_case(const char *name, const struct rs_opts *o, const struct rr_opts *opts,
                     int want_fixed)
{
	plan_t *p = build_plan(o);
	struct rr_session *s = NULL;
	struct rr_error err = { 0 };
	struct rr_segment_report rep;
	struct rr_run run = { 0 };
	const struct rr_info *in;

	if (!ok(p != NULL, "%s: the plan builds and survives the file format", name))
		return;
	if (!ok(rr_open(p, opts, &s, &err) == 0, "%s: opened: %s", name, err.msg)) {
		plan_free(p);
		return;
	}
	in = rr_get_info(s);
	is_int(in->allocs, RS_NALLOCS, "%s: every allocation made again", name);
	is_int(in->fixed, want_fixed ? RS_NALLOCS : 0, "%s: at the recorded addresses", name);
	/* at the recorded addresses: not one allocation rebased */
	is_int(in->rebased, want_fixed ? 0 : RS_NALLOCS, "%s: rebased %s", name, in->unplaced);
	ok((in->unplaced[0] == '\0') == (want_fixed || (opts->flags & RR_REBASE)),
	   "%s: an allocation not placed is named (with --rebase none is)", name);
	ok((rr_alloc_address(s, RS_A) == o->base) == want_fixed,
	   "%s: A is at 0x%" PRIx64 " (recorded 0x%" PRIx64 ")", name, rr_alloc_address(s, RS_A),
	   o->base);
	/* the allocations keep their distances inside their shared region */
	is_u64(rr_alloc_address(s, RS_T) - rr_alloc_address(s, RS_A), (uint64_t)RS_T * RS_STRIDE,
	       "%s: allocations of one granule keep their distance", name);

	if (!ok(rr_instantiate_segment(s, 0, &rep, &err) == 0, "%s: instantiate: %s", name,
	        err.msg))
		goto out;
	is_int(rep.status, RR_MATCH, "%s: the rebuilt segment matches: %s", name, rep.reason);
	is_u64(rep.fingerprint, rep.plan_fingerprint, "%s: fingerprint", name);
	is_int(rep.nodes, 4, "%s: four nodes read back", name);

	if (!ok(rr_replay_variant(s, 0, &(struct rr_replay){ .warmup = 1, .steps = 3 }, &run,
	                          &err) == 0, "%s: replay: %s", name, err.msg))
		goto out;
	is_u64(run.steps, 3, "%s: three timed steps", name);
	is_int(run.nitems, 2, "%s: a segment and a break timed", name);
	ok(run.step_median > 0 && run.item_median[0] > 0 && run.item_median[1] > 0,
	   "%s: times measured (step %.4f ms)", name, run.step_median);
	ok(run.busy_steps == 0 && run.item_busy == NULL && run.l2_bytes == 0,
	   "%s: no busy pass and no flush unless asked for", name);
	check_words(s, RS_A, RS_N, 1, 7, 0, "A = 7 + i (graph kernel)");
	check_words(s, RS_B, RS_N, 3, 22, 0, "B = 22 + 3i (struct-by-value pointer, PDL edge)");
	check_words(s, RS_C, RS_N, 3, 22, 0, "C = B (memcpy node)");
	check_words(s, RS_F, 64, 0, 5, 0, "F = 5 (memset node)");
	check_words(s, RS_D, RS_N, 1, 100, 0, "D = 100 + i (eager kernel)");
	check_words(s, RS_E, RS_N, 0, 0, 1, "E = i*i (eager copy from host bytes)");
	check_words(s, RS_G, RS_N, 3, 301, 0, "G = 301 + 3i (eager kernel with PDL)");
	if (o->indirect)
		check_words(s, RS_H, RS_N, 1, 7, 0, "H = A (an address stored in memory)");
	rr_run_release(&run);
	/* after the results are checked: back to back, flushed, and a busy
	 * pass; 20 steps, more than the window of steps in flight, so that
	 * slots are read and reused */
	if (!ok(rr_replay_variant(s, 0, &(struct rr_replay){ .warmup = 1, .steps = 20,
	                          .pace = RR_PACE_NONE, .flush_l2 = 1, .busy_steps = 3 }, &run,
	                          &err) == 0, "%s: replay --pace none --flush-l2: %s", name, err.msg))
		goto out;
	is_u64(run.steps, 20, "%s: twenty steps back to back", name);
	is_int(run.busy_steps, 3, "%s: three held steps", name);
	ok(run.step_median > 0 && run.busy_median > 0 && run.item_busy != NULL &&
	   run.item_busy[0] > 0 && run.item_busy[1] > 0,
	   "%s: busy times measured (step %.4f ms, busy %.4f ms)", name, run.step_median,
	   run.busy_median);
	{
		int l2 = 0;
		cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, opts->device);
		is_u64(run.l2_bytes, 2 * (uint64_t)l2, "%s: the flush writes twice the L2 (%d bytes)",
		       name, l2);
	}
out:
	rr_run_release(&run);
	rr_close(s);
	plan_free(p);
}

/* Instantiate segment 0 of P (freed here), which must drift for the
 * reason WANT (or OR_WANT, where not NULL); with CHECK_FP, the rebuilt
 * fingerprint must be FP. */
static void drift_case(const char *name, plan_t *p, const char *want, const char *or_want,
                       int check_fp, uint64_t fp)
{
	struct rr_opts fixed = { .fill = RR_FILL_SNAPSHOT };
	struct rr_session *s = NULL;
	struct rr_error err = { 0 };
	struct rr_segment_report rep;

	if (ok(p != NULL && rr_open(p, &fixed, &s, &err) == 0, "%s: opened %s", name, err.msg) &&
	    ok(rr_instantiate_segment(s, 0, &rep, &err) == 0, "%s: instantiated %s", name,
	       err.msg)) {
		is_int(rep.status, RR_DRIFT, "%s: a drift", name);
		ok(strstr(rep.reason, want) != NULL ||
		   (or_want != NULL && strstr(rep.reason, or_want) != NULL),
		   "%s: the reason names it: %s", name,
		   rep.reason);
		if (check_fp)
			is_u64(rep.fingerprint, fp, "%s: the rebuilt fingerprint is libplan's", name);
	}
	rr_close(s);
	plan_free(p);
}

int main(void)
{
	int ndev = 0;
	void *taken = NULL;
	struct rr_opts fixed = { .fill = RR_FILL_SNAPSHOT, .nvtx = 1 };
	struct rr_opts rebase = { .fill = RR_FILL_SNAPSHOT, .flags = RR_REBASE };

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
		tap_skip_all("no CUDA device");
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess)
		tap_skip_all("no usable CUDA device");

	{
		struct rs_opts o = { .base = free_range(), .indirect = 1 };
		if (!ok(o.base != 0, "a free range of addresses found"))
			return tap_done();
		run_case("fixed", &o, &fixed, 1);
	}
	{
		struct rs_opts o = { .base = free_range() };
		run_case("--rebase", &o, &rebase, 0);
	}
	if (ok(cudaMalloc(&taken, 4 * TWO_MIB) == cudaSuccess, "a range taken")) {
		struct rs_opts o = {
			.base = ((uint64_t)(uintptr_t)taken + TWO_MIB - 1) / TWO_MIB * TWO_MIB };
		run_case("taken", &o, &fixed, 0);
		cudaFree(taken);
	}
	{
		/* A plan that libplan writes and reads: only the parameter
		 * layout differs from what this driver gives. k_write's
		 * second parameter is PTX's ".param .u32 k_write_n" at byte
		 * 8, 4 bytes; the plan says 8 bytes. */
		struct rs_opts o = { .base = free_range(), .layout = 1 };
		drift_case("layout", build_plan(&o),
		           "node 0: k_write: parameter 1 at byte 8, 4 bytes; recorded at 8, 8 bytes",
		           /* a driver with cuFuncGetParamCount counts first */
		           "node 0: k_write: the driver gives 3 parameters, 2 recorded", 0, 0);
	}
	{
		/* Node 0's grid changed in memory after plan_add_segment (the
		 * plan's own segment, written through a cast): libplan would
		 * refuse to write this plan, but it is what a driver that
		 * rebuilt another grid would look like. The launch says grid
		 * [1,1,1]; the rebuilt node, read back, must say so. */
		struct rs_opts o = { .base = free_range() };
		char msg[512];
		plan_t *p = rs_build(&o, msg, sizeof msg);
		if (p != NULL)
			((struct plan_node *)plan_get_segment(p, 0)->nodes)[0].grid[0] = 2;
		else
			diag("building the plan: %s", msg);
		drift_case("grid", p, "node 0 (k_write): grid [2,1,1], rebuilt [1,1,1]", NULL, 0, 0);
	}
	{
		/* The recorded fingerprint changed in memory: the rebuilt
		 * one, hashed from what the driver gives back, must be what
		 * libplan computes of the unchanged segment. */
		struct rs_opts o = { .base = free_range() };
		char msg[512], want[80];
		plan_t *p = rs_build(&o, msg, sizeof msg);
		uint64_t fp = 0;
		if (p != NULL) {
			struct plan_segment *seg = (struct plan_segment *)plan_get_segment(p, 0);
			fp = plan_fingerprint_recorded(p, seg);
			seg->fingerprint = fp ^ 1;
		} else {
			diag("building the plan: %s", msg);
		}
		snprintf(want, sizeof want, "fingerprint %016" PRIx64 ", rebuilt %016" PRIx64, fp ^ 1,
		         fp);
		drift_case("fingerprint", p, want, NULL, 1, fp);
	}
	{
		struct rs_opts o = { .base = free_range() };
		plan_t *p = build_plan(&o);
		uint8_t t[3][RS_BYTES];
		uint64_t seeds[3] = { 3, 3, 4 };
		int fine = p != NULL;
		for (int k = 0; k < 3 && fine; k++) {
			struct rr_opts ro = { .fill = RR_FILL_RANDOM, .seed = seeds[k] };
			struct rr_session *s = NULL;
			struct rr_error err = { 0 };
			fine = ok(rr_open(p, &ro, &s, &err) == 0 &&
			          rr_read(s, RS_T, 0, t[k], RS_BYTES, &err) == 0,
			          "fill random seed %llu: %s", (unsigned long long)seeds[k], err.msg);
			rr_close(s);
		}
		if (fine) {
			ok(memcmp(t[0], t[1], RS_BYTES) == 0, "fill random: one seed, one content");
			ok(memcmp(t[0], t[2], RS_BYTES) != 0, "fill random: another seed, another");
		}
		{
			struct rr_opts ro = { .fill = RR_FILL_ZEROS };
			struct rr_session *s = NULL;
			struct rr_error err = { 0 };
			uint8_t zero[RS_BYTES] = { 0 };
			if (ok(p != NULL && rr_open(p, &ro, &s, &err) == 0 &&
			       rr_read(s, RS_T, 0, t[0], RS_BYTES, &err) == 0, "fill zeros: %s", err.msg))
				ok(memcmp(t[0], zero, RS_BYTES) == 0 && rr_get_info(s)->snapshots == 0,
				   "fill zeros: the snapshot is not used");
			rr_close(s);
		}
		plan_free(p);
	}
	{
		struct rs_opts o = { .base = free_range(), .foreign = 1 };
		plan_t *p = build_plan(&o);
		struct rr_session *s = NULL;
		struct rr_error err = { 0 };
		struct rr_segment_report rep;
		struct rr_run run = { 0 };
		int major = 0;
		cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
		if (major >= 10) {
			tap_skip(4, "this device runs sm_100 code");
		} else if (ok(p != NULL && rr_open(p, &fixed, &s, &err) == 0, "foreign: opened %s",
		              err.msg) &&
		           ok(rr_instantiate_segment(s, 0, &rep, &err) == 0,
		              "foreign: instantiate reports rather than fails: %s", err.msg)) {
			is_int(rep.status, RR_DRIFT, "foreign: a drift");
			ok(strstr(rep.reason, "does not load on") != NULL,
			   "foreign: the reason names the module: %s", rep.reason);
			ok(rr_replay_variant(s, 0, &(struct rr_replay){ .steps = 1 }, &run, &err) != 0,
			   "foreign: replay refuses: %s", err.msg);
		}
		rr_run_release(&run);
		rr_close(s);
		plan_free(p);
	}
	return tap_done();
}
