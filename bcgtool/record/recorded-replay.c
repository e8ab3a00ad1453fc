/*
 * recorded-replay.c - instantiate and replay of a recorded plan: the
 * checks that need no GPU, the choice of variants, and the reports in
 * text and JSON (recorded-replay.h). The GPU work is rebuild.c's.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "rebuild.h"
#include "recorded-replay.h"
#include "util.h"

int recorded_fill_from_name(const char *name)
{
	if (strcmp(name, "snapshot") == 0)
		return RR_FILL_SNAPSHOT;
	if (strcmp(name, "zeros") == 0)
		return RR_FILL_ZEROS;
	if (strcmp(name, "random") == 0)
		return RR_FILL_RANDOM;
	return -1;
}

uint32_t recorded_find_variant(const plan_t *plan, const char *spec, char *msg, size_t len)
{
	uint32_t found = PLAN_NONE, n = 0;
	char *end = NULL;
	long long v = strtoll(spec, &end, 10);

	if (spec[0] != '\0' && *end == '\0') {
		for (uint32_t i = 0; i < plan_count_variants(plan); i++)
			if (plan_get_variant(plan, i)->tokens == v)
				return i;
		snprintf(msg, len, "no variant %s: the plan has variants 1 to %u", spec,
		         plan_count_variants(plan));
		return PLAN_NONE;
	}
	for (uint32_t i = 0; i < plan_count_variants(plan); i++)
		if (strcmp(plan_get_variant(plan, i)->label, spec) == 0) {
			if (found == PLAN_NONE)
				found = i;
			n++;
		}
	if (n == 1)
		return found;
	if (n > 1)
		snprintf(msg, len, "%u variants are labelled \"%s\": name one by its number", n,
		         spec);
	else
		snprintf(msg, len, "no variant is labelled \"%s\"", spec);
	return PLAN_NONE;
}

int recorded_pace_from_name(const char *name)
{
	if (strcmp(name, "step") == 0)
		return RR_PACE_STEP;
	if (strcmp(name, "none") == 0)
		return RR_PACE_NONE;
	if (strcmp(name, "recorded") == 0)
		return RR_PACE_RECORDED;
	return -1;
}

static uint64_t recorded_item_ns(const plan_t *plan, const struct plan_item *it)
{
	return it->kind == PLAN_ITEM_SEGMENT ? plan_get_segment(plan, it->index)->recorded_ns
	                                     : plan_get_breakpoint(plan, it->index)->recorded_ns;
}

/* The recorded step's GPU busy time: its items' recorded times summed
 * (one stream: they ran one after the other). Each item's time is a
 * median of CUPTI's GPU start and end over the variant's steps: for a
 * segment the graph launch's first node start to its last node end, for
 * a break its first launch's start to its last one's end (the host's
 * gaps between the break's own launches included). The recorded step
 * time is the span from its first item's start to its last's end, host
 * gaps between items included (a program's Python between graph
 * launches); the busy time is what a replay, which issues every item
 * without those gaps, can be held to (replay's busy pass). 0 when an
 * item has no time. */
uint64_t recorded_busy_ns(const plan_t *plan, const struct plan_variant *pv)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < pv->nitems; i++) {
		uint64_t ns = recorded_item_ns(plan, &pv->items[i]);
		if (ns == 0)
			return 0;
		sum += ns;
	}
	return sum;
}

/* Whether launch LI can be run or rebuilt; else why. */
static int recorded_check_launch(const plan_t *plan, uint32_t li, int want_type, char *msg,
                                 size_t len)
{
	const struct plan_launch *l = plan_get_launch(plan, li);

	if (l == NULL) {
		snprintf(msg, len, "launch %u is not in the plan", li);
		return -1;
	}
	if (want_type != 0 && l->type != want_type) {
		snprintf(msg, len, "launch %u is a %s, the node a %s", li,
		         plan_node_type_name(l->type), plan_node_type_name(want_type));
		return -1;
	}
	if (l->type == PLAN_NODE_KERNEL) {
		const struct plan_function *f = plan_get_function(plan, l->function);
		const struct plan_module *m = f != NULL ? plan_get_module(plan, f->module) : NULL;
		if (f == NULL || m == NULL) {
			snprintf(msg, len, "launch %u names no recorded function", li);
			return -1;
		}
		if (!(m->flags & PLAN_MODULE_IMAGE)) {
			snprintf(msg, len, "kernel %s comes from module %u (%s), whose image was not "
			         "kept%s%s%s: it cannot be loaded", f->name, f->module,
			         m->name[0] ? m->name : "unnamed", m->note[0] ? " (" : "", m->note,
			         m->note[0] ? ")" : "");
			return -1;
		}
		for (uint32_t p = 0; p < l->npatches; p++)
			if (l->patches[p].addr.alloc == PLAN_NONE) {
				snprintf(msg, len, "kernel %s (launch %u): the parameter word at byte %u "
				         "held 0x%" PRIx64 ", in no recorded allocation", f->name, li,
				         l->patches[p].byte, l->patches[p].addr.offset);
				return -1;
			}
	} else if (l->type == PLAN_NODE_MEMCPY) {
		if (l->src.alloc == PLAN_NONE && l->dst.alloc == PLAN_NONE) {
			snprintf(msg, len, "launch %u: a copy between addresses in no recorded "
			         "allocation", li);
			return -1;
		}
	} else if (l->type == PLAN_NODE_MEMSET) {
		if (l->dst.alloc == PLAN_NONE || (l->element != 1 && l->element != 2 &&
		                                  l->element != 4)) {
			snprintf(msg, len, "launch %u: a memset %s", li, l->dst.alloc == PLAN_NONE
			         ? "outside every recorded allocation" : "of an unsupported width");
			return -1;
		}
	} else {
		snprintf(msg, len, "launch %u: a %s, which replay does not run", li,
		         plan_node_type_name(l->type));
		return -1;
	}
	return 0;
}

int recorded_check_variant(const plan_t *plan, uint32_t vi, char *msg, size_t len)
{
	const struct plan_variant *v = plan_get_variant(plan, vi);
	char why[400];

	for (uint32_t i = 0; i < v->nitems; i++) {
		uint32_t k = v->items[i].index;
		if (v->items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(plan, k);
			for (uint32_t n = 0; n < s->nnodes; n++) {
				const struct plan_node *nd = &s->nodes[n];
				if (nd->type == PLAN_NODE_EMPTY)
					continue;
				if (nd->type != PLAN_NODE_KERNEL && nd->type != PLAN_NODE_MEMCPY &&
				    nd->type != PLAN_NODE_MEMSET) {
					snprintf(msg, len, "variant %lld, segment %u, node %u: a %s node, "
					         "which replay does not rebuild (inspect shows it)",
					         (long long)v->tokens, k, n, plan_node_type_name(nd->type));
					return -1;
				}
				if (recorded_check_launch(plan, nd->launch, nd->type, why, sizeof why) != 0) {
					snprintf(msg, len, "variant %lld, segment %u, node %u: %s",
					         (long long)v->tokens, k, n, why);
					return -1;
				}
			}
		} else {
			const struct plan_breakpoint *b = plan_get_breakpoint(plan, k);
			for (uint32_t l = 0; l < b->launch_count; l++)
				if (recorded_check_launch(plan, b->launch_first + l, 0, why,
				                          sizeof why) != 0) {
					snprintf(msg, len, "variant %lld, break %s: %s",
					         (long long)v->tokens, b->name, why);
					return -1;
				}
		}
	}
	return 0;
}

/* Refuse, before any GPU work, what cannot run: exit 2 for the plan, 3
 * for this build or backend. */
/* The name of a variant's item I, for people. */
static void recorded_item_text(const plan_t *plan, const struct plan_item *it, char *buf,
                               size_t len)
{
	if (it->kind == PLAN_ITEM_SEGMENT)
		snprintf(buf, len, "seg %u (%u nodes)", it->index,
		         plan_get_segment(plan, it->index)->nnodes);
	else
		snprintf(buf, len, "break %s (%u launches)", plan_get_breakpoint(plan, it->index)->name,
		         plan_get_breakpoint(plan, it->index)->launch_count);
}

static int recorded_preflight(const plan_t *plan, const char *path, const struct recorded_opts *o,
                              const uint32_t *variants, uint32_t n)
{
	char msg[600];

	for (uint32_t i = 0; i < n; i++)
		if (recorded_check_variant(plan, variants[i], msg, sizeof msg) != 0) {
			bcg_error("%s: cannot replay: %s", path, msg);
			return BCG_EXIT_USAGE;
		}
	/* Paced by the recording: every variant replayed needs its items'
	 * start offsets (format 1.7). */
	for (uint32_t i = 0; o->pace == RR_PACE_RECORDED && i < n; i++) {
		const struct plan_variant *pv = plan_get_variant(plan, variants[i]);
		uint32_t missing = PLAN_NONE;
		if (plan_variant_offsets(plan, variants[i], &missing) & PLAN_OFFSETS_START)
			continue;
		recorded_item_text(plan, &pv->items[missing], msg, sizeof msg);
		bcg_error("%s: --pace recorded: variant %lld has no recorded start offsets (its "
		          "item %u, %s, has none): a plan written before format 1.7, or recorded "
		          "without GPU times; record the program again", path, (long long)pv->tokens,
		          missing, msg);
		return BCG_EXIT_USAGE;
	}
	if (strcmp(o->backend, "host") == 0) {
		bcg_error("%s: a recorded plan replays only on a GPU (the cuda backend): the "
		          "host backend cannot run its kernels", path);
		return BCG_EXIT_RUNTIME;
	}
#ifndef HAVE_CUDA
	bcg_error("%s: a recorded plan replays only on a GPU: this bcgtool was built without "
	          "CUDA", path);
	return BCG_EXIT_RUNTIME;
#else
	return BCG_EXIT_OK;
#endif
}

#ifdef HAVE_CUDA

/* The sessions of a replay: one a device the chosen variants were
 * recorded on, each on the device of that number here. A plan recorded
 * on several devices replays each device's variants on the same device
 * here; a device this machine lacks is refused, naming it and its
 * variants, before any work (bcgtool-replay(1)). */
#define RECORDED_MAX_DEVICES 64

struct recorded_sessions {
	uint32_t           n;
	int                device[RECORDED_MAX_DEVICES];
	struct rr_session *s[RECORDED_MAX_DEVICES];
	struct rr_hold    *hold;
	struct rr_info     all;   /* summed over the sessions */
};

static struct rr_session *recorded_session(const struct recorded_sessions *ss, uint32_t device)
{
	for (uint32_t i = 0; i < ss->n; i++)
		if (ss->device[i] == (int)device)
			return ss->s[i];
	return NULL;
}

static void recorded_close(struct recorded_sessions *ss)
{
	for (uint32_t i = 0; i < ss->n; i++)
		rr_close(ss->s[i]);
	rr_hold_release(ss->hold);
	memset(ss, 0, sizeof *ss);
}

/* "2, 4" for the variants among VARIANTS recorded on DEVICE. */
static void recorded_variants_of(const plan_t *plan, const uint32_t *variants, uint32_t n,
                                 int device, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && k < len; i++) {
		const struct plan_variant *pv = plan_get_variant(plan, variants[i]);
		if ((int)pv->device == device)
			k += (size_t)snprintf(buf + k, len - k, "%s%lld", k ? ", " : "",
			                      (long long)pv->tokens);
	}
}

/* Open a session on each device the variants ran on, the recorded
 * address ranges held first (before CUDA starts), with the reason a
 * recorded plan needs a GPU when there is none. */
static int recorded_open(const plan_t *plan, const char *path, const struct recorded_opts *o,
                         const uint32_t *variants, uint32_t n, struct recorded_sessions *ss)
{
	struct rr_opts ro = { .fill = o->fill, .seed = o->seed, .flags = o->flags, .nvtx = o->nvtx };
	struct rr_error err = { 0 };

	memset(ss, 0, sizeof *ss);
	for (uint32_t i = 0; i < n; i++) {
		int d = (int)plan_get_variant(plan, variants[i])->device;
		uint32_t k = 0;
		while (k < ss->n && ss->device[k] < d)
			k++;
		if (k < ss->n && ss->device[k] == d)
			continue;
		if (ss->n == RECORDED_MAX_DEVICES) {
			bcg_error("%s: the variants ran on more than %d devices", path,
			          RECORDED_MAX_DEVICES);
			return BCG_EXIT_USAGE;
		}
		memmove(&ss->device[k + 1], &ss->device[k], (ss->n - k) * sizeof ss->device[0]);
		ss->device[k] = d;
		ss->n++;
	}
	if (!(o->flags & RR_REBASE))
		ss->hold = rr_hold_ranges(plan);
	ro.hold = ss->hold;
	for (uint32_t i = 0; i < ss->n; i++) {
		const struct rr_info *in;
		ro.device = ss->device[i];
		if (rr_open(plan, &ro, &ss->s[i], &err) != 0) {
			char which[200];
			int rc = err.exit ? err.exit : BCG_EXIT_RUNTIME;
			if (err.no_device) {
				recorded_variants_of(plan, variants, n, ss->device[i], which, sizeof which);
				bcg_error("%s: cannot replay variant%s %s here: %s; name the variants of "
				          "the devices this machine has with --variant", path,
				          strchr(which, ',') ? "s" : "", which, err.msg);
			} else {
				bcg_error("%s: a recorded plan replays only on a GPU: %s", path, err.msg);
			}
			ss->n = i;
			recorded_close(ss);
			return rc;
		}
		in = rr_get_info(ss->s[i]);
		if (i == 0) {
			ss->all = *in;
		} else {
			ss->all.allocs += in->allocs;
			ss->all.alloc_bytes += in->alloc_bytes;
			ss->all.fixed += in->fixed;
			ss->all.rebased += in->rebased;
			ss->all.snapshots += in->snapshots;
			ss->all.memory_ns += in->memory_ns;
			if (ss->all.unplaced[0] == '\0')
				memcpy(ss->all.unplaced, in->unplaced, sizeof ss->all.unplaced);
		}
	}
	return BCG_EXIT_OK;
}

/* Each recorded allocation's place here, in JSON (inside "memory"). */
static void recorded_json_placement(struct plan_json *j, const plan_t *plan,
                                    const struct recorded_sessions *ss)
{
	char hex[32];

	plan_json_key(j, "placement");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_allocs(plan); i++) {
		const struct plan_alloc *a = plan_get_alloc(plan, i);
		const struct rr_session *s = recorded_session(ss, a->device);
		const char *why = "";
		int place = s != NULL ? rr_alloc_placement(s, i, &why) : RR_PLACE_OTHER_DEVICE;
		if (place == RR_PLACE_OTHER_DEVICE)
			continue;   /* a device no chosen variant ran on */
		plan_json_object_begin(j);
		plan_json_key(j, "alloc");
		plan_json_uint(j, i);
		plan_json_key(j, "device");
		plan_json_uint(j, a->device);
		plan_json_key(j, "bytes");
		plan_json_uint(j, a->bytes);
		plan_json_key(j, "recorded");
		snprintf(hex, sizeof hex, "0x%" PRIx64, a->address);
		plan_json_string(j, hex);
		plan_json_key(j, "here");
		snprintf(hex, sizeof hex, "0x%" PRIx64, rr_alloc_address(s, i));
		plan_json_string(j, hex);
		plan_json_key(j, "place");
		plan_json_string(j, place == RR_PLACE_RECORDED ? "recorded" : "rebased");
		plan_json_key(j, "why");
		plan_json_string(j, why);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

/* The allocations not at their recorded address, one line each, for
 * people (at most RECORDED_PLACE_LINES, then how many more). */
#define RECORDED_PLACE_LINES 20

static void recorded_print_placement(const plan_t *plan, const struct recorded_sessions *ss,
                                     const struct recorded_opts *o)
{
	uint32_t shown = 0, more = 0;

	if (ss->all.rebased == 0 || (o->flags & RR_REBASE))
		return;
	printf("\n%5s  %6s  %18s  %18s  %10s  %s\n", "alloc", "device", "recorded", "here",
	       "bytes", "place");
	for (uint32_t i = 0; i < plan_count_allocs(plan); i++) {
		const struct plan_alloc *a = plan_get_alloc(plan, i);
		const struct rr_session *s = recorded_session(ss, a->device);
		const char *why = "";
		int place = s != NULL ? rr_alloc_placement(s, i, &why) : RR_PLACE_OTHER_DEVICE;
		if (place == RR_PLACE_OTHER_DEVICE)
			continue;
		if (shown == RECORDED_PLACE_LINES) {
			more++;
			continue;
		}
		printf("%5u  %6u  0x%016" PRIx64 "  0x%016" PRIx64 "  %10" PRIu64 "  %s%s%.200s\n",
		       i, a->device, a->address, rr_alloc_address(s, i), a->bytes,
		       place == RR_PLACE_RECORDED ? "at recorded address" : "rebased",
		       why[0] ? ": " : "", why);
		shown++;
	}
	if (more)
		printf("... and %u more allocations (--json lists every one)\n", more);
}

static const char *recorded_fill_name(int fill)
{
	return fill == RR_FILL_ZEROS ? "zeros" : fill == RR_FILL_RANDOM ? "random" : "snapshot";
}

/* "NVIDIA H100 80GB HBM3, sm_90, driver 13.0" for the recording. */
static void recorded_env_text(const plan_t *plan, char *buf, size_t len)
{
	const struct plan_meta *m = plan_get_meta(plan);
	char drv[32];

	snprintf(buf, len, "%s, sm_%d%d, driver %s", m->device[0] ? m->device : "an unknown device",
	         m->cc_major, m->cc_minor, plan_version_text(m->cuda_driver, 0, drv, sizeof drv));
}

/* Whether this device and driver are the recording's. */
static int recorded_same_env(const plan_t *plan, const struct rr_info *in)
{
	const struct plan_meta *m = plan_get_meta(plan);

	return strcmp(m->device, in->device) == 0 && m->cc_major == in->cc_major &&
	       m->cc_minor == in->cc_minor && m->cuda_driver == in->cuda_driver;
}

static void recorded_memory_text(const struct rr_info *in, int fill, char *buf, size_t len)
{
	snprintf(buf, len, "%u allocations, %.1f MiB, fill %s: %s", in->allocs,
	         (double)in->alloc_bytes / 1048576.0, recorded_fill_name(fill),
	         in->rebased == 0 ? "all at their recorded addresses"
	         : in->fixed == 0 ? "all rebased (the recorded addresses could not be had, or --rebase): "
	                            "parameters and copies patched, addresses stored in "
	                            "device memory are stale"
	                          : "some rebased: parameters and copies patched, addresses "
	                            "stored in device memory are stale");
	if (in->rebased != 0 && in->fixed != 0) {
		size_t k = strlen(buf);
		snprintf(buf + k, len - k, " (%u at their recorded addresses, %u rebased)", in->fixed,
		         in->rebased);
	}
}

static void recorded_json_memory(struct plan_json *j, const plan_t *plan,
                                 const struct recorded_sessions *ss, int fill)
{
	const struct rr_info *in = &ss->all;

	plan_json_key(j, "memory");
	plan_json_object_begin(j);
	plan_json_key(j, "allocations");
	plan_json_uint(j, in->allocs);
	plan_json_key(j, "bytes");
	plan_json_uint(j, in->alloc_bytes);
	plan_json_key(j, "fixed");
	plan_json_uint(j, in->fixed);
	plan_json_key(j, "rebased");
	plan_json_uint(j, in->rebased);
	plan_json_key(j, "fill");
	plan_json_string(j, recorded_fill_name(fill));
	plan_json_key(j, "snapshots");
	plan_json_uint(j, in->snapshots);
	plan_json_key(j, "memory_ms");
	plan_json_double(j, (double)in->memory_ns / 1e6);
	recorded_json_placement(j, plan, ss);
	plan_json_object_end(j);
}

/* KEY: a device, its compute capability and its driver. */
static void recorded_json_device(struct plan_json *j, const char *key, const char *device,
                                 int32_t cc_major, int32_t cc_minor, int32_t driver)
{
	plan_json_key(j, key);
	plan_json_object_begin(j);
	plan_json_key(j, "device");
	plan_json_string(j, device);
	plan_json_key(j, "cc");
	plan_json_int(j, cc_major * 10 + cc_minor);
	plan_json_key(j, "driver");
	plan_json_int(j, driver);
	plan_json_object_end(j);
}

static void recorded_json_env(struct plan_json *j, const plan_t *plan, const struct rr_info *in)
{
	const struct plan_meta *m = plan_get_meta(plan);

	recorded_json_device(j, "recorded_on", m->device, m->cc_major, m->cc_minor, m->cuda_driver);
	recorded_json_device(j, "here", in->device, in->cc_major, in->cc_minor, in->cuda_driver);
	plan_json_key(j, "same_environment");
	plan_json_bool(j, recorded_same_env(plan, in));
}

/* Open a recorded replay's JSON report with what instantiate and replay
 * both start it with: the plan, where it came from and runs, and memory. */
static void recorded_json_head(struct plan_json *j, const char *path, const plan_t *plan,
                               const struct recorded_sessions *ss, int fill)
{
	const struct rr_info *in = &ss->all;

	plan_json_object_begin(j);
	plan_json_key(j, "plan");
	plan_json_string(j, path);
	plan_json_key(j, "origin");
	plan_json_string(j, "recorded");
	plan_json_key(j, "backend");
	plan_json_string(j, "cuda");
	plan_json_key(j, "device");
	plan_json_string(j, in->device);
	recorded_json_env(j, plan, in);
	recorded_json_memory(j, plan, ss, fill);
}

static void recorded_print_header(const plan_t *plan, const char *path,
                                  const struct recorded_sessions *ss,
                                  const struct recorded_opts *o, int width)
{
	const struct rr_info *in = &ss->all;
	char env[320], mem[400], drv[32];

	recorded_env_text(plan, env, sizeof env);
	recorded_memory_text(in, o->fill, mem, sizeof mem);
	printf("%-*s %s\n", width, "plan", path);
	printf("%-*s cuda (%s) (recorded on %s)\n", width, "backend", in->device, env);
	if (!recorded_same_env(plan, in))
		printf("%-*s recorded on %s; here %s, sm_%d%d, driver %s\n", width, "drift", env,
		       in->device, in->cc_major, in->cc_minor,
		       plan_version_text(in->cuda_driver, 0, drv, sizeof drv));
	if (ss->n > 1 || in->ordinal != 0) {
		printf("%-*s", width, "devices");
		for (uint32_t i = 0; i < ss->n; i++)
			printf("%s %d (%s)", i ? "," : "", ss->device[i],
			       rr_get_info(ss->s[i])->device);
		printf(": each device's variants replay on the device of that number\n");
	}
	printf("%-*s %s\n", width, "memory", mem);
	if (in->unplaced[0] != '\0')
		printf("%-*s %s\n", width, "placing", in->unplaced);
}

static void recorded_report_error(const char *path, const struct rr_error *err)
{
	bcg_error("%s: %s", path, err->msg);
}

static const char *const recorded_status_words[] = {
	[RR_MATCH] = "match",
	[RR_DRIFT] = "drift",
};

int recorded_instantiate(const plan_t *plan, const char *path, const struct recorded_opts *o,
                         uint64_t load_ns)
{
	uint32_t nv = plan_count_variants(plan), ns = plan_count_segments(plan);
	uint32_t *all = calloc(nv + 1, sizeof *all);
	struct rr_segment_report *rep = calloc(ns + 1, sizeof *rep);
	struct recorded_sessions ss = { 0 };
	struct rr_error err = { 0 };
	uint32_t nrep = 0, matched = 0, drifted = 0;
	uint64_t build = 0, inst = 0, upload = 0, t0, open_ns;
	int rc;

	if (all == NULL || rep == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	for (uint32_t i = 0; i < nv; i++)
		all[i] = i;
	if ((rc = recorded_preflight(plan, path, o, all, nv)) != BCG_EXIT_OK)
		goto out;
	t0 = bcg_now_ns();
	if ((rc = recorded_open(plan, path, o, all, nv, &ss)) != BCG_EXIT_OK)
		goto out;
	open_ns = bcg_now_ns() - t0;
	/* Segments in the order of the variants that run them. */
	for (uint32_t v = 0; v < nv; v++) {
		const struct plan_variant *pv = plan_get_variant(plan, v);
		for (uint32_t i = 0; i < pv->nitems; i++) {
			if (pv->items[i].kind != PLAN_ITEM_SEGMENT)
				continue;
			if (rr_instantiate_segment(recorded_session(&ss, pv->device),
			                           pv->items[i].index, &rep[nrep], &err) != 0) {
				recorded_report_error(path, &err);
				rc = err.exit;
				goto out;
			}
			build += rep[nrep].build_ns;
			inst += rep[nrep].instantiate_ns;
			upload += rep[nrep].upload_ns;
			if (rep[nrep].status == RR_MATCH)
				matched++;
			else
				drifted++;
			nrep++;
		}
	}
	if (o->json) {
		struct plan_json *j = plan_json_new(stdout);
		if (j == NULL) {
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		recorded_json_head(j, path, plan, &ss, o->fill);
		plan_json_key(j, "segments");
		plan_json_array_begin(j);
		for (uint32_t i = 0; i < nrep; i++) {
			const struct rr_segment_report *r = &rep[i];
			const struct plan_variant *pv =
				plan_get_variant(plan, plan_get_segment(plan, r->segment)->variant);
			plan_json_object_begin(j);
			plan_json_key(j, "segment");
			plan_json_uint(j, r->segment);
			plan_json_key(j, "tokens");
			plan_json_int(j, pv->tokens);
			plan_json_key(j, "variant");
			plan_json_int(j, pv->tokens);
			plan_json_key(j, "label");
			plan_json_string(j, pv->label);
			cmd_json_segment_check(j, recorded_status_words[r->status], r->reason,
			                       r->plan_nodes, r->nodes, r->plan_fingerprint,
			                       r->fingerprint, r->build_ns, r->instantiate_ns,
			                       r->upload_ns);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_key(j, "matched");
		plan_json_uint(j, matched);
		plan_json_key(j, "drifted");
		plan_json_uint(j, drifted);
		plan_json_key(j, "unchecked");
		plan_json_uint(j, 0);
		plan_json_key(j, "load_ms");
		plan_json_double(j, (double)load_ns / 1e6);
		plan_json_key(j, "materialize_ms");
		plan_json_double(j, (double)open_ns / 1e6);
		plan_json_key(j, "rebuild_ms");
		plan_json_double(j, (double)build / 1e6);
		plan_json_key(j, "instantiate_ms");
		plan_json_double(j, (double)inst / 1e6);
		plan_json_key(j, "upload_ms");
		plan_json_double(j, (double)upload / 1e6);
		/* a recorded plan reads no checkpoint files */
		plan_json_key(j, "weights");
		plan_json_object_begin(j);
		plan_json_key(j, "sources");
		plan_json_uint(j, 0);
		plan_json_key(j, "bytes");
		plan_json_uint(j, 0);
		plan_json_key(j, "hash_ms");
		plan_json_double(j, 0);
		plan_json_key(j, "changed");
		plan_json_array_begin(j);
		plan_json_array_end(j);
		plan_json_object_end(j);
		plan_json_object_end(j);
		plan_json_free(j);
	} else {
		recorded_print_header(plan, path, &ss, o, 8);
		recorded_print_placement(plan, &ss, o);
		printf("\n%7s  %7s  %11s  %9s  %s\n", "variant", "segment", "nodes", "status", "reason");
		for (uint32_t i = 0; i < nrep; i++) {
			const struct rr_segment_report *r = &rep[i];
			char nodes[32];
			snprintf(nodes, sizeof nodes, "%u/%u", r->nodes, r->plan_nodes);
			printf("%7lld  %7u  %11s  %9s  %s\n",
			       (long long)plan_get_variant(plan,
			                                   plan_get_segment(plan, r->segment)->variant)->tokens,
			       r->segment, nodes, recorded_status_words[r->status], r->reason);
		}
		printf("\n%u segments: %u match, %u drift, 0 unchecked\n", nrep, matched, drifted);
		printf("load %.2f ms, materialize %.2f ms, rebuild %.2f ms, instantiate %.2f ms, "
		       "upload %.2f ms, total %.2f ms\n", (double)load_ns / 1e6, (double)open_ns / 1e6,
		       (double)build / 1e6, (double)inst / 1e6, (double)upload / 1e6,
		       (double)(load_ns + open_ns + build + inst + upload) / 1e6);
	}
	rc = drifted > 0 && !o->allow_drift ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
out:
	recorded_close(&ss);
	free(all);
	free(rep);
	return rc;
}

/* A recorded time against a replayed one, as "1.03", or "-" without a
 * recording. */
static void recorded_ratio_text(double replay_ms, uint64_t recorded_ns, char *buf, size_t len)
{
	if (recorded_ns == 0 || replay_ms <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f", replay_ms / ((double)recorded_ns / 1e6));
}

static void recorded_ms_text(uint64_t ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
}

/* The busy pass's MS as "0.318 ms" and against the recorded NS as
 * "0.89"; "-" for what is not there (MS < 0: not measured). */
static void recorded_busy_text(double ms, uint64_t ns, char *buf, size_t len, char *ratio,
                               size_t rlen)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f ms", ms);
	recorded_ratio_text(ms < 0 ? 0 : ms, ns, ratio, rlen);
}

static void recorded_json_recorded(struct plan_json *j, const char *key, double ms, uint64_t ns)
{
	plan_json_key(j, key);
	if (ns == 0)
		plan_json_null(j);
	else
		plan_json_double(j, (double)ns / 1e6);
	plan_json_key(j, "ratio");
	if (ns == 0 || ms <= 0)
		plan_json_null(j);
	else
		plan_json_double(j, ms / ((double)ns / 1e6));
}

/* KEY: the busy pass's MS (null when not measured, MS < 0), and
 * KEY_ratio: MS against the recorded NS (null without either). */
static void recorded_json_busy(struct plan_json *j, const char *key, double ms, uint64_t ns)
{
	char rk[64];

	plan_json_key(j, key);
	if (ms < 0)
		plan_json_null(j);
	else
		plan_json_double(j, ms);
	snprintf(rk, sizeof rk, "%.*s_ratio", (int)(strlen(key) > 3 ? strlen(key) - 3 : 0), key);
	plan_json_key(j, rk);
	if (ms <= 0 || ns == 0)
		plan_json_null(j);
	else
		plan_json_double(j, ms / ((double)ns / 1e6));
}

static const char *recorded_pace_name(int pace)
{
	return pace == RR_PACE_NONE ? "none" : pace == RR_PACE_RECORDED ? "recorded" : "step";
}

int recorded_replay(const plan_t *plan, const char *path, const struct recorded_opts *o)
{
	uint32_t nv = plan_count_variants(plan), nrun = 0;
	uint32_t *run_v = calloc(nv + 1, sizeof *run_v);
	struct rr_run *runs = calloc(nv + 1, sizeof *runs);
	uint32_t *matched = calloc(nv + 1, sizeof *matched), *drifted = calloc(nv + 1, sizeof *drifted);
	struct recorded_sessions ss = { 0 };
	struct rr_error err = { 0 };
	char msg[400];
	int rc;

	if (run_v == NULL || runs == NULL || matched == NULL || drifted == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (o->variant != NULL) {
		uint32_t vi = recorded_find_variant(plan, o->variant, msg, sizeof msg);
		if (vi == PLAN_NONE) {
			bcg_error("%s: --variant: %s", path, msg);
			rc = BCG_EXIT_USAGE;
			goto out;
		}
		run_v[nrun++] = vi;
	} else {
		for (uint32_t i = 0; i < nv; i++)
			run_v[nrun++] = i;
	}
	if ((rc = recorded_preflight(plan, path, o, run_v, nrun)) != BCG_EXIT_OK)
		goto out;
	if ((rc = recorded_open(plan, path, o, run_v, nrun, &ss)) != BCG_EXIT_OK)
		goto out;
	for (uint32_t r = 0; r < nrun; r++) {
		const struct plan_variant *pv = plan_get_variant(plan, run_v[r]);
		struct rr_session *s = recorded_session(&ss, pv->device);
		for (uint32_t i = 0; i < pv->nitems; i++) {
			struct rr_segment_report rep;
			if (pv->items[i].kind != PLAN_ITEM_SEGMENT)
				continue;
			if (rr_instantiate_segment(s, pv->items[i].index, &rep, &err) != 0)
				goto fail;
			if (rep.status == RR_MATCH)
				matched[r]++;
			else
				drifted[r]++;
			if (!rr_segment_ready(s, pv->items[i].index)) {
				bcg_error("%s: variant %lld: segment %u cannot be rebuilt here: %s", path,
				          (long long)pv->tokens, pv->items[i].index, rep.reason);
				rc = BCG_EXIT_RUNTIME;
				goto out;
			}
		}
		struct rr_replay rp = { .warmup = o->warmup, .steps = o->steps, .pace = o->pace,
		                        .flush_l2 = o->flush_l2, .busy_steps = o->busy_steps };
		if (rr_replay_variant(s, run_v[r], &rp, &runs[r], &err) != 0)
			goto fail;
		if (bcg_interrupted()) {
			rc = bcg_signal_status(bcg_interrupted());
			goto out;
		}
	}
	if (o->json) {
		struct plan_json *j = plan_json_new(stdout);
		if (j == NULL) {
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		recorded_json_head(j, path, plan, &ss, o->fill);
		plan_json_key(j, "steps");
		plan_json_uint(j, o->steps);
		plan_json_key(j, "warmup");
		plan_json_uint(j, o->warmup);
		plan_json_key(j, "pace");
		plan_json_string(j, recorded_pace_name(o->pace));
		plan_json_key(j, "flush_l2");
		plan_json_bool(j, o->flush_l2);
		plan_json_key(j, "busy_steps");
		plan_json_uint(j, o->busy_steps);
		plan_json_key(j, "variants");
		plan_json_array_begin(j);
		for (uint32_t r = 0; r < nrun; r++) {
			const struct plan_variant *pv = plan_get_variant(plan, run_v[r]);
			const struct rr_run *x = &runs[r];
			plan_json_object_begin(j);
			plan_json_key(j, "variant");
			plan_json_int(j, pv->tokens);
			plan_json_key(j, "label");
			plan_json_string(j, pv->label);
			plan_json_key(j, "seen");
			plan_json_uint(j, pv->seen);
			plan_json_key(j, "device");
			plan_json_uint(j, pv->device);
			plan_json_key(j, "instantiate");
			plan_json_object_begin(j);
			plan_json_key(j, "matched");
			plan_json_uint(j, matched[r]);
			plan_json_key(j, "drifted");
			plan_json_uint(j, drifted[r]);
			plan_json_object_end(j);
			plan_json_key(j, "step_ms");
			plan_json_object_begin(j);
			plan_json_key(j, "median");
			plan_json_double(j, x->step_median);
			plan_json_key(j, "p90");
			plan_json_double(j, x->step_p90);
			plan_json_key(j, "p99");
			plan_json_double(j, x->step_p99);
			plan_json_key(j, "mean");
			plan_json_double(j, x->step_mean);
			plan_json_object_end(j);
			recorded_json_recorded(j, "recorded_ms", x->step_median, pv->recorded_ns);
			plan_json_key(j, "busy");
			plan_json_object_begin(j);
			recorded_json_recorded(j, "recorded_ms", x->step_median,
			                       recorded_busy_ns(plan, pv));
			recorded_json_busy(j, "replay_ms", x->busy_steps ? x->busy_median : -1,
			                   recorded_busy_ns(plan, pv));
			plan_json_object_end(j);
			plan_json_key(j, "host_ms");
			plan_json_double(j, x->host_median);
			if (o->pace == RR_PACE_RECORDED) {
				plan_json_key(j, "paced");
				plan_json_object_begin(j);
				plan_json_key(j, "gaps");
				plan_json_uint(j, x->paced_gaps);
				plan_json_key(j, "gap_ms");
				plan_json_double(j, x->paced_ms);
				plan_json_key(j, "gap_cost_us");
				plan_json_double(j, x->gap_cost_us);
				plan_json_object_end(j);
			}
			plan_json_key(j, "items");
			plan_json_array_begin(j);
			for (uint32_t i = 0; i < pv->nitems && i < x->nitems; i++) {
				const struct plan_item *it = &pv->items[i];
				plan_json_object_begin(j);
				plan_json_key(j, "kind");
				plan_json_string(j, it->kind == PLAN_ITEM_SEGMENT ? "segment" : "breakpoint");
				plan_json_key(j, "index");
				plan_json_uint(j, it->index);
				plan_json_key(j, "name");
				plan_json_string(j, it->kind == PLAN_ITEM_SEGMENT
				                 ? "" : plan_get_breakpoint(plan, it->index)->name);
				plan_json_key(j, "median_ms");
				plan_json_double(j, x->item_median[i]);
				recorded_json_recorded(j, "recorded_ms", x->item_median[i],
				                       recorded_item_ns(plan, it));
				recorded_json_busy(j, "busy_ms", x->item_busy ? x->item_busy[i] : -1,
				                   recorded_item_ns(plan, it));
				plan_json_object_end(j);
			}
			plan_json_array_end(j);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
		plan_json_free(j);
	} else {
		recorded_print_header(plan, path, &ss, o, 8);
		recorded_print_placement(plan, &ss, o);
		printf("%-8s %llu per variant (after %llu warm-up), paced %s%s\n", "steps",
		       (unsigned long long)o->steps, (unsigned long long)o->warmup,
		       recorded_pace_name(o->pace), o->pace == RR_PACE_NONE ? " (back to back)"
		       : o->pace == RR_PACE_RECORDED ? " (each waited for, with the recorded idle "
		       "gaps between its items)" : " (each waited for)");
		if (o->flush_l2 && nrun > 0)
			printf("%-8s L2 flushed before every step (%.0f MiB written over)\n", "flush",
			       (double)runs[0].l2_bytes / 1048576.0);
		if (o->busy_steps > 0)
			printf("%-8s %u held steps: each issued whole behind a hold, the GPU's own "
			       "time\n", "busy", o->busy_steps);
		for (uint32_t r = 0; r < nrun; r++) {
			const struct plan_variant *pv = plan_get_variant(plan, run_v[r]);
			const struct rr_run *x = &runs[r];
			uint64_t rbusy = recorded_busy_ns(plan, pv);
			char name[200], rec[32], ratio[16], busy[32], bratio[16];
			printf("\nvariant %lld%s%s%s: seen %llu times; instantiate %u match, %u drift",
			       (long long)pv->tokens, pv->label[0] ? " \"" : "", pv->label,
			       pv->label[0] ? "\"" : "", (unsigned long long)pv->seen, matched[r],
			       drifted[r]);
			if (ss.n > 1 || pv->device != 0)
				printf("; on device %u", pv->device);
			putchar('\n');
			printf("  %-44s %12s %12s %7s %12s %8s\n", "item", "replay", "recorded", "ratio",
			       "gpu busy", "busy/rec");
			for (uint32_t i = 0; i < pv->nitems && i < x->nitems; i++) {
				uint64_t ins = recorded_item_ns(plan, &pv->items[i]);
				recorded_item_text(plan, &pv->items[i], name, sizeof name);
				recorded_ms_text(ins, rec, sizeof rec);
				recorded_ratio_text(x->item_median[i], ins, ratio, sizeof ratio);
				recorded_busy_text(x->item_busy ? x->item_busy[i] : -1, ins, busy,
				                   sizeof busy, bratio, sizeof bratio);
				printf("  %-44.44s %9.3f ms %12s %7s %12s %8s\n", name, x->item_median[i],
				       rec, ratio, busy, bratio);
			}
			recorded_ms_text(pv->recorded_ns, rec, sizeof rec);
			recorded_ratio_text(x->step_median, pv->recorded_ns, ratio, sizeof ratio);
			recorded_busy_text(x->busy_steps ? x->busy_median : -1, 0, busy, sizeof busy,
			                   bratio, sizeof bratio);
			printf("  %-44s %9.3f ms %12s %7s %12s %8s\n", "step (median)", x->step_median,
			       rec, ratio, busy, bratio);
			recorded_ms_text(rbusy, rec, sizeof rec);
			recorded_ratio_text(x->step_median, rbusy, ratio, sizeof ratio);
			recorded_busy_text(x->busy_steps ? x->busy_median : -1, rbusy, busy, sizeof busy,
			                   bratio, sizeof bratio);
			printf("  %-44s %9.3f ms %12s %7s %12s %8s\n",
			       "step against the recorded GPU busy time", x->step_median, rec, ratio,
			       busy, bratio);
			printf("  %-44s %9.3f ms, p99 %.3f ms; host issue %.3f ms\n", "step p90",
			       x->step_p90, x->step_p99, x->host_median);
			if (o->pace == RR_PACE_RECORDED)
				printf("  %-44s %u gap%s, %.3f ms in all (a gap kernel costs %.2f us, "
				       "taken off each)\n", "paced", x->paced_gaps,
				       x->paced_gaps == 1 ? "" : "s", x->paced_ms, x->gap_cost_us);
		}
	}
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	goto out;
fail:
	recorded_report_error(path, &err);
	rc = err.exit ? err.exit : BCG_EXIT_RUNTIME;
out:
	for (uint32_t r = 0; runs != NULL && r < nrun; r++)
		rr_run_release(&runs[r]);
	recorded_close(&ss);
	free(run_v);
	free(runs);
	free(matched);
	free(drifted);
	return rc;
}

#else /* !HAVE_CUDA */

int recorded_instantiate(const plan_t *plan, const char *path, const struct recorded_opts *o,
                         uint64_t load_ns)
{
	uint32_t nv = plan_count_variants(plan);
	uint32_t *all = calloc(nv + 1, sizeof *all);
	int rc;

	(void)load_ns;
	if (all == NULL) {
		bcg_error("out of memory");
		return BCG_EXIT_RUNTIME;
	}
	for (uint32_t i = 0; i < nv; i++)
		all[i] = i;
	rc = recorded_preflight(plan, path, o, all, nv);
	free(all);
	return rc;
}

int recorded_replay(const plan_t *plan, const char *path, const struct recorded_opts *o)
{
	uint32_t nv = plan_count_variants(plan), n = 0;
	uint32_t *run_v = calloc(nv + 1, sizeof *run_v);
	char msg[400];
	int rc;

	if (run_v == NULL) {
		bcg_error("out of memory");
		return BCG_EXIT_RUNTIME;
	}
	if (o->variant != NULL) {
		uint32_t vi = recorded_find_variant(plan, o->variant, msg, sizeof msg);
		if (vi == PLAN_NONE) {
			bcg_error("%s: --variant: %s", path, msg);
			free(run_v);
			return BCG_EXIT_USAGE;
		}
		run_v[n++] = vi;
	} else {
		for (uint32_t i = 0; i < nv; i++)
			run_v[n++] = i;
	}
	rc = recorded_preflight(plan, path, o, run_v, n);
	free(run_v);
	return rc;
}

#endif /* HAVE_CUDA */
