/*
 * rebuild.c - a recorded plan made live again: modules, allocations,
 * graphs rebuilt from their nodes, eager launches (rebuild.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend-cuda.h"
#include "cmd.h"
#include "engine/instantiate.h"
#include "engine/nvtx.h"
#include "rebuild.h"
#include "util.h"

/* Dynamic shared memory above this needs the function's opt-in. */

/* Host bytes generated at a time for --fill random. */
#define RR_FILL_CHUNK (4u << 20)

/* The driver entry points, by the version the toolkit's header declares. */
struct rr_driver {
	CUresult (*module_load_data)(CUmodule *, const void *);
	CUresult (*module_unload)(CUmodule);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*func_get_param_info)(CUfunction, size_t, size_t *, size_t *);
	CUresult (*func_get_name)(const char **, CUfunction);
	CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*mem_granularity)(size_t *, const CUmemAllocationProp *,
	                            CUmemAllocationGranularity_flags);
	CUresult (*mem_address_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
	                                unsigned long long);
	CUresult (*mem_address_free)(CUdeviceptr, size_t);
	CUresult (*mem_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
	                       unsigned long long);
	CUresult (*mem_release)(CUmemGenericAllocationHandle);
	CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
	                    unsigned long long);
	CUresult (*mem_unmap)(CUdeviceptr, size_t);
	CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
	CUresult (*graph_add_kernel_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
	                                  const CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*kernel_node_set_attribute)(CUgraphNode, CUkernelNodeAttrID,
	                                      const CUkernelNodeAttrValue *);
	CUresult (*kernel_node_get_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*kernel_node_get_attribute)(CUgraphNode, CUkernelNodeAttrID,
	                                      CUkernelNodeAttrValue *);
	CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
	CUresult (*memset_d2d8)(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
	CUresult (*memset_d2d16)(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream);
	CUresult (*memset_d2d32)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
	CUresult (*get_error_name)(CUresult, const char **);
	CUresult (*func_load)(CUfunction);   /* may be NULL (before CUDA 12.4) */
	/* cuFuncGetParamCount, from drivers of CUDA 13.2 on (the toolkit's
	 * header may not declare it yet); NULL before */
	CUresult (*func_get_param_count)(CUfunction, size_t *);
};

struct rr_module {
	int      state;         /* 0 not tried, 1 loaded, -1 failed */
	CUmodule mod;
	char     why[256];
};

struct rr_function {
	int        state;       /* 0 not tried, 1 ready, -1 failed */
	CUfunction fn;
	uint32_t   shmem_set;   /* dynamic shared memory opted in to */
	char       why[256];
};

/* Ranges held for the recorded allocations before CUDA starts
 * (rr_hold_ranges). */
#define RR_HOLD_ALIGN (UINT64_C(2) << 20)

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000   /* Linux 4.17; older kernels take it as a hint */
#endif

struct rr_hold_piece {
	uint64_t lo, hi;
};

struct rr_hold {
	struct rr_hold_piece *p;
	uint32_t              n, cap;
	uint64_t              bytes;
	uint32_t              missed;
};

/* A reserved, mapped range holding one or more recorded allocations. */
struct rr_region {
	uint64_t                     want;     /* the recorded range, aligned */
	uint64_t                     size;
	CUdeviceptr                  got;
	CUmemGenericAllocationHandle handle;
	int                          reserved;
	int                          created;
	int                          mapped;
	char                         why[320];  /* not at WANT: why */
};

/* A launch ready to run or become a node: parameters patched, addresses
 * translated, host buffers of copies pinned. */
struct rr_launch {
	int         state;      /* 0 not prepared, 1 ready, -1 failed */
	uint8_t    *args;
	void      **argv;       /* one pointer into ARGS per parameter */
	CUdeviceptr dst;
	CUdeviceptr src;
	void       *host;       /* pinned: a copy's host side */
};

struct rr_graph {
	int             state;  /* 0 not built, 1 ready, -1 drifted unbuildable */
	cudaGraph_t     graph;
	cudaGraphExec_t exec;
};

struct rr_session {
	const plan_t       *plan;
	void               *flush;         /* replay --flush-l2's buffer */
	size_t              flush_bytes;
	struct rr_opts      opts;
	struct rr_driver    d;
	struct rr_info      info;
	int                 device;
	cudaStream_t        stream;
	struct nvtx        *nvtx;

	uint32_t            nmodules;
	struct rr_module   *modules;
	uint32_t            nfunctions;
	struct rr_function *functions;
	uint32_t            nallocs;
	uint64_t           *alloc_base;    /* each allocation's address here; 0
	                                      for another device's */
	uint32_t           *alloc_region;  /* its region; UINT32_MAX another device's */
	uint32_t            nregions;
	struct rr_region   *regions;
	uint32_t            nlaunches;
	struct rr_launch   *launches;
	uint32_t            nsegments;
	struct rr_graph    *graphs;
	nvtx_string        *seg_names;
	nvtx_string        *break_names;
};

static int rr_fail(struct rr_error *err, int exit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rr_fail(struct rr_error *err, int exit, const char *fmt, ...)
{
	char msg[sizeof err->msg];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(err->msg, msg, sizeof msg);
	err->exit = exit;
	return -1;
}

static const char *rr_cu_name(const struct rr_session *s, CUresult r)
{
	const char *name = NULL;

	if (s->d.get_error_name == NULL || s->d.get_error_name(r, &name) != CUDA_SUCCESS ||
	    name == NULL)
		return "CUDA_ERROR_UNKNOWN";
	return name;
}

#define RR_CU(call, what)                                                       \
	do {                                                                    \
		CUresult r_ = (call);                                           \
		if (r_ != CUDA_SUCCESS) {                                       \
			rr_fail(err, BCG_EXIT_RUNTIME, "%s: %s", what,          \
			        rr_cu_name(s, r_));                              \
			goto fail;                                              \
		}                                                               \
	} while (0)

#define RR_RT(call, what)                                                       \
	do {                                                                    \
		cudaError_t e_ = (call);                                        \
		if (e_ != cudaSuccess) {                                        \
			rr_fail(err, BCG_EXIT_RUNTIME, "%s: %s (%s)", what,     \
			        cudaGetErrorString(e_), cudaGetErrorName(e_));   \
			goto fail;                                              \
		}                                                               \
	} while (0)

/* The first driver version with cuFuncGetParamCount. */
#define RR_PARAM_COUNT_VERSION 13020

static int rr_load_driver(struct rr_driver *d, int version, struct rr_error *err)
{
	static const struct { const char *name; size_t at; } table[] = {
#define RR_E(sym, field) { sym, offsetof(struct rr_driver, field) }
		RR_E("cuModuleLoadData", module_load_data),
		RR_E("cuModuleUnload", module_unload),
		RR_E("cuModuleGetFunction", module_get_function),
		RR_E("cuFuncGetParamInfo", func_get_param_info),
		RR_E("cuFuncGetName", func_get_name),
		RR_E("cuFuncSetAttribute", func_set_attribute),
		RR_E("cuMemGetAllocationGranularity", mem_granularity),
		RR_E("cuMemAddressReserve", mem_address_reserve),
		RR_E("cuMemAddressFree", mem_address_free),
		RR_E("cuMemCreate", mem_create),
		RR_E("cuMemRelease", mem_release),
		RR_E("cuMemMap", mem_map),
		RR_E("cuMemUnmap", mem_unmap),
		RR_E("cuMemSetAccess", mem_set_access),
		RR_E("cuGraphAddKernelNode", graph_add_kernel_node),
		RR_E("cuGraphKernelNodeSetAttribute", kernel_node_set_attribute),
		RR_E("cuGraphKernelNodeGetParams", kernel_node_get_params),
		RR_E("cuGraphKernelNodeGetAttribute", kernel_node_get_attribute),
		RR_E("cuLaunchKernelEx", launch_kernel_ex),
		RR_E("cuMemsetD2D8Async", memset_d2d8),
		RR_E("cuMemsetD2D16Async", memset_d2d16),
		RR_E("cuMemsetD2D32Async", memset_d2d32),
		RR_E("cuGetErrorName", get_error_name),
#undef RR_E
	};

	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		void *fn = cuda_driver_entry(table[i].name);
		if (fn == NULL)
			return rr_fail(err, BCG_EXIT_RUNTIME, "the CUDA driver lacks %s",
			               table[i].name);
		memcpy((char *)d + table[i].at, &fn, sizeof fn);
	}
	/* With lazy loading (the default since CUDA 12.2) a function is
	 * loaded at its first use: load it at once, so that a failure is the
	 * function's and not the first launch's. */
	{
		void *fn = cuda_driver_entry("cuFuncLoad");
		memcpy(&d->func_load, &fn, sizeof fn);
	}
	/* A function's parameter count, asked of drivers that have it, and
	 * only of those: a look-up a driver cannot answer is not made. */
	if (version >= RR_PARAM_COUNT_VERSION) {
		void *fn = NULL;
		enum cudaDriverEntryPointQueryResult q;
		if (cudaGetDriverEntryPointByVersion("cuFuncGetParamCount", &fn,
		                                     RR_PARAM_COUNT_VERSION, cudaEnableDefault,
		                                     &q) != cudaSuccess ||
		    q != cudaDriverEntryPointSuccess)
			fn = NULL;
		memcpy(&d->func_get_param_count, &fn, sizeof fn);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Allocations.                                                            */

static uint64_t rr_round_down(uint64_t v, uint64_t g) { return v / g * g; }
static uint64_t rr_round_up(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }

struct rr_span {
	uint64_t lo, hi;
	uint32_t alloc;
};

static int rr_span_cmp(const void *a, const void *b)
{
	const struct rr_span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* What of this process's memory map (Linux: /proc/self/maps) overlaps
 * [LO, HI), in words, into BUF; "" when nothing does or the map cannot be
 * read. */
static void rr_host_overlap(uint64_t lo, uint64_t hi, char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	buf[0] = '\0';
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long long a = 0, b = 0;
		char perm[8] = "", path[256] = "";
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255[^\n]", &a, &b, perm, path) < 3)
			continue;
		if (b <= lo || a >= hi)
			continue;
		snprintf(buf, len, "this process already maps 0x%llx-0x%llx (%s%s%s)", a, b, perm,
		         path[0] ? " " : ", anonymous", path);
		break;
	}
	fclose(f);
}

static int rr_hold_piece_cmp(const void *a, const void *b)
{
	const struct rr_hold_piece *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int rr_hold_add(struct rr_hold *h, uint64_t lo, uint64_t hi)
{
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? 2 * h->cap : 64;
		struct rr_hold_piece *p = realloc(h->p, cap * sizeof *p);
		if (p == NULL)
			return -1;
		h->p = p;
		h->cap = cap;
	}
	h->p[h->n].lo = lo;
	h->p[h->n].hi = hi;
	h->n++;
	return 0;
}

struct rr_hold *rr_hold_ranges(const plan_t *plan)
{
	uint32_t na = plan_count_allocs(plan), nspan = 0;
	struct rr_hold_piece *span = calloc(na + 1, sizeof *span);
	struct rr_hold *h = calloc(1, sizeof *h);

	if (span == NULL || h == NULL)
		goto fail;
	for (uint32_t i = 0; i < na; i++) {
		const struct plan_alloc *a = plan_get_alloc(plan, i);
		uint64_t bytes = a->bytes ? a->bytes : 1;
		if (a->address > UINT64_MAX - bytes - RR_HOLD_ALIGN)
			continue;
		span[nspan].lo = a->address / RR_HOLD_ALIGN * RR_HOLD_ALIGN;
		span[nspan].hi = (a->address + bytes + RR_HOLD_ALIGN - 1) / RR_HOLD_ALIGN *
		                 RR_HOLD_ALIGN;
		nspan++;
	}
	qsort(span, nspan, sizeof *span, rr_hold_piece_cmp);
	for (uint32_t i = 0; i < nspan;) {
		uint64_t lo = span[i].lo, hi = span[i].hi;
		void *q;
		for (i++; i < nspan && span[i].lo <= hi; i++)
			if (span[i].hi > hi)
				hi = span[i].hi;
		/* Only where nothing is mapped: MAP_FIXED_NOREPLACE never
		 * replaces a mapping; a kernel that takes it as a hint may
		 * put it elsewhere, which is then let go. */
		q = mmap((void *)(uintptr_t)lo, (size_t)(hi - lo), PROT_NONE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (q == MAP_FAILED) {
			h->missed++;
			continue;
		}
		if ((uint64_t)(uintptr_t)q != lo || rr_hold_add(h, lo, hi) != 0) {
			munmap(q, (size_t)(hi - lo));
			h->missed++;
			continue;
		}
		h->bytes += hi - lo;
	}
	free(span);
	if (h->n == 0 && h->missed == 0) {
		free(h->p);
		free(h);
		return NULL;
	}
	return h;
fail:
	free(span);
	free(h);
	return NULL;
}

/* Let the held bytes of [LO, HI) go (and only those: the rest of a piece
 * stays held). */
static void rr_hold_let_go(struct rr_hold *h, uint64_t lo, uint64_t hi)
{
	uint32_t n;

	if (h == NULL)
		return;
	n = h->n;
	for (uint32_t i = 0; i < n; i++) {
		struct rr_hold_piece *p = &h->p[i];
		uint64_t a = p->lo > lo ? p->lo : lo, b = p->hi < hi ? p->hi : hi, right;
		if (a >= b)
			continue;
		munmap((void *)(uintptr_t)a, (size_t)(b - a));
		h->bytes -= b - a;
		right = p->hi;
		p->hi = a;
		if (b < right && rr_hold_add(h, b, right) != 0) {
			/* no room to remember the rest: let it go too */
			munmap((void *)(uintptr_t)b, (size_t)(right - b));
			h->bytes -= right - b;
		}
	}
}

void rr_hold_release(struct rr_hold *h)
{
	if (h == NULL)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		if (h->p[i].hi > h->p[i].lo)
			munmap((void *)(uintptr_t)h->p[i].lo, (size_t)(h->p[i].hi - h->p[i].lo));
	free(h->p);
	free(h);
}

uint64_t rr_hold_bytes(const struct rr_hold *h)
{
	return h != NULL ? h->bytes : 0;
}

uint32_t rr_hold_missed(const struct rr_hold *h)
{
	return h != NULL ? h->missed : 0;
}

/* Reserve REGION's range: at its recorded address where that is free
 * (unless told to rebase), else anywhere; then back it and open it.
 * cuMemAddressReserve's address is a hint: the driver may give another
 * range, which is then let go. The hint is tried with the granularity as
 * the alignment (the range and its size are multiples of it), then with
 * the driver's default alignment, which some drivers need to honour a
 * hint. Where neither lands, R->WHY says what the driver did. */
static int rr_map_region(struct rr_session *s, struct rr_region *r, struct rr_error *err)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUdeviceptr p = 0;
	CUresult res;

	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = s->device;
	r->why[0] = '\0';
	if (!(s->opts.flags & RR_REBASE)) {
		/* held since before CUDA started: free it for the driver now */
		rr_hold_let_go(s->opts.hold, r->want, r->want + r->size);
		for (int k = 0; k < 2 && p == 0; k++) {
			size_t align = k == 0 ? s->info.granularity : 0, at = strlen(r->why);
			CUdeviceptr q = 0;
			res = s->d.mem_address_reserve(&q, r->size, align, r->want, 0);
			if (res == CUDA_SUCCESS && q == r->want) {
				p = q;
				break;
			}
			if (res == CUDA_SUCCESS)   /* a hint only: the driver put it elsewhere */
				s->d.mem_address_free(q, r->size);
			snprintf(r->why + at, sizeof r->why - at, "%s", k == 0 ? "asked for it, the "
			         "driver " : "; with its default alignment, ");
			at = strlen(r->why);
			if (res == CUDA_SUCCESS)
				snprintf(r->why + at, sizeof r->why - at, "offered 0x%llx",
				         (unsigned long long)q);
			else
				snprintf(r->why + at, sizeof r->why - at, "answered %s",
				         rr_cu_name(s, res));
		}
		if (p == 0) {
			char host[200];
			size_t k = strlen(r->why);
			rr_host_overlap(r->want, r->want + r->size, host, sizeof host);
			snprintf(r->why + k, sizeof r->why - k, "; %s", host[0] ? host
			         : "no mapping of this process overlaps it");
		} else {
			r->why[0] = '\0';
		}
	}
	if (p == 0)
		RR_CU(s->d.mem_address_reserve(&p, r->size, s->info.granularity, 0, 0),
		      "reserving device addresses (cuMemAddressReserve)");
	if (p == r->want && (s->opts.flags & RR_REBASE)) {
		/* told to rebase, given the recorded range anyway: take the
		 * next one, then let this go */
		CUdeviceptr q = 0;
		res = s->d.mem_address_reserve(&q, r->size, s->info.granularity, 0, 0);
		s->d.mem_address_free(p, r->size);
		p = q;
		RR_CU(res, "reserving device addresses (cuMemAddressReserve)");
	}
	r->got = p;
	r->reserved = 1;
	RR_CU(s->d.mem_create(&r->handle, r->size, &prop, 0),
	      "allocating device memory (cuMemCreate)");
	r->created = 1;
	RR_CU(s->d.mem_map(p, r->size, 0, r->handle, 0), "cuMemMap");
	r->mapped = 1;
	memset(&access, 0, sizeof access);
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	RR_CU(s->d.mem_set_access(p, r->size, &access, 1), "cuMemSetAccess");
	return 0;
fail:
	return -1;
}

static int rr_make_allocs(struct rr_session *s, struct rr_error *err)
{
	CUmemAllocationProp prop;
	struct rr_span *spans = NULL;
	uint32_t n = 0;
	size_t g = 0;
	int rc = -1;

	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = s->device;
	RR_CU(s->d.mem_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	      "cuMemGetAllocationGranularity");
	s->info.granularity = g;
	s->nallocs = plan_count_allocs(s->plan);
	s->alloc_base = calloc(s->nallocs + 1, sizeof *s->alloc_base);
	s->alloc_region = calloc(s->nallocs + 1, sizeof *s->alloc_region);
	spans = calloc(s->nallocs + 1, sizeof *spans);
	s->regions = calloc(s->nallocs + 1, sizeof *s->regions);
	if (s->alloc_base == NULL || s->alloc_region == NULL || spans == NULL ||
	    s->regions == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < s->nallocs; i++) {
		const struct plan_alloc *a = plan_get_alloc(s->plan, i);
		uint64_t bytes = a->bytes ? a->bytes : 1;
		s->alloc_region[i] = UINT32_MAX;
		if ((int64_t)a->device != s->device)
			continue;   /* another session's */
		spans[n].lo = rr_round_down(a->address, g);
		spans[n].hi = rr_round_up(a->address + bytes, g);
		spans[n].alloc = i;
		n++;
		s->info.alloc_bytes += a->bytes;
	}
	qsort(spans, n, sizeof *spans, rr_span_cmp);
	/* Allocations that share a granule share a region, so that their
	 * distance stays what it was. */
	for (uint32_t i = 0; i < n; i++) {
		struct rr_region *r = s->nregions ? &s->regions[s->nregions - 1] : NULL;
		if (r != NULL && spans[i].lo < r->want + r->size) {
			if (spans[i].hi > r->want + r->size)
				r->size = spans[i].hi - r->want;
			continue;
		}
		r = &s->regions[s->nregions++];
		r->want = spans[i].lo;
		r->size = spans[i].hi - spans[i].lo;
	}
	for (uint32_t i = 0; i < s->nregions; i++)
		if (rr_map_region(s, &s->regions[i], err) != 0)
			goto fail;
	for (uint32_t i = 0, k = 0; i < n; i++) {
		const struct plan_alloc *a = plan_get_alloc(s->plan, spans[i].alloc);
		while (spans[i].lo >= s->regions[k].want + s->regions[k].size)
			k++;
		s->alloc_base[spans[i].alloc] = s->regions[k].got + (a->address - s->regions[k].want);
		s->alloc_region[spans[i].alloc] = k;
		s->info.allocs++;
		if (s->regions[k].got == s->regions[k].want) {
			s->info.fixed++;
			continue;
		}
		s->info.rebased++;
		if (s->info.unplaced[0] == '\0' && s->regions[k].why[0] != '\0')
			snprintf(s->info.unplaced, sizeof s->info.unplaced, "allocation %u (0x%"
			         PRIx64 ", %" PRIu64 " bytes; range 0x%" PRIx64 " +0x%" PRIx64
			         ") not at its recorded address: %.300s", spans[i].alloc, a->address,
			         a->bytes, s->regions[k].want, s->regions[k].size, s->regions[k].why);
	}
	rc = 0;
fail:
	free(spans);
	return rc;
}

static uint64_t rr_splitmix(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int rr_fill(struct rr_session *s, struct rr_error *err)
{
	unsigned char *buf = NULL;
	int rc = -1;

	for (uint32_t i = 0; i < s->nallocs; i++) {
		const struct plan_alloc *a = plan_get_alloc(s->plan, i);
		void *dst = (void *)(uintptr_t)s->alloc_base[i];
		if (a->bytes == 0 || s->alloc_region[i] == UINT32_MAX)
			continue;
		if (s->opts.fill == RR_FILL_SNAPSHOT && (a->flags & PLAN_ALLOC_SNAPSHOT) &&
		    a->data != NULL) {
			RR_RT(cudaMemcpy(dst, a->data, a->bytes, cudaMemcpyHostToDevice),
			      "filling an allocation from the snapshot");
			s->info.snapshots++;
		} else if (s->opts.fill == RR_FILL_RANDOM) {
			/* each allocation its own stream of the seed: the same
			 * bytes whatever the others are */
			uint64_t state = s->opts.seed ^ (UINT64_C(0x2545f4914f6cdd1d) * (i + 1));
			if (buf == NULL && (buf = malloc(RR_FILL_CHUNK)) == NULL) {
				rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
				goto fail;
			}
			for (uint64_t at = 0; at < a->bytes; at += RR_FILL_CHUNK) {
				size_t k = a->bytes - at < RR_FILL_CHUNK ? (size_t)(a->bytes - at)
				                                         : RR_FILL_CHUNK;
				for (size_t j = 0; j < k; j += 8) {
					uint64_t w = rr_splitmix(&state);
					memcpy(buf + j, &w, k - j < 8 ? k - j : 8);
				}
				RR_RT(cudaMemcpy((char *)dst + at, buf, k, cudaMemcpyHostToDevice),
				      "filling an allocation with random bytes");
			}
		} else {
			RR_RT(cudaMemset(dst, 0, a->bytes), "zeroing an allocation");
		}
	}
	rc = 0;
fail:
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Modules, functions, launches.                                           */

/* Whether a load failed because this device cannot run the module (its
 * code is for another architecture, or PTX newer than the driver): a
 * drift, as for a script plan captured on another GPU. */
static int rr_foreign(CUresult r)
{
	return r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX ||
	       r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_IMAGE ||
	       r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

static int rr_module(struct rr_session *s, uint32_t mi, struct rr_error *err)
{
	struct rr_module *m = &s->modules[mi];
	const struct plan_module *pm = plan_get_module(s->plan, mi);
	CUresult r;

	if (m->state != 0)
		return 0;
	if (pm == NULL || !(pm->flags & PLAN_MODULE_IMAGE) || pm->image == NULL)
		return rr_fail(err, BCG_EXIT_USAGE, "module %u (%s) has no image: it cannot be "
		               "loaded", mi, pm != NULL && pm->name[0] ? pm->name : "unnamed");
	r = s->d.module_load_data(&m->mod, pm->image);
	if (r == CUDA_SUCCESS) {
		m->state = 1;
		return 0;
	}
	m->state = -1;
	snprintf(m->why, sizeof m->why, "module %u (%.60s) does not load on %.80s (sm_%d%d): %s", mi,
	         pm->name[0] ? pm->name : "unnamed", s->info.device, s->info.cc_major,
	         s->info.cc_minor, rr_cu_name(s, r));
	if (rr_foreign(r))
		return 0;
	return rr_fail(err, BCG_EXIT_RUNTIME, "%s", m->why);
}

/* Load function FI and check its parameter layout against the plan's. A
 * function that cannot be had here keeps the reason in its WHY. */
static int rr_function(struct rr_session *s, uint32_t fi, struct rr_error *err)
{
	struct rr_function *f = &s->functions[fi];
	const struct plan_function *pf = plan_get_function(s->plan, fi);
	CUresult r;

	if (f->state != 0)
		return 0;
	if (rr_module(s, pf->module, err) != 0)
		return -1;
	if (s->modules[pf->module].state < 0) {
		f->state = -1;
		snprintf(f->why, sizeof f->why, "%s", s->modules[pf->module].why);
		return 0;
	}
	r = s->d.module_get_function(&f->fn, s->modules[pf->module].mod, pf->name);
	if (r != CUDA_SUCCESS) {
		f->state = -1;
		snprintf(f->why, sizeof f->why, "module %u has no function %s: %s", pf->module,
		         pf->name, rr_cu_name(s, r));
		return 0;
	}
	if (s->d.func_load != NULL && (r = s->d.func_load(f->fn)) != CUDA_SUCCESS) {
		f->state = -1;
		snprintf(f->why, sizeof f->why, "%s does not load on %.80s: %s", pf->name,
		         s->info.device, rr_cu_name(s, r));
		if (rr_foreign(r))
			return 0;
		return rr_fail(err, BCG_EXIT_RUNTIME, "%s", f->why);
	}
	/* The parameters the driver lays out, compared with the recorded
	 * layout. Their number comes from cuFuncGetParamCount where the
	 * driver has it; else only the recorded parameters are asked for,
	 * since cuFuncGetParamInfo past the last one is an API error
	 * (CUDA_ERROR_INVALID_VALUE, which compute-sanitizer reports). A
	 * function with more parameters than recorded then goes unseen
	 * here; its module is the recorded image, byte for byte (its hash
	 * in the plan), so the recorder's driver laid out the same code. */
	if (s->d.func_get_param_count != NULL) {
		size_t count = 0;
		r = s->d.func_get_param_count(f->fn, &count);
		if (r != CUDA_SUCCESS)
			return rr_fail(err, BCG_EXIT_RUNTIME, "%s: counting its parameters "
			               "(cuFuncGetParamCount): %s", pf->name, rr_cu_name(s, r));
		if (count != pf->nparams) {
			f->state = -1;
			snprintf(f->why, sizeof f->why, "%s: the driver gives %zu parameters, %u "
			         "recorded", pf->name, count, pf->nparams);
			return 0;
		}
	}
	for (uint32_t i = 0; i < pf->nparams; i++) {
		size_t off = 0, size = 0;
		r = s->d.func_get_param_info(f->fn, i, &off, &size);
		if (r != CUDA_SUCCESS) {
			f->state = -1;
			snprintf(f->why, sizeof f->why, "%s: the driver gives no parameter %u (%s), "
			         "%u recorded", pf->name, i, rr_cu_name(s, r), pf->nparams);
			return 0;
		}
		if (pf->params[i].offset != off || pf->params[i].size != size) {
			f->state = -1;
			snprintf(f->why, sizeof f->why, "%s: parameter %u at byte %zu, %zu bytes; "
			         "recorded at %u, %u bytes", pf->name, i, off, size,
			         pf->params[i].offset, pf->params[i].size);
			return 0;
		}
	}
	f->state = 1;
	return 0;
}

/* An address of the recorded process as it is here. */
static int rr_addr(struct rr_session *s, const struct plan_addr *a, CUdeviceptr *out,
                   struct rr_error *err)
{
	if (a->alloc == PLAN_NONE || a->alloc >= s->nallocs)
		return rr_fail(err, BCG_EXIT_USAGE, "address 0x%" PRIx64 " lies in no recorded "
		               "allocation", a->offset);
	if (s->alloc_region[a->alloc] == UINT32_MAX)
		return rr_fail(err, BCG_EXIT_USAGE, "allocation %u was recorded on device %u, "
		               "not on device %d, whose work this is", a->alloc,
		               plan_get_alloc(s->plan, a->alloc)->device, s->device);
	*out = (CUdeviceptr)(s->alloc_base[a->alloc] + a->offset);
	return 0;
}

static int rr_prepare_launch(struct rr_session *s, uint32_t li, struct rr_error *err)
{
	struct rr_launch *l = &s->launches[li];
	const struct plan_launch *pl = plan_get_launch(s->plan, li);

	if (l->state != 0)
		return l->state > 0 ? 0 : rr_fail(err, BCG_EXIT_USAGE, "launch %u cannot be "
		                                  "prepared", li);
	l->state = -1;
	if (pl->type == PLAN_NODE_KERNEL) {
		const struct plan_function *pf = plan_get_function(s->plan, pl->function);
		struct rr_function *f = &s->functions[pl->function];
		if (rr_function(s, pl->function, err) != 0)
			return -1;
		if (f->state < 0)
			return 0;   /* the segment or break reports it */
		l->args = malloc(pl->nargs ? pl->nargs : 1);
		l->argv = calloc(pf->nparams + 1, sizeof *l->argv);
		if (l->args == NULL || l->argv == NULL)
			return rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		if (pl->nargs)
			memcpy(l->args, pl->args, pl->nargs);
		for (uint32_t p = 0; p < pl->npatches; p++) {
			CUdeviceptr a = 0;
			uint64_t w;
			if (rr_addr(s, &pl->patches[p].addr, &a, err) != 0)
				return rr_fail(err, BCG_EXIT_USAGE, "launch %u (%s): the parameter "
				               "word at byte %u: %s", li, pf->name,
				               pl->patches[p].byte, err->msg);
			w = (uint64_t)a;
			memcpy(l->args + pl->patches[p].byte, &w, sizeof w);
		}
		for (uint32_t p = 0; p < pf->nparams; p++)
			l->argv[p] = l->args + pf->params[p].offset;
		/* The opt-in the program made: its dynamic shared memory plus the
		 * function's static share may pass the 48 KiB default with a
		 * dynamic part below it (cuDNN's kernels do). Raised per
		 * function to the largest launch's, which every launch fits. */
		if (pl->shmem > 0 && pl->shmem > f->shmem_set) {
			RR_CU(s->d.func_set_attribute(f->fn,
			                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
			                              (int)pl->shmem),
			      "allowing the recorded dynamic shared memory (cuFuncSetAttribute)");
			f->shmem_set = pl->shmem;
		}
	} else if (pl->type == PLAN_NODE_MEMCPY) {
		/* A side in no allocation was host memory: the source's bytes as
		 * recorded (zeros when not kept), the destination a buffer of
		 * its own. */
		int src_host = pl->src.alloc == PLAN_NONE, dst_host = pl->dst.alloc == PLAN_NONE;
		if (src_host && dst_host)
			return rr_fail(err, BCG_EXIT_USAGE, "launch %u: a copy from host to host",
			               li);
		if (src_host || dst_host) {
			RR_RT(cudaMallocHost(&l->host, pl->bytes ? pl->bytes : 1),
			      "allocating pinned memory for a copy");
			memset(l->host, 0, pl->bytes);
			if (src_host && pl->data != NULL)
				memcpy(l->host, pl->data, pl->ndata < pl->bytes ? pl->ndata : pl->bytes);
		}
		if (src_host)
			l->src = (CUdeviceptr)(uintptr_t)l->host;
		else if (rr_addr(s, &pl->src, &l->src, err) != 0)
			return -1;
		if (dst_host)
			l->dst = (CUdeviceptr)(uintptr_t)l->host;
		else if (rr_addr(s, &pl->dst, &l->dst, err) != 0)
			return -1;
	} else if (pl->type == PLAN_NODE_MEMSET) {
		if (rr_addr(s, &pl->dst, &l->dst, err) != 0)
			return rr_fail(err, BCG_EXIT_USAGE, "launch %u (memset): %s", li, err->msg);
	} else {
		return rr_fail(err, BCG_EXIT_USAGE, "launch %u: a %s, which replay does not run",
		               li, plan_node_type_name(pl->type));
	}
	l->state = 1;
	return 0;
fail:
	return -1;
}

/* Run launch LI eagerly on the stream, with its recorded shape, flags
 * and (patched) parameters. */
static int rr_launch_eager(struct rr_session *s, uint32_t li, struct rr_error *err)
{
	const struct plan_launch *pl = plan_get_launch(s->plan, li);
	struct rr_launch *l = &s->launches[li];

	if (pl->type == PLAN_NODE_KERNEL) {
		CUlaunchAttribute attrs[3];
		CUlaunchConfig cfg;
		unsigned na = 0;
		memset(&cfg, 0, sizeof cfg);
		memset(attrs, 0, sizeof attrs);
		cfg.gridDimX = pl->grid[0];
		cfg.gridDimY = pl->grid[1];
		cfg.gridDimZ = pl->grid[2];
		cfg.blockDimX = pl->block[0];
		cfg.blockDimY = pl->block[1];
		cfg.blockDimZ = pl->block[2];
		cfg.sharedMemBytes = pl->shmem;
		cfg.hStream = (CUstream)s->stream;
		if (pl->cluster[0] != 0) {
			attrs[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
			attrs[na].value.clusterDim.x = pl->cluster[0];
			attrs[na].value.clusterDim.y = pl->cluster[1] ? pl->cluster[1] : 1;
			attrs[na].value.clusterDim.z = pl->cluster[2] ? pl->cluster[2] : 1;
			na++;
		}
		if (pl->flags & PLAN_LAUNCH_PDL) {
			attrs[na].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
			attrs[na].value.programmaticStreamSerializationAllowed = 1;
			na++;
		}
		if (pl->flags & PLAN_LAUNCH_COOP) {
			attrs[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
			attrs[na].value.cooperative = 1;
			na++;
		}
		cfg.attrs = na ? attrs : NULL;
		cfg.numAttrs = na;
		RR_CU(s->d.launch_kernel_ex(&cfg, s->functions[pl->function].fn, l->argv, NULL),
		      plan_get_function(s->plan, pl->function)->name);
	} else if (pl->type == PLAN_NODE_MEMCPY) {
		RR_RT(cudaMemcpyAsync((void *)(uintptr_t)l->dst, (const void *)(uintptr_t)l->src,
		                      pl->bytes, cudaMemcpyDefault, s->stream), "a recorded copy");
	} else {
		size_t pitch = pl->height > 1 ? pl->pitch : pl->width * pl->element;
		size_t h = pl->height ? pl->height : 1;
		CUstream st = (CUstream)s->stream;
		if (pl->element == 1)
			RR_CU(s->d.memset_d2d8(l->dst, pitch, (unsigned char)pl->value, pl->width, h, st),
			      "a recorded memset");
		else if (pl->element == 2)
			RR_CU(s->d.memset_d2d16(l->dst, pitch, (unsigned short)pl->value, pl->width, h,
			                        st), "a recorded memset");
		else
			RR_CU(s->d.memset_d2d32(l->dst, pitch, pl->value, pl->width, h, st),
			      "a recorded memset");
	}
	return 0;
fail:
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Session.                                                                */

int rr_open(const plan_t *plan, const struct rr_opts *opts, struct rr_session **out,
            struct rr_error *err)
{
	struct rr_session *s = calloc(1, sizeof *s);
	struct cudaDeviceProp prop;
	uint64_t t0;
	int n = 0, v = 0;

	*out = NULL;
	if (s == NULL)
		return rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
	s->plan = plan;
	s->opts = *opts;
	RR_RT(cudaGetDeviceCount(&n), "no usable CUDA device");
	if (n < 1) {
		rr_fail(err, BCG_EXIT_RUNTIME, "no CUDA device");
		goto fail;
	}
	s->device = opts->device;
	s->info.ordinal = opts->device;
	if (opts->device < 0 || opts->device >= n) {
		err->no_device = 1;
		rr_fail(err, BCG_EXIT_RUNTIME, "the work was recorded on CUDA device %d, and this "
		        "machine has %s%d device%s (0 to %d)", opts->device, n == 1 ? "only " : "",
		        n, n == 1 ? "" : "s", n - 1);
		goto fail;
	}
	RR_RT(cudaSetDevice(s->device), "cudaSetDevice");
	RR_RT(cudaFree(NULL), "creating the CUDA context");
	RR_RT(cudaGetDeviceProperties(&prop, s->device), "cudaGetDeviceProperties");
	snprintf(s->info.device, sizeof s->info.device, "%s", prop.name);
	s->info.cc_major = prop.major;
	s->info.cc_minor = prop.minor;
	RR_RT(cudaDriverGetVersion(&v), "cudaDriverGetVersion");
	s->info.cuda_driver = v;
	if (rr_load_driver(&s->d, v, err) != 0)
		goto fail;
	/* The recorded ranges first: before a stream, a module or any memory
	 * of ours takes address space the driver might give from them. */
	t0 = bcg_now_ns();
	if (rr_make_allocs(s, err) != 0)
		goto fail;
	s->info.memory_ns = bcg_now_ns() - t0;
	RR_RT(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");

	s->nmodules = plan_count_modules(plan);
	s->nfunctions = plan_count_functions(plan);
	s->nlaunches = plan_count_launches(plan);
	s->nsegments = plan_count_segments(plan);
	s->modules = calloc(s->nmodules + 1, sizeof *s->modules);
	s->functions = calloc(s->nfunctions + 1, sizeof *s->functions);
	s->launches = calloc(s->nlaunches + 1, sizeof *s->launches);
	s->graphs = calloc(s->nsegments + 1, sizeof *s->graphs);
	s->seg_names = calloc(s->nsegments + 1, sizeof *s->seg_names);
	s->break_names = calloc(plan_count_breakpoints(plan) + 1, sizeof *s->break_names);
	if (s->modules == NULL || s->functions == NULL || s->launches == NULL ||
	    s->graphs == NULL || s->seg_names == NULL || s->break_names == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto fail;
	}
	t0 = bcg_now_ns();
	if (rr_fill(s, err) != 0)
		goto fail;
	s->info.memory_ns += bcg_now_ns() - t0;
	if (opts->nvtx)
		s->nvtx = nvtx_open();
	*out = s;
	return 0;
fail:
	rr_close(s);
	return -1;
}

void rr_close(struct rr_session *s)
{
	if (s == NULL)
		return;
	if (s->stream != NULL || s->regions != NULL)
		cudaSetDevice(s->device);   /* another session's may be current */
	if (s->stream != NULL)
		cudaStreamSynchronize(s->stream);
	if (s->flush != NULL)
		cudaFree(s->flush);
	for (uint32_t i = 0; s->graphs != NULL && i < s->nsegments; i++) {
		if (s->graphs[i].exec != NULL)
			cudaGraphExecDestroy(s->graphs[i].exec);
		if (s->graphs[i].graph != NULL)
			cudaGraphDestroy(s->graphs[i].graph);
	}
	for (uint32_t i = 0; s->launches != NULL && i < s->nlaunches; i++) {
		free(s->launches[i].args);
		free(s->launches[i].argv);
		if (s->launches[i].host != NULL)
			cudaFreeHost(s->launches[i].host);
	}
	for (uint32_t i = 0; s->regions != NULL && i < s->nregions; i++) {
		struct rr_region *r = &s->regions[i];
		if (r->mapped)
			s->d.mem_unmap(r->got, r->size);
		if (r->created)
			s->d.mem_release(r->handle);
		if (r->reserved)
			s->d.mem_address_free(r->got, r->size);
	}
	for (uint32_t i = 0; s->modules != NULL && i < s->nmodules; i++)
		if (s->modules[i].state > 0)
			s->d.module_unload(s->modules[i].mod);
	if (s->stream != NULL)
		cudaStreamDestroy(s->stream);
	nvtx_close(s->nvtx);
	free(s->modules);
	free(s->functions);
	free(s->launches);
	free(s->graphs);
	free(s->seg_names);
	free(s->break_names);
	free(s->alloc_base);
	free(s->alloc_region);
	free(s->regions);
	free(s);
}

const struct rr_info *rr_get_info(const struct rr_session *s)
{
	return &s->info;
}

uint64_t rr_alloc_address(const struct rr_session *s, uint32_t alloc)
{
	return alloc < s->nallocs ? s->alloc_base[alloc] : 0;
}

int rr_alloc_placement(const struct rr_session *s, uint32_t alloc, const char **why)
{
	const struct rr_region *r;

	*why = "";
	if (alloc >= s->nallocs || s->alloc_region[alloc] == UINT32_MAX)
		return RR_PLACE_OTHER_DEVICE;
	r = &s->regions[s->alloc_region[alloc]];
	if (r->got == r->want)
		return RR_PLACE_RECORDED;
	*why = r->why;
	return RR_PLACE_REBASED;
}

/* Make the session's device the current one: sessions on several devices
 * share this thread. */
static int rr_use(struct rr_session *s, struct rr_error *err)
{
	RR_RT(cudaSetDevice(s->device), "cudaSetDevice");
	return 0;
fail:
	return -1;
}

int rr_read(struct rr_session *s, uint32_t alloc, uint64_t offset, void *dst, size_t bytes,
            struct rr_error *err)
{
	const struct plan_alloc *a = plan_get_alloc(s->plan, alloc);

	if (a == NULL || offset > a->bytes || bytes > a->bytes - offset ||
	    s->alloc_region[alloc] == UINT32_MAX)
		return rr_fail(err, BCG_EXIT_USAGE, "no %zu bytes at %" PRIu64 " of allocation %u "
		               "on device %d", bytes, offset, alloc, s->device);
	if (rr_use(s, err) != 0)
		return -1;
	RR_RT(cudaStreamSynchronize(s->stream), "waiting for the replay");
	RR_RT(cudaMemcpy(dst, (const void *)(uintptr_t)(s->alloc_base[alloc] + offset), bytes,
	                 cudaMemcpyDeviceToHost), "reading an allocation back");
	return 0;
fail:
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Graphs.                                                                 */

/* What a rebuilt kernel node holds, read back from the driver: the
 * parts a recorded segment's fingerprint hashes beyond the node's own
 * fields. */
struct rr_readback {
	uint32_t           cluster[3];
	uint32_t           npatches;
	struct plan_patch *patches;    /* the launch's patch words, mapped back */
	char               why[200];   /* a parameter byte that did not land */
};

/* ADDRESS here as a recorded (allocation, offset): in allocation PREFER
 * when it holds it, else the first that does; PLAN_NONE and the raw
 * address when none does. */
static struct plan_addr rr_unmap(const struct rr_session *s, uint64_t address, uint32_t prefer)
{
	struct plan_addr a = { PLAN_NONE, address };

	for (uint32_t k = prefer < s->nallocs ? 0 : 1; k <= s->nallocs; k++) {
		uint32_t i = k == 0 ? prefer : k - 1;
		const struct plan_alloc *pa = plan_get_alloc(s->plan, i);
		uint64_t bytes = pa->bytes ? pa->bytes : 1;
		if (i >= s->nallocs)
			break;
		if (s->alloc_region[i] == UINT32_MAX)
			continue;
		if (address >= s->alloc_base[i] && address - s->alloc_base[i] < bytes) {
			a.alloc = i;
			a.offset = address - s->alloc_base[i];
			return a;
		}
	}
	return a;
}

/* Cluster dimensions as they act: none, or x, y, z with 0 read as 1. */
static void rr_cluster_norm(const uint32_t *in, uint32_t *out)
{
	for (int k = 0; k < 3; k++)
		out[k] = in[k] ? in[k] : 1;
	if (out[0] == 1 && out[1] == 1 && out[2] == 1)
		out[0] = out[1] = out[2] = 0;
}

/* Read kernel node NODE back into GOT (name, launch shape) and RB
 * (cluster, the words the recorded patches name, mapped back to
 * allocations), and compare its parameter bytes with what launch LI put
 * there. */
static int rr_read_kernel(struct rr_session *s, CUgraphNode node, uint32_t li,
                          struct plan_node *got, struct rr_readback *rb, struct rr_error *err)
{
	const struct plan_launch *pl = plan_get_launch(s->plan, li);
	const struct plan_function *pf = plan_get_function(s->plan, pl->function);
	const struct rr_launch *l = &s->launches[li];
	CUDA_KERNEL_NODE_PARAMS p;
	CUkernelNodeAttrValue v;
	const char *name = NULL;
	uint8_t *buf = NULL;
	int rc = -1;

	memset(&p, 0, sizeof p);
	RR_CU(s->d.kernel_node_get_params(node, &p), "reading a rebuilt node back "
	      "(cuGraphKernelNodeGetParams)");
	if (p.func == NULL || s->d.func_get_name(&name, p.func) != CUDA_SUCCESS || name == NULL)
		name = "?";
	if ((got->kernel = strdup(name)) == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto fail;
	}
	got->grid[0] = p.gridDimX;
	got->grid[1] = p.gridDimY;
	got->grid[2] = p.gridDimZ;
	got->block[0] = p.blockDimX;
	got->block[1] = p.blockDimY;
	got->block[2] = p.blockDimZ;
	got->shmem = p.sharedMemBytes;
	memset(&v, 0, sizeof v);
	RR_CU(s->d.kernel_node_get_attribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v),
	      "reading a rebuilt node's cluster dimensions back");
	{
		uint32_t have[3] = { v.clusterDim.x, v.clusterDim.y, v.clusterDim.z };
		uint32_t a[3], b[3];
		rr_cluster_norm(have, a);
		rr_cluster_norm(pl->cluster, b);
		/* the recording's own spelling where they act alike */
		memcpy(rb->cluster, memcmp(a, b, sizeof a) == 0 ? pl->cluster : have,
		       sizeof rb->cluster);
	}
	buf = calloc(pl->nargs + 8, 1);
	rb->patches = calloc(pl->npatches + 1, sizeof *rb->patches);
	if (buf == NULL || rb->patches == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto fail;
	}
	for (uint32_t i = 0; p.kernelParams != NULL && i < pf->nparams; i++)
		memcpy(buf + pf->params[i].offset, p.kernelParams[i], pf->params[i].size);
	for (uint32_t k = 0; k < pl->nargs && rb->why[0] == '\0'; k++)
		if (buf[k] != l->args[k])
			snprintf(rb->why, sizeof rb->why, "parameter byte %u holds 0x%02x, the "
			         "recording (patched) 0x%02x", k, buf[k], l->args[k]);
	for (uint32_t k = 0; k < pl->npatches; k++) {
		uint64_t w;
		memcpy(&w, buf + pl->patches[k].byte, sizeof w);
		rb->patches[k].byte = pl->patches[k].byte;
		rb->patches[k].addr = rr_unmap(s, w, pl->patches[k].addr.alloc);
	}
	rb->npatches = pl->npatches;
	rc = 0;
fail:
	free(buf);
	return rc;
}

/* The recorded fingerprint (plan-format.md) of what was read back. */
static uint64_t rr_hash_u32(uint64_t h, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8),
	                       (unsigned char)(v >> 16), (unsigned char)(v >> 24) };
	return plan_hash64(b, sizeof b, h);
}

static uint64_t rr_fingerprint(const struct plan_segment *got, const struct rr_readback *rb)
{
	uint64_t h = PLAN_HASH64_INIT;
	uint32_t ndata = 0;

	h = rr_hash_u32(h, got->nnodes);
	for (uint32_t i = 0; i < got->nnodes; i++) {
		const struct plan_node *n = &got->nodes[i];
		int k = n->type == PLAN_NODE_KERNEL;
		size_t len = k ? strlen(n->kernel) : 0;
		h = rr_hash_u32(h, (uint32_t)n->type);
		h = rr_hash_u32(h, (uint32_t)len);
		h = plan_hash64(n->kernel, len, h);
		for (int j = 0; j < 3; j++)
			h = rr_hash_u32(h, k ? n->grid[j] : 0);
		for (int j = 0; j < 3; j++)
			h = rr_hash_u32(h, k ? n->block[j] : 0);
		for (int j = 0; j < 3; j++)
			h = rr_hash_u32(h, k ? rb[i].cluster[j] : 0);
		h = rr_hash_u32(h, k ? n->shmem : 0);
		h = rr_hash_u32(h, k ? rb[i].npatches : 0);
		for (uint32_t p = 0; k && p < rb[i].npatches; p++) {
			uint64_t off = rb[i].patches[p].addr.offset;
			h = rr_hash_u32(h, rb[i].patches[p].byte);
			h = rr_hash_u32(h, rb[i].patches[p].addr.alloc);
			h = rr_hash_u32(h, (uint32_t)off);
			h = rr_hash_u32(h, (uint32_t)(off >> 32));
		}
	}
	h = rr_hash_u32(h, got->nedges);
	for (uint32_t i = 0; i < got->nedges; i++) {
		const struct plan_edge *e = &got->edges[i];
		h = rr_hash_u32(h, e->from);
		h = rr_hash_u32(h, e->to);
		ndata += e->type != 0 || e->from_port != 0 || e->to_port != 0;
	}
	if (ndata == 0)
		return h;
	h = rr_hash_u32(h, ndata);
	for (uint32_t i = 0; i < got->nedges; i++) {
		const struct plan_edge *e = &got->edges[i];
		unsigned char b[3] = { e->type, e->from_port, e->to_port };
		if (e->type == 0 && e->from_port == 0 && e->to_port == 0)
			continue;
		h = rr_hash_u32(h, i);
		h = plan_hash64(b, sizeof b, h);
	}
	return h;
}

/* What the recorded fingerprint hashes beyond the node fields, compared:
 * the first difference in words, or "". */
static void rr_explain_launches(const struct rr_session *s, const struct plan_segment *want,
                                const struct plan_segment *got, const struct rr_readback *rb,
                                char *buf, size_t len)
{
	buf[0] = '\0';
	for (uint32_t i = 0; i < want->nnodes && i < got->nnodes; i++) {
		const struct plan_launch *pl;
		if (want->nodes[i].type != PLAN_NODE_KERNEL)
			continue;
		pl = plan_get_launch(s->plan, want->nodes[i].launch);
		if (memcmp(pl->cluster, rb[i].cluster, sizeof pl->cluster) != 0) {
			snprintf(buf, len, "node %u (%s): cluster [%u,%u,%u], rebuilt [%u,%u,%u]", i,
			         want->nodes[i].kernel, pl->cluster[0], pl->cluster[1], pl->cluster[2],
			         rb[i].cluster[0], rb[i].cluster[1], rb[i].cluster[2]);
			return;
		}
		for (uint32_t k = 0; k < pl->npatches && k < rb[i].npatches; k++) {
			const struct plan_addr *a = &pl->patches[k].addr, *b = &rb[i].patches[k].addr;
			if (a->alloc != b->alloc || a->offset != b->offset) {
				snprintf(buf, len, "node %u (%s): the parameter word at byte %u points at "
				         "allocation %u offset %" PRIu64 ", rebuilt %s%u offset %" PRIu64,
				         i, want->nodes[i].kernel, pl->patches[k].byte, a->alloc, a->offset,
				         b->alloc == PLAN_NONE ? "no allocation " : "allocation ",
				         b->alloc, b->offset);
				return;
			}
		}
		if (rb[i].why[0] != '\0') {
			snprintf(buf, len, "node %u (%s): %s", i, want->nodes[i].kernel, rb[i].why);
			return;
		}
	}
}

static int rr_build_graph(struct rr_session *s, uint32_t si, cudaGraphNode_t *nodes,
                          struct rr_error *err)
{
	const struct plan_segment *seg = plan_get_segment(s->plan, si);
	struct rr_graph *g = &s->graphs[si];
	cudaGraphEdgeData *data = NULL;
	cudaGraphNode_t *from = NULL, *to = NULL;
	char what[512];
	int rc = -1;

	RR_RT(cudaGraphCreate(&g->graph, 0), "cudaGraphCreate");
	for (uint32_t i = 0; i < seg->nnodes; i++) {
		const struct plan_node *n = &seg->nodes[i];
		const struct plan_launch *pl = n->launch != PLAN_NONE
		                               ? plan_get_launch(s->plan, n->launch) : NULL;
		const struct rr_launch *l = pl != NULL ? &s->launches[n->launch] : NULL;
		if (n->type == PLAN_NODE_EMPTY) {
			RR_RT(cudaGraphAddEmptyNode(&nodes[i], g->graph, NULL, 0), "cudaGraphAddEmptyNode");
		} else if (n->type == PLAN_NODE_KERNEL) {
			CUDA_KERNEL_NODE_PARAMS kp;
			memset(&kp, 0, sizeof kp);
			kp.func = s->functions[pl->function].fn;
			kp.gridDimX = pl->grid[0];
			kp.gridDimY = pl->grid[1];
			kp.gridDimZ = pl->grid[2];
			kp.blockDimX = pl->block[0];
			kp.blockDimY = pl->block[1];
			kp.blockDimZ = pl->block[2];
			kp.sharedMemBytes = pl->shmem;
			kp.kernelParams = l->argv;
			snprintf(what, sizeof what, "segment %u, node %u (%s, grid %ux%ux%u, block "
			         "%ux%ux%u, %u B of dynamic shared memory): cuGraphAddKernelNode", si, i,
			         plan_get_function(s->plan, pl->function)->name, pl->grid[0],
			         pl->grid[1], pl->grid[2], pl->block[0], pl->block[1], pl->block[2],
			         pl->shmem);
			RR_CU(s->d.graph_add_kernel_node((CUgraphNode *)&nodes[i], (CUgraph)g->graph,
			                                 NULL, 0, &kp), what);
			if (pl->cluster[0] != 0) {
				CUkernelNodeAttrValue v;
				memset(&v, 0, sizeof v);
				v.clusterDim.x = pl->cluster[0];
				v.clusterDim.y = pl->cluster[1] ? pl->cluster[1] : 1;
				v.clusterDim.z = pl->cluster[2] ? pl->cluster[2] : 1;
				RR_CU(s->d.kernel_node_set_attribute((CUgraphNode)nodes[i],
				                                     CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v),
				      "setting a node's cluster dimensions");
			}
			if (pl->flags & PLAN_LAUNCH_COOP) {
				CUkernelNodeAttrValue v;
				memset(&v, 0, sizeof v);
				v.cooperative = 1;
				RR_CU(s->d.kernel_node_set_attribute((CUgraphNode)nodes[i],
				                                     CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v),
				      "making a node cooperative");
			}
		} else if (n->type == PLAN_NODE_MEMCPY) {
			RR_RT(cudaGraphAddMemcpyNode1D(&nodes[i], g->graph, NULL, 0,
			                               (void *)(uintptr_t)l->dst,
			                               (const void *)(uintptr_t)l->src, pl->bytes,
			                               cudaMemcpyDefault), "cudaGraphAddMemcpyNode1D");
		} else {
			struct cudaMemsetParams mp;
			memset(&mp, 0, sizeof mp);
			mp.dst = (void *)(uintptr_t)l->dst;
			mp.elementSize = pl->element;
			mp.width = pl->width;
			mp.height = pl->height ? pl->height : 1;
			mp.pitch = pl->height > 1 ? pl->pitch : pl->width * pl->element;
			mp.value = pl->value;
			RR_RT(cudaGraphAddMemsetNode(&nodes[i], g->graph, NULL, 0, &mp),
			      "cudaGraphAddMemsetNode");
		}
	}
	if (seg->nedges > 0) {
		from = calloc(seg->nedges, sizeof *from);
		to = calloc(seg->nedges, sizeof *to);
		data = calloc(seg->nedges, sizeof *data);
		if (from == NULL || to == NULL || data == NULL) {
			rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
			goto fail;
		}
		for (uint32_t i = 0; i < seg->nedges; i++) {
			from[i] = nodes[seg->edges[i].from];
			to[i] = nodes[seg->edges[i].to];
			data[i].type = seg->edges[i].type;
			data[i].from_port = seg->edges[i].from_port;
			data[i].to_port = seg->edges[i].to_port;
		}
		/* One edge a call, each with its own type and ports. Found on
		 * the GPU (driver 580, CUDA 13.0, probed there): given an
		 * edge-data array of several edges in one call,
		 * cudaGraphAddDependencies made every edge programmatic (ports
		 * 1->0), the plain ones too, and the rebuilt segment drifted
		 * ("edge 1 (1->2): default, ports 0->0; rebuilt programmatic,
		 * ports 1->0"); one edge a call comes back as given. */
		for (uint32_t i = 0; i < seg->nedges; i++)
			RR_RT(cudaGraphAddDependencies(g->graph, &from[i], &to[i], &data[i], 1),
			      "adding a recorded edge (cudaGraphAddDependencies)");
	}
	rc = 0;
fail:
	free(from);
	free(to);
	free(data);
	return rc;
}

/* Read the rebuilt graph back, node by node and edge by edge, into GOT
 * (nodes in the plan's order) and RB, as the capture of a script plan
 * reads its graphs. */
static int rr_read_graph(struct rr_session *s, uint32_t si, const cudaGraphNode_t *nodes,
                         struct plan_segment *got, struct rr_readback *rb,
                         struct rr_error *err)
{
	const struct plan_segment *seg = plan_get_segment(s->plan, si);
	struct plan_node *gn = (struct plan_node *)got->nodes;
	struct plan_edge *ge = NULL;
	cudaGraphNode_t *from = NULL, *to = NULL;
	cudaGraphEdgeData *data = NULL;
	size_t nedges = 0, ntotal = 0;
	int rc = -1;

	RR_RT(cudaGraphGetNodes(s->graphs[si].graph, NULL, &ntotal), "cudaGraphGetNodes");
	for (uint32_t i = 0; i < seg->nnodes; i++) {
		enum cudaGraphNodeType t;
		RR_RT(cudaGraphNodeGetType(nodes[i], &t), "cudaGraphNodeGetType");
		gn[i].type = t == cudaGraphNodeTypeKernel ? PLAN_NODE_KERNEL
		           : t == cudaGraphNodeTypeMemcpy ? PLAN_NODE_MEMCPY
		           : t == cudaGraphNodeTypeMemset ? PLAN_NODE_MEMSET
		           : t == cudaGraphNodeTypeEmpty ? PLAN_NODE_EMPTY : PLAN_NODE_OTHER;
		gn[i].op = PLAN_NONE;
		gn[i].launch = seg->nodes[i].launch;
		if (gn[i].type == PLAN_NODE_KERNEL && seg->nodes[i].type == PLAN_NODE_KERNEL) {
			if (rr_read_kernel(s, (CUgraphNode)nodes[i], seg->nodes[i].launch, &gn[i],
			                   &rb[i], err) != 0)
				goto fail;
		} else if ((gn[i].kernel = strdup("")) == NULL) {
			rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
			goto fail;
		}
	}
	/* nodes the driver holds beyond the ones built would show as a
	 * count that differs */
	got->nnodes = seg->nnodes;
	if (ntotal != seg->nnodes) {
		rr_fail(err, BCG_EXIT_RUNTIME, "the rebuilt graph of segment %u holds %zu nodes, "
		        "%u built", si, ntotal, seg->nnodes);
		goto fail;
	}
	RR_RT(cudaGraphGetEdges(s->graphs[si].graph, NULL, NULL, NULL, &nedges), "cudaGraphGetEdges");
	if (nedges > 0) {
		from = calloc(nedges, sizeof *from);
		to = calloc(nedges, sizeof *to);
		data = calloc(nedges, sizeof *data);
		ge = calloc(nedges, sizeof *ge);
		if (from == NULL || to == NULL || data == NULL || ge == NULL) {
			rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
			goto fail;
		}
		RR_RT(cudaGraphGetEdges(s->graphs[si].graph, from, to, data, &nedges),
		      "cudaGraphGetEdges");
		for (size_t i = 0; i < nedges; i++) {
			uint32_t f = PLAN_NONE, t = PLAN_NONE;
			for (uint32_t k = 0; k < seg->nnodes; k++) {
				if (nodes[k] == from[i])
					f = k;
				if (nodes[k] == to[i])
					t = k;
			}
			ge[i].from = f;
			ge[i].to = t;
			ge[i].type = data[i].type;
			ge[i].from_port = data[i].from_port;
			ge[i].to_port = data[i].to_port;
		}
	}
	got->edges = ge;
	got->nedges = (uint32_t)nedges;
	ge = NULL;
	rc = 0;
fail:
	free(ge);
	free(from);
	free(to);
	free(data);
	return rc;
}

/* The edges in the order the plan lists them: the driver gives them in
 * its own order. Matched by (from, to, type, ports); unmatched ones stay
 * behind, so that the comparison names them. */
static void rr_order_edges(const struct plan_segment *want, struct plan_edge *got, uint32_t n)
{
	for (uint32_t i = 0; i < want->nedges && i < n; i++)
		for (uint32_t k = i; k < n; k++)
			if (got[k].from == want->edges[i].from && got[k].to == want->edges[i].to &&
			    got[k].type == want->edges[i].type &&
			    got[k].from_port == want->edges[i].from_port &&
			    got[k].to_port == want->edges[i].to_port) {
				struct plan_edge t = got[i];
				got[i] = got[k];
				got[k] = t;
				break;
			}
}

/* Whether SI's nodes can be rebuilt here; else the drift's reason. */
static int rr_segment_loadable(struct rr_session *s, uint32_t si, char *why, size_t whylen,
                               struct rr_error *err)
{
	const struct plan_segment *seg = plan_get_segment(s->plan, si);

	why[0] = '\0';
	for (uint32_t i = 0; i < seg->nnodes; i++) {
		const struct plan_node *n = &seg->nodes[i];
		const struct plan_launch *pl;
		if (n->type == PLAN_NODE_EMPTY)
			continue;
		if ((n->type != PLAN_NODE_KERNEL && n->type != PLAN_NODE_MEMCPY &&
		     n->type != PLAN_NODE_MEMSET) || n->launch == PLAN_NONE ||
		    (pl = plan_get_launch(s->plan, n->launch)) == NULL || pl->type != n->type)
			return rr_fail(err, BCG_EXIT_USAGE, "segment %u node %u: a %s node, which "
			               "replay does not rebuild", si, i, plan_node_type_name(n->type));
		if (rr_prepare_launch(s, n->launch, err) != 0)
			return -1;
		if (s->launches[n->launch].state < 0) {
			snprintf(why, whylen, "node %u: %.200s", i,
			         s->functions[pl->function].why);
			return 0;
		}
	}
	return 0;
}

int rr_instantiate_segment(struct rr_session *s, uint32_t si, struct rr_segment_report *rep,
                           struct rr_error *err)
{
	const struct plan_segment *want = plan_get_segment(s->plan, si);
	struct rr_graph *g = &s->graphs[si];
	cudaGraphNode_t *nodes = NULL;
	struct plan_node *gn = NULL;
	struct rr_readback *rb = NULL;
	struct plan_segment got;
	uint64_t t0;
	int rc = -1;

	memset(rep, 0, sizeof *rep);
	memset(&got, 0, sizeof got);
	rep->segment = si;
	if (rr_use(s, err) != 0)
		return -1;
	rep->plan_nodes = want->nnodes;
	rep->plan_fingerprint = want->fingerprint;
	if (g->state != 0)
		return rr_fail(err, BCG_EXIT_RUNTIME, "segment %u is already built", si);
	if (rr_segment_loadable(s, si, rep->reason, sizeof rep->reason, err) != 0)
		return -1;
	if (rep->reason[0] != '\0') {
		g->state = -1;
		rep->status = RR_DRIFT;
		return 0;
	}
	nodes = calloc(want->nnodes + 1, sizeof *nodes);
	gn = calloc(want->nnodes + 1, sizeof *gn);
	rb = calloc(want->nnodes + 1, sizeof *rb);
	if (nodes == NULL || gn == NULL || rb == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto out;
	}
	t0 = bcg_now_ns();
	if (rr_build_graph(s, si, nodes, err) != 0)
		goto out;
	rep->build_ns = bcg_now_ns() - t0;
	got = *want;
	got.nodes = gn;
	got.edges = NULL;
	got.nedges = 0;
	if (rr_read_graph(s, si, nodes, &got, rb, err) != 0)
		goto out;
	rr_order_edges(want, (struct plan_edge *)got.edges, got.nedges);
	got.fingerprint = rr_fingerprint(&got, rb);
	rep->nodes = got.nnodes;
	rep->fingerprint = got.fingerprint;
	/* The first difference in the words a script plan's instantiate
	 * uses; then what only a recorded segment has; then the hash. */
	instantiate_explain(want, &got, rep->reason, sizeof rep->reason);
	if (rep->reason[0] == '\0')
		rr_explain_launches(s, want, &got, rb, rep->reason, sizeof rep->reason);
	if (rep->reason[0] == '\0' && got.fingerprint != want->fingerprint)
		snprintf(rep->reason, sizeof rep->reason, "fingerprint %016" PRIx64 ", rebuilt %016"
		         PRIx64, want->fingerprint, got.fingerprint);
	rep->status = rep->reason[0] == '\0' ? RR_MATCH : RR_DRIFT;
	t0 = bcg_now_ns();
	RR_RT(cudaGraphInstantiate(&g->exec, g->graph, 0), "cudaGraphInstantiate");
	rep->instantiate_ns = bcg_now_ns() - t0;
	t0 = bcg_now_ns();
	RR_RT(cudaGraphUpload(g->exec, s->stream), "cudaGraphUpload");
	RR_RT(cudaStreamSynchronize(s->stream), "cudaStreamSynchronize");
	rep->upload_ns = bcg_now_ns() - t0;
	g->state = 1;
	rc = 0;
	goto out;
fail:
	rc = -1;
out:
	for (uint32_t i = 0; gn != NULL && i < want->nnodes; i++)
		free((char *)gn[i].kernel);
	for (uint32_t i = 0; rb != NULL && i < want->nnodes; i++)
		free(rb[i].patches);
	free((void *)got.edges);
	free(rb);
	free(gn);
	free(nodes);
	return rc;
}

int rr_segment_ready(const struct rr_session *s, uint32_t si)
{
	return si < s->nsegments && s->graphs[si].state > 0;
}

int rr_prepare_break(struct rr_session *s, uint32_t bi, struct rr_error *err)
{
	const struct plan_breakpoint *b = plan_get_breakpoint(s->plan, bi);

	if (rr_use(s, err) != 0)
		return -1;
	for (uint32_t i = 0; i < b->launch_count; i++) {
		uint32_t li = b->launch_first + i;
		const struct plan_launch *pl = plan_get_launch(s->plan, li);
		if (rr_prepare_launch(s, li, err) != 0)
			return -1;
		if (s->launches[li].state < 0)
			return rr_fail(err, BCG_EXIT_RUNTIME, "break %s: launch %u: %s", b->name, li,
			               pl->type == PLAN_NODE_KERNEL ? s->functions[pl->function].why
			                                            : "cannot be prepared");
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Replay.                                                                 */

void rr_run_release(struct rr_run *r)
{
	free(r->item_median);
	free(r->item_busy);
	memset(r, 0, sizeof *r);
}

/* The NVTX name of a segment: its first and last kernels. */
static nvtx_string rr_seg_name(struct rr_session *s, uint32_t si)
{
	const struct plan_segment *seg = plan_get_segment(s->plan, si);
	const char *first = "", *last = "";
	char text[320];

	if (s->nvtx == NULL)
		return NULL;
	if (s->seg_names[si] != NULL)
		return s->seg_names[si];
	for (uint32_t i = 0; i < seg->nnodes; i++)
		if (seg->nodes[i].type == PLAN_NODE_KERNEL) {
			if (first[0] == '\0')
				first = seg->nodes[i].kernel;
			last = seg->nodes[i].kernel;
		}
	snprintf(text, sizeof text, "seg %u %.140s..%.140s", si, first, last);
	s->seg_names[si] = nvtx_register(s->nvtx, text);
	return s->seg_names[si];
}

static nvtx_string rr_break_name(struct rr_session *s, uint32_t bi)
{
	char text[320];

	if (s->nvtx == NULL)
		return NULL;
	if (s->break_names[bi] == NULL) {
		snprintf(text, sizeof text, "break %s", plan_get_breakpoint(s->plan, bi)->name);
		s->break_names[bi] = nvtx_register(s->nvtx, text);
	}
	return s->break_names[bi];
}

/* One step of PV: events EV (NULL: none) before its first item and after
 * each; GAP_NS (NULL: none), paced "recorded", the idle time to put
 * before each item (0: none). */
static int rr_step(struct rr_session *s, const struct plan_variant *pv, uint64_t step,
                   cudaEvent_t *ev, const uint64_t *gap_ns, struct rr_error *err)
{
	char text[48];

	snprintf(text, sizeof text, "step %" PRIu64, step);
	nvtx_push(s->nvtx, NVTX_KIND_STEP, text);
	if (ev != NULL)
		RR_RT(cudaEventRecord(ev[0], s->stream), "cudaEventRecord");
	for (uint32_t i = 0; i < pv->nitems; i++) {
		uint32_t k = pv->items[i].index;
		if (gap_ns != NULL && gap_ns[i] != 0 &&
		    cuda_gap_stream(s->stream, gap_ns[i], err->msg, sizeof err->msg) != 0) {
			err->exit = BCG_EXIT_RUNTIME;
			goto fail;
		}
		if (pv->items[i].kind == PLAN_ITEM_SEGMENT) {
			nvtx_push_registered(s->nvtx, NVTX_KIND_SEGMENT, rr_seg_name(s, k),
			                     plan_get_segment(s->plan, k)->nnodes);
			RR_RT(cudaGraphLaunch(s->graphs[k].exec, s->stream), "cudaGraphLaunch");
		} else {
			const struct plan_breakpoint *b = plan_get_breakpoint(s->plan, k);
			nvtx_push_registered(s->nvtx, NVTX_KIND_BREAK, rr_break_name(s, k), 0);
			for (uint32_t l = 0; l < b->launch_count; l++)
				if (rr_launch_eager(s, b->launch_first + l, err) != 0) {
					char m[sizeof err->msg];
					snprintf(m, sizeof m, "%s", err->msg);
					rr_fail(err, BCG_EXIT_RUNTIME, "break %s: %s", b->name, m);
					nvtx_pop(s->nvtx);
					goto fail;
				}
		}
		nvtx_pop(s->nvtx);
		if (ev != NULL)
			RR_RT(cudaEventRecord(ev[i + 1], s->stream), "cudaEventRecord");
	}
	nvtx_pop(s->nvtx);
	return 0;
fail:
	nvtx_pop(s->nvtx);
	return -1;
}

static int rr_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double rr_median(double *v, uint64_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, rr_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The L2 flush (replay --flush-l2): a buffer of cuda_l2_flush_bytes,
 * written over with a memset before each step, outside its timed range.
 * Writing it leaves L2 holding the buffer's lines and none of the
 * step's: weights and activations come from device memory again, as in
 * a program whose other work (or other programs) run between its
 * steps. */
static int rr_flush_setup(struct rr_session *s, struct rr_error *err)
{
	int l2 = 0;

	if (s->flush != NULL)
		return 0;
	RR_RT(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, s->device),
	      "reading the L2 cache size");
	s->flush_bytes = cuda_l2_flush_bytes(l2);
	RR_RT(cudaMalloc(&s->flush, s->flush_bytes), "allocating the L2 flush buffer");
	return 0;
fail:
	s->flush = NULL;
	s->flush_bytes = 0;
	return -1;
}

static int rr_flush(struct rr_session *s, uint64_t step, struct rr_error *err)
{
	/* a byte that changes every step, so no write is ever a no-op */
	RR_RT(cudaMemsetAsync(s->flush, (int)(step & 0x7f) + 1, s->flush_bytes, s->stream),
	      "flushing L2");
	return 0;
fail:
	return -1;
}

/* The times of a step whose events EV have completed: its span into
 * *STEP_MS, item I's from its start to the next's into ITEMS[I * STRIDE]. */
static int rr_read_events(cudaEvent_t *ev, uint32_t nitems, double *step_ms, double *items,
                          uint64_t stride, struct rr_error *err)
{
	float ms = 0;

	RR_RT(cudaEventElapsedTime(&ms, ev[0], ev[nitems]), "cudaEventElapsedTime");
	*step_ms = ms;
	for (uint32_t i = 0; i < nitems; i++) {
		RR_RT(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]), "cudaEventElapsedTime");
		items[(uint64_t)i * stride] = ms;
	}
	return 0;
fail:
	return -1;
}

/*
 * Pacing by the recording (replay --pace recorded). The recorded run's
 * GPU idled between some items of a step: the program's host work
 * (Python, its own bookkeeping) kept the next launch from coming sooner.
 * Each item's recorded start offset (its GPU start after the step's
 * first item's, a median over the variant's steps) and the recorded time
 * of the item before it give that gap:
 *
 *   gap(i) = start(i) - (start(i-1) + recorded(i-1)),  when above 0.
 *
 * The replay puts the same idle time on the GPU before item i, as a gap
 * kernel on the stream (one thread spinning on the GPU's global timer)
 * rather than by the host waiting before it issues the item:
 *
 *  - the offsets were measured on the GPU's clock, between GPU events;
 *    a kernel that times itself on that clock reproduces the gap there,
 *    where a host wait adds the host's own jitter (a descheduled thread,
 *    a timer's slack) and the launch latency after it, neither of them
 *    the recording's;
 *  - the recorded gap already holds the original's launch latency (both
 *    ends are GPU times), so a host wait followed by a launch would count
 *    it twice;
 *  - the host still issues the whole step at once, so what is timed is
 *    the GPU: the replay's own host cost does not leak into the step.
 *
 * The gap kernel touches no memory, so L2 keeps what the step left in it
 * as it did while the recorded GPU idled; what differs is that one SM
 * runs one thread during the gap, and that the kernel itself costs a
 * launch's worth of GPU time, measured here once (RR_GAP_PROBES kernels
 * of no length queued behind a hold) and taken off every gap.
 *
 * Gaps, not start times: the replay does not hold item i back until
 * start(i) after the step's start. Doing so would pin a replay that runs
 * its items faster than the recording to the recording's timeline and
 * report it as equal; reproducing the gaps keeps what the items
 * themselves cost visible in the step time, which is then
 * (replayed items) + (recorded gaps). A break's own launches run back to
 * back as always: the host gaps inside a break are in its recorded time,
 * not between items, and are not reproduced.
 */
#define RR_GAP_PROBES 32

/* What one gap kernel of no length adds to a step on the GPU, in ns. */
static int rr_gap_cost(struct rr_session *s, uint64_t *cost_ns, struct rr_error *err)
{
	cudaEvent_t e[2] = { NULL, NULL };
	float ms = 0;
	int rc = -1;

	RR_RT(cudaEventCreate(&e[0]), "cudaEventCreate");
	RR_RT(cudaEventCreate(&e[1]), "cudaEventCreate");
	if (cuda_hold_stream(s->stream, 200.0, err->msg, sizeof err->msg) != 0) {
		err->exit = BCG_EXIT_RUNTIME;
		goto fail;
	}
	RR_RT(cudaEventRecord(e[0], s->stream), "cudaEventRecord");
	for (int i = 0; i < RR_GAP_PROBES; i++)
		if (cuda_gap_stream(s->stream, 0, err->msg, sizeof err->msg) != 0) {
			err->exit = BCG_EXIT_RUNTIME;
			goto fail;
		}
	RR_RT(cudaEventRecord(e[1], s->stream), "cudaEventRecord");
	RR_RT(cudaEventSynchronize(e[1]), "timing the gap kernel");
	RR_RT(cudaEventElapsedTime(&ms, e[0], e[1]), "cudaEventElapsedTime");
	*cost_ns = (uint64_t)((double)ms * 1e6 / RR_GAP_PROBES);
	rc = 0;
fail:
	for (int i = 0; i < 2; i++)
		if (e[i] != NULL)
			cudaEventDestroy(e[i]);
	return rc;
}

/* The idle time to put before each item of PV (GAP[i], 0: none), less
 * COST_NS each; RUN gets how many gaps the recording had and their total. */
static void rr_pace_gaps(const plan_t *plan, const struct plan_variant *pv, uint64_t cost_ns,
                         uint64_t *gap, struct rr_run *run)
{
	uint64_t prev_end = 0, total = 0;

	for (uint32_t i = 0; i < pv->nitems; i++) {
		const struct plan_item *it = &pv->items[i];
		uint64_t start, rec;
		plan_item_offsets(plan, it, &start, NULL);
		rec = it->kind == PLAN_ITEM_SEGMENT ? plan_get_segment(plan, it->index)->recorded_ns
		                                    : plan_get_breakpoint(plan, it->index)->recorded_ns;
		gap[i] = 0;
		if (i > 0 && prev_end != 0 && start > prev_end) {
			uint64_t g = start - prev_end;
			run->paced_gaps++;
			total += g;
			gap[i] = g > cost_ns ? g - cost_ns : 0;
		}
		/* an item without a recorded time ends the chain: no gap after it */
		prev_end = rec != 0 ? start + rec : 0;
	}
	run->paced_ms = (double)total / 1e6;
	run->gap_cost_us = (double)cost_ns / 1e3;
}

/* Steps in flight at once when paced "none": each has its own events,
 * read back when the step RR_WINDOW later needs them. */
#define RR_WINDOW 8

int rr_replay_variant(struct rr_session *s, uint32_t vi, const struct rr_replay *r,
                      struct rr_run *run, struct rr_error *err)
{
	const struct plan_variant *pv = plan_get_variant(s->plan, vi);
	uint64_t steps = r->steps, warmup = r->warmup;
	uint32_t nbusy = r->busy_steps, window = r->pace == RR_PACE_NONE ? RR_WINDOW : 1;
	cudaEvent_t *ev = NULL;
	double *step_ms = NULL, *host_ms = NULL, *item_ms = NULL, *busy_ms = NULL,
	       *ibusy_ms = NULL;
	double host_max = 0;
	uint64_t *gaps = NULL;
	int rc = -1;

	memset(run, 0, sizeof *run);
	if (pv == NULL)
		return rr_fail(err, BCG_EXIT_USAGE, "no variant %u", vi);
	if ((int64_t)pv->device != s->device)
		return rr_fail(err, BCG_EXIT_USAGE, "variant %lld was recorded on device %u, not "
		               "on this session's device %d", (long long)pv->tokens, pv->device,
		               s->device);
	if (rr_use(s, err) != 0)
		return -1;
	for (uint32_t i = 0; i < pv->nitems; i++) {
		uint32_t k = pv->items[i].index;
		if (pv->items[i].kind == PLAN_ITEM_BREAK) {
			if (rr_prepare_break(s, k, err) != 0)
				return -1;
		} else if (!rr_segment_ready(s, k)) {
			if (s->graphs[k].state == 0) {
				struct rr_segment_report rep;
				if (rr_instantiate_segment(s, k, &rep, err) != 0)
					return -1;
				if (rep.status != RR_DRIFT || rr_segment_ready(s, k))
					continue;
				return rr_fail(err, BCG_EXIT_RUNTIME, "segment %u cannot be rebuilt "
				               "here: %s", k, rep.reason);
			}
			return rr_fail(err, BCG_EXIT_RUNTIME, "segment %u cannot be rebuilt here", k);
		}
	}
	if (r->flush_l2 && rr_flush_setup(s, err) != 0)
		return -1;
	ev = calloc((size_t)(pv->nitems + 1) * window, sizeof *ev);
	step_ms = calloc(steps + 1, sizeof *step_ms);
	host_ms = calloc(steps + 1, sizeof *host_ms);
	item_ms = calloc((pv->nitems + 1) * (steps + 1), sizeof *item_ms);
	busy_ms = calloc((size_t)nbusy + 1, sizeof *busy_ms);
	ibusy_ms = calloc((size_t)(pv->nitems + 1) * (nbusy + 1), sizeof *ibusy_ms);
	run->item_median = calloc(pv->nitems + 1, sizeof *run->item_median);
	if (ev == NULL || step_ms == NULL || host_ms == NULL || item_ms == NULL ||
	    busy_ms == NULL || ibusy_ms == NULL || run->item_median == NULL) {
		rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
		goto fail;
	}
	run->l2_bytes = r->flush_l2 ? s->flush_bytes : 0;
	if (r->pace == RR_PACE_RECORDED) {
		uint64_t cost = 0;
		if ((gaps = calloc(pv->nitems + 1, sizeof *gaps)) == NULL) {
			rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
			goto fail;
		}
		if (rr_gap_cost(s, &cost, err) != 0)
			goto fail;
		rr_pace_gaps(s->plan, pv, cost, gaps, run);
	}
	for (uint32_t i = 0; i < (pv->nitems + 1) * window; i++)
		RR_RT(cudaEventCreate(&ev[i]), "cudaEventCreate");
	for (uint64_t w = 0; w < warmup; w++)
		if ((r->flush_l2 && rr_flush(s, w, err) != 0) || rr_step(s, pv, w, NULL, gaps, err) != 0)
			goto fail;
	RR_RT(cudaStreamSynchronize(s->stream), "waiting for the warm-up");
	/* The timed pass. Paced "step" (the default), each step is waited
	 * for before the next is issued; paced "recorded", likewise, with the
	 * recorded gaps put before its items (the warm-up's too); paced
	 * "none", up to RR_WINDOW steps are in flight, the host issuing as
	 * fast as it can. Either way each
	 * step's span runs from an event before its first item to one after
	 * its last: with the GPU idle at the step's start (paced "step"), it
	 * holds the first launch's latency too. */
	for (uint64_t st = 0; st < steps; st++) {
		cudaEvent_t *e = &ev[(size_t)(st % window) * (pv->nitems + 1)];
		uint64_t t0;
		if (bcg_interrupted()) {
			rr_fail(err, bcg_signal_status(bcg_interrupted()), "interrupted after %"
			        PRIu64 " of %" PRIu64 " steps", st, steps);
			goto fail;
		}
		/* paced "none": this slot's events hold step ST - WINDOW's
		 * times; read them before they are recorded again */
		if (window > 1 && st >= window) {
			RR_RT(cudaEventSynchronize(e[pv->nitems]), "waiting for a step");
			if (rr_read_events(e, pv->nitems, &step_ms[st - window],
			                   &item_ms[st - window], steps, err) != 0)
				goto fail;
		}
		if (r->flush_l2 && rr_flush(s, warmup + st, err) != 0)
			goto fail;
		t0 = bcg_now_ns();
		if (rr_step(s, pv, warmup + st, e, gaps, err) != 0)
			goto fail;
		host_ms[st] = (double)(bcg_now_ns() - t0) / 1e6;
		if (host_ms[st] > host_max)
			host_max = host_ms[st];
		if (window == 1) {
			RR_RT(cudaEventSynchronize(e[pv->nitems]), "waiting for a step");
			if (rr_read_events(e, pv->nitems, &step_ms[st], &item_ms[st], steps,
			                   err) != 0)
				goto fail;
		}
	}
	/* the steps still in flight (paced "none") */
	for (uint64_t st = steps > window ? steps - window : 0; window > 1 && st < steps; st++) {
		cudaEvent_t *e = &ev[(size_t)(st % window) * (pv->nitems + 1)];
		RR_RT(cudaEventSynchronize(e[pv->nitems]), "waiting for a step");
		if (rr_read_events(e, pv->nitems, &step_ms[st], &item_ms[st], steps, err) != 0)
			goto fail;
	}
	run->steps = steps;
	/* The busy pass: each step issued whole behind a hold kernel (a
	 * single thread waiting on the GPU's clock, long enough for the host
	 * to issue the step: three times its slowest issue above, and 0.5
	 * ms), then waited for. The GPU finds every launch queued: the
	 * events time the GPU's own work, without the host's issue and the
	 * first launch's latency. Flushed, the flush runs before the hold. */
	for (uint32_t b = 0; b < nbusy; b++) {
		double hold_us = 3.0 * host_max * 1000.0 + 500.0;
		if (hold_us > 2e6)
			hold_us = 2e6;
		if (bcg_interrupted()) {
			rr_fail(err, bcg_signal_status(bcg_interrupted()), "interrupted in the busy "
			        "pass");
			goto fail;
		}
		if (r->flush_l2 && rr_flush(s, warmup + steps + b, err) != 0)
			goto fail;
		if (cuda_hold_stream(s->stream, hold_us, err->msg, sizeof err->msg) != 0) {
			err->exit = BCG_EXIT_RUNTIME;
			goto fail;
		}
		if (rr_step(s, pv, warmup + steps + b, ev, NULL, err) != 0)
			goto fail;
		RR_RT(cudaEventSynchronize(ev[pv->nitems]), "waiting for a held step");
		if (rr_read_events(ev, pv->nitems, &busy_ms[b], &ibusy_ms[b], nbusy, err) != 0)
			goto fail;
	}
	{
		double sum = 0;
		for (uint64_t st = 0; st < steps; st++)
			sum += step_ms[st];
		run->step_mean = steps ? sum / (double)steps : 0;
	}
	run->step_median = bcg_percentile(step_ms, steps, 50);
	run->step_p90 = bcg_percentile(step_ms, steps, 90);
	run->step_p99 = bcg_percentile(step_ms, steps, 99);
	run->host_median = rr_median(host_ms, steps);
	run->nitems = pv->nitems;
	for (uint32_t i = 0; i < pv->nitems; i++)
		run->item_median[i] = rr_median(item_ms + (uint64_t)i * steps, steps);
	if (nbusy > 0) {
		run->item_busy = calloc(pv->nitems + 1, sizeof *run->item_busy);
		if (run->item_busy == NULL) {
			rr_fail(err, BCG_EXIT_RUNTIME, "out of memory");
			goto fail;
		}
		run->busy_steps = nbusy;
		run->busy_median = rr_median(busy_ms, nbusy);
		for (uint32_t i = 0; i < pv->nitems; i++)
			run->item_busy[i] = rr_median(ibusy_ms + (uint64_t)i * nbusy, nbusy);
	}
	rc = 0;
fail:
	for (uint32_t i = 0; ev != NULL && i < (pv->nitems + 1) * window; i++)
		if (ev[i] != NULL)
			cudaEventDestroy(ev[i]);
	free(ev);
	free(step_ms);
	free(host_ms);
	free(item_ms);
	free(busy_ms);
	free(ibusy_ms);
	free(gaps);
	if (rc != 0)
		rr_run_release(run);
	return rc;
}
