/*
 * inject.c - libbcg-record.so, the recording library of `bcgtool record`.
 *
 * Loaded into the recorded program by CUDA's injection interface
 * (CUDA_INJECTION64_PATH: the driver calls InitializeInjection at cuInit)
 * and by NVTX's (NVTX_INJECTION64_PATH: InitializeInjectionNvtx2), it
 * writes what the program does on the GPU into a raw log (reclog.h) in
 * $BCG_RECORD_DIR, one per process:
 *
 *  - CUPTI driver-API callbacks: eager kernel launches (with their
 *    parameter bytes, laid out by cuFuncGetParamInfo), copies and memsets
 *    on streams that are not being captured, graph launches, stream
 *    captures, and device allocations (cuMemAlloc*, cuMemFree*, cuMemMap,
 *    cuMemUnmap);
 *  - CUPTI resource callbacks: contexts (their devices), and modules as
 *    they load with their images (lazy loading loads them at first use,
 *    and the callback comes then);
 *  - graph instantiation (cuGraphInstantiate*, at the call's exit): the
 *    graph is walked at once, every node with its parameters (and
 *    cluster and cooperative attributes), every edge with its type and
 *    ports; and again when the program changes what an executable
 *    graph runs: cuGraphExecUpdate (the new graph walked the same way)
 *    and the kernel nodes set one at a time (cuGraphExecKernelNodeSetParams,
 *    cuGraphExecNodeSetParams), each by its index in the graph walked at
 *    instantiation; copies and memsets set that way are only noted;
 *  - CUPTI activity records: the GPU start and end of each graph launch
 *    and of each kernel, copy and memset launched outside graphs
 *    (BCG_RECORD_TIMES=kernels: of each kernel inside graphs too, which
 *    carries its graph launch's correlation; =graph: graph launches only;
 *    =none: nothing);
 *  - NVTX pushes, pops, starts and ends, with their messages;
 *  - with $BCG_RECORD_SNAPSHOT, the contents of the allocations, up to
 *    that many bytes in all (0: all): of those live at the first graph
 *    launch then, of the others as they are freed or at exit;
 *  - at exit: the libraries loaded (cuBLAS, NCCL, the CUDA runtime,
 *    torch).
 *
 * It never changes what the program computes and never stops it: every
 * CUPTI and driver call is checked, and a failure becomes a NOTE record.
 * The state below is global because the injection entry points and NVTX's
 * hooks take no context of ours; it is set up once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "plan.h"
#include "record/reclog.h"

#define HOST_COPY_KEEP   65536u     /* host bytes kept of an eager copy */
#define MAX_PARAMS       4096u
#define MAX_DEVICES      64u

struct fn_entry {
	uint64_t                handle;   /* 0: empty slot */
	uint32_t                nparams;
	struct plan_param_info *params;
	uint32_t                nargs;    /* bytes of the parameter buffer */
	uint64_t                module;   /* its CUmodule, 0 unknown */
};

/* A loaded module's id (CUPTI's) and the CUmodule its load returned. */
struct module_link {
	uint32_t id;
	uint64_t handle;
};

/* A graph node walked at instantiation, and its index in that walk: what
 * a later cuGraphExecKernelNodeSetParams names it by. */
struct node_entry {
	uint64_t node;            /* 0: empty slot */
	uint32_t index;
};

struct live_alloc {
	uint64_t address;
	uint64_t bytes;
	uint32_t device;
	int      vmm;
};

static struct recorder {
	pthread_once_t         once;
	pthread_mutex_t        lock;      /* the tables below */
	struct reclog_writer  *w;
	int                    on;        /* recording in this process */
	int                    cupti_on;
	CUpti_SubscriberHandle sub;
	int                    snapshot;
	int                    snapped;   /* the first graph launch's snapshot */
	uint64_t               snapshot_left;
	atomic_int             captures;  /* captures begun and not ended */
	struct fn_entry       *fns;
	size_t                 fn_cap, fn_n;
	struct module_link    *links;     /* modules loaded and not unloaded */
	size_t                 nlinks, clinks;
	struct node_entry     *nodes;     /* graph nodes by handle */
	size_t                 node_cap, node_n;
	struct live_alloc     *allocs;
	size_t                 nallocs, callocs;
	uint64_t               devices_seen;
	atomic_uint            notes;
} R = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now(void)
{
	uint64_t t = 0;

	if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS)
		t = 0;
	return t;
}

static void emit(struct reclog_rec *r)
{
	if (R.w != NULL)
		reclog_write(R.w, r);
	reclog_rec_end(r);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	struct reclog_rec r;
	char buf[400];
	va_list ap;

	/* A fault that repeats on every launch says so a few times only. */
	if (R.w == NULL || atomic_fetch_add(&R.notes, 1) > 64)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	reclog_rec_begin(&r, RECLOG_NOTE, now());
	reclog_put_str(&r, buf);
	emit(&r);
}

static const char *cu_err(CUresult e)
{
	const char *s = NULL;

	if (cuGetErrorName(e, &s) != CUDA_SUCCESS || s == NULL)
		s = "unknown error";
	return s;
}

/* ---------------------------------------------------------------------- */
/* Devices.                                                                */

/* The device of a context; each thread keeps the last answer, since a
 * launch asks for it every time and threads mostly stay on one context. */
static _Thread_local CUcontext last_ctx;
static _Thread_local uint32_t last_dev;

static uint32_t ctx_device(CUcontext ctx)
{
	uint32_t dev = 0;

	if (ctx == NULL && cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
		return 0;
	if (ctx == NULL)
		return 0;
	if (ctx == last_ctx)
		return last_dev;
	if (cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS)
		return 0;
	last_ctx = ctx;
	last_dev = dev;
	return dev;
}

static void record_device(uint32_t dev)
{
	struct reclog_rec r;
	char name[256] = "";
	int major = 0, minor = 0, driver = 0;
	CUdevice d;
	CUresult e;

	if (dev >= MAX_DEVICES)
		return;
	pthread_mutex_lock(&R.lock);
	if (R.devices_seen & (UINT64_C(1) << dev)) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	R.devices_seen |= UINT64_C(1) << dev;
	pthread_mutex_unlock(&R.lock);
	if ((e = cuDeviceGet(&d, (int)dev)) != CUDA_SUCCESS ||
	    (e = cuDeviceGetName(name, sizeof name, d)) != CUDA_SUCCESS ||
	    (e = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d)) !=
	            CUDA_SUCCESS ||
	    (e = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d)) !=
	            CUDA_SUCCESS ||
	    (e = cuDriverGetVersion(&driver)) != CUDA_SUCCESS)
		note("device %u: %s", dev, cu_err(e));
	reclog_rec_begin(&r, RECLOG_DEVICE, now());
	reclog_put_u32(&r, dev);
	reclog_put_str(&r, name);
	reclog_put_u32(&r, (uint32_t)major);
	reclog_put_u32(&r, (uint32_t)minor);
	reclog_put_u32(&r, (uint32_t)driver);
	emit(&r);
}

/* ---------------------------------------------------------------------- */
/* Functions: name, parameter layout, written once each.                   */

static size_t fn_slot(uint64_t h, size_t cap)
{
	h ^= h >> 29;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	h ^= h >> 32;
	return (size_t)h & (cap - 1);
}

static int fn_grow(void)
{
	size_t cap = R.fn_cap ? R.fn_cap * 2 : 1024;
	struct fn_entry *t = calloc(cap, sizeof *t);

	if (t == NULL)
		return -1;
	for (size_t i = 0; i < R.fn_cap; i++) {
		size_t j;
		if (R.fns[i].handle == 0)
			continue;
		for (j = fn_slot(R.fns[i].handle, cap); t[j].handle != 0; j = (j + 1) & (cap - 1))
			;
		t[j] = R.fns[i];
	}
	free(R.fns);
	R.fns = t;
	R.fn_cap = cap;
	return 0;
}

/* The function behind a launch's handle: a CUfunction, or a CUkernel
 * (the runtime launches library kernels by CUkernel). */
static CUfunction resolve_function(uint64_t handle, const char **name)
{
	CUfunction f = (CUfunction)(uintptr_t)handle;
	CUfunction g = NULL;

	if (cuFuncGetName(name, f) == CUDA_SUCCESS && *name != NULL)
		return f;
	if (cuKernelGetFunction(&g, (CUkernel)(uintptr_t)handle) == CUDA_SUCCESS && g != NULL &&
	    cuFuncGetName(name, g) == CUDA_SUCCESS && *name != NULL)
		return g;
	if (cuKernelGetName(name, (CUkernel)(uintptr_t)handle) == CUDA_SUCCESS && *name != NULL)
		return NULL;
	*name = NULL;
	return NULL;
}

/* The entry of HANDLE, described in the log on first sight; NULL when
 * out of memory. Called with R.lock held. */
static const struct fn_entry *function_entry(uint64_t handle)
{
	struct fn_entry *e;
	struct plan_param_info *params = NULL;
	const char *name = NULL;
	CUmodule mod = NULL;
	CUfunction f;
	struct reclog_rec r;
	uint32_t n = 0, nargs = 0;
	size_t i;

	if (R.fn_cap != 0)
		for (i = fn_slot(handle, R.fn_cap); R.fns[i].handle != 0; i = (i + 1) & (R.fn_cap - 1))
			if (R.fns[i].handle == handle)
				return &R.fns[i];
	if ((R.fn_n + 1) * 2 > R.fn_cap && fn_grow() != 0)
		return NULL;
	f = resolve_function(handle, &name);
	if (f != NULL) {
		for (;;) {
			size_t off = 0, size = 0;
			struct plan_param_info *np;
			if (n >= MAX_PARAMS || cuFuncGetParamInfo(f, n, &off, &size) != CUDA_SUCCESS)
				break;
			np = realloc(params, (n + 1) * sizeof *np);
			if (np == NULL)
				break;
			params = np;
			params[n].offset = (uint32_t)off;
			params[n].size = (uint32_t)size;
			if (off + size > nargs)
				nargs = (uint32_t)(off + size);
			n++;
		}
		if (cuFuncGetModule(&mod, f) != CUDA_SUCCESS)
			mod = NULL;
	} else {
		note("function 0x%" PRIx64 ": no name or parameters (cuFuncGetName failed)", handle);
	}
	for (i = fn_slot(handle, R.fn_cap); R.fns[i].handle != 0; i = (i + 1) & (R.fn_cap - 1))
		;
	e = &R.fns[i];
	e->handle = handle;
	e->nparams = n;
	e->params = params;
	e->nargs = nargs;
	e->module = (uint64_t)(uintptr_t)mod;
	R.fn_n++;
	reclog_rec_begin(&r, RECLOG_FUNCTION, now());
	reclog_put_u64(&r, handle);
	reclog_put_u64(&r, (uint64_t)(uintptr_t)mod);
	reclog_put_str(&r, name);
	reclog_put_u32(&r, n);
	for (uint32_t k = 0; k < n; k++) {
		reclog_put_u32(&r, params[k].offset);
		reclog_put_u32(&r, params[k].size);
	}
	emit(&r);
	return e;
}

/* Append a kernel (reclog.h) to R: the function and shape, and the
 * parameter buffer rebuilt from KERNEL_PARAMS (one pointer a parameter)
 * or taken from EXTRA's buffer. */
static void put_kernel(struct reclog_rec *r, uint64_t handle, const unsigned *grid,
                       const unsigned *block, const unsigned *cluster, unsigned shmem,
                       uint32_t flags, void **kernel_params, void **extra)
{
	const struct fn_entry *e;
	uint8_t small[512], *args = small, *owned = NULL;
	uint32_t nargs = 0;

	pthread_mutex_lock(&R.lock);
	e = function_entry(handle);
	if (e != NULL && kernel_params != NULL) {
		nargs = e->nargs;
		if (nargs > sizeof small) {
			args = owned = malloc(nargs);
			if (args == NULL) {
				args = small;
				nargs = 0;
			}
		}
		if (nargs > 0)
			memset(args, 0, nargs);
		for (uint32_t i = 0; i < e->nparams && nargs > 0; i++)
			if (kernel_params[i] != NULL)
				memcpy(args + e->params[i].offset, kernel_params[i], e->params[i].size);
	}
	pthread_mutex_unlock(&R.lock);
	if (kernel_params == NULL && extra != NULL) {
		void *buf = NULL;
		size_t size = 0;
		for (size_t i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL)
				size = *(size_t *)extra[i + 1];
		}
		if (buf != NULL && size > 0 && size <= UINT32_MAX) {
			args = buf;
			nargs = (uint32_t)size;
		}
	}
	reclog_put_u64(r, handle);
	for (int i = 0; i < 3; i++)
		reclog_put_u32(r, grid[i]);
	for (int i = 0; i < 3; i++)
		reclog_put_u32(r, block[i]);
	for (int i = 0; i < 3; i++)
		reclog_put_u32(r, cluster[i]);
	reclog_put_u32(r, shmem);
	reclog_put_u32(r, flags);
	reclog_put_bytes(r, args, nargs);
	free(owned);
}

/* ---------------------------------------------------------------------- */
/* Eager work.                                                             */

/* Whether work on STREAM now goes into a capture instead of running. */
static int stream_capturing(CUstream stream)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (atomic_load(&R.captures) <= 0)
		return 0;
	if (cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS)
		return 1;   /* an implicit capture of the legacy stream: not eager */
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void begin_work(struct reclog_rec *r, uint32_t type, const CUpti_CallbackData *cb,
                       CUstream stream)
{
	reclog_rec_begin(r, type, now());
	reclog_put_u32(r, ctx_device(cb->context));
	reclog_put_u64(r, (uint64_t)(uintptr_t)stream);
	reclog_put_u32(r, cb->correlationId);
}

static void on_launch(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	unsigned grid[3], block[3], cluster[3] = { 0, 0, 0 }, shmem;
	uint32_t flags = 0;
	void **params, **extra = NULL;
	CUstream stream;
	CUfunction f;
	struct reclog_rec r;

	if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
	    id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
		const cuLaunchKernelEx_params *p = cb->functionParams;
		const CUlaunchConfig *c = p->config;
		if (c == NULL)
			return;
		f = p->f;
		grid[0] = c->gridDimX, grid[1] = c->gridDimY, grid[2] = c->gridDimZ;
		block[0] = c->blockDimX, block[1] = c->blockDimY, block[2] = c->blockDimZ;
		shmem = c->sharedMemBytes;
		stream = c->hStream;
		params = p->kernelParams;
		extra = p->extra;
		for (unsigned i = 0; i < c->numAttrs && c->attrs != NULL; i++) {
			const CUlaunchAttribute *a = &c->attrs[i];
			if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
				cluster[0] = a->value.clusterDim.x;
				cluster[1] = a->value.clusterDim.y;
				cluster[2] = a->value.clusterDim.z;
			} else if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
			           a->value.programmaticStreamSerializationAllowed) {
				flags |= PLAN_LAUNCH_PDL;
			} else if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative) {
				flags |= PLAN_LAUNCH_COOP;
			}
		}
	} else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
	           id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz) {
		const cuLaunchCooperativeKernel_params *p = cb->functionParams;
		f = p->f;
		grid[0] = p->gridDimX, grid[1] = p->gridDimY, grid[2] = p->gridDimZ;
		block[0] = p->blockDimX, block[1] = p->blockDimY, block[2] = p->blockDimZ;
		shmem = p->sharedMemBytes;
		stream = p->hStream;
		params = p->kernelParams;
		flags = PLAN_LAUNCH_COOP;
	} else {
		const cuLaunchKernel_params *p = cb->functionParams;
		f = p->f;
		grid[0] = p->gridDimX, grid[1] = p->gridDimY, grid[2] = p->gridDimZ;
		block[0] = p->blockDimX, block[1] = p->blockDimY, block[2] = p->blockDimZ;
		shmem = p->sharedMemBytes;
		stream = p->hStream;
		params = p->kernelParams;
		extra = p->extra;
	}
	if (stream_capturing(stream))
		return;
	begin_work(&r, RECLOG_KERNEL, cb, stream);
	put_kernel(&r, (uint64_t)(uintptr_t)f, grid, block, cluster, shmem, flags, params, extra);
	emit(&r);
}

static void put_copy(struct reclog_rec *r, uint64_t dst, uint64_t src, uint64_t bytes,
                     uint32_t flags, const void *host)
{
	reclog_put_u64(r, dst);
	reclog_put_u64(r, src);
	reclog_put_u64(r, bytes);
	reclog_put_u32(r, flags);
	if ((flags & RECLOG_COPY_SRC_HOST) && host != NULL && bytes <= HOST_COPY_KEEP)
		reclog_put_bytes(r, host, (size_t)bytes);
	else
		reclog_put_bytes(r, NULL, 0);
}

static void on_copy(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	uint64_t dst, src, bytes;
	uint32_t flags = 0;
	const void *host = NULL;
	CUstream stream;
	struct reclog_rec r;

	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
		const cuMemcpyHtoDAsync_v2_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, src = (uint64_t)(uintptr_t)p->srcHost, bytes = p->ByteCount;
		flags = RECLOG_COPY_SRC_HOST;
		host = p->srcHost;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
		const cuMemcpyDtoHAsync_v2_params *p = cb->functionParams;
		stream = p->hStream;
		dst = (uint64_t)(uintptr_t)p->dstHost, src = p->srcDevice, bytes = p->ByteCount;
		flags = RECLOG_COPY_DST_HOST;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
		const cuMemcpyDtoDAsync_v2_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, src = p->srcDevice, bytes = p->ByteCount;
		break;
	}
	default: {   /* cuMemcpyAsync: unified addresses, either side */
		const cuMemcpyAsync_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dst, src = p->src, bytes = p->ByteCount;
		break;
	}
	}
	if (stream_capturing(stream))
		return;
	begin_work(&r, RECLOG_MEMCPY, cb, stream);
	put_copy(&r, dst, src, bytes, flags, host);
	emit(&r);
}

static void put_memset(struct reclog_rec *r, uint64_t dst, uint32_t value, uint32_t element,
                       uint64_t width, uint64_t height, uint64_t pitch)
{
	reclog_put_u64(r, dst);
	reclog_put_u32(r, value);
	reclog_put_u32(r, element);
	reclog_put_u64(r, width);
	reclog_put_u64(r, height);
	reclog_put_u64(r, pitch);
}

static void on_memset(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	uint64_t dst, width, height = 1, pitch;
	uint32_t value, element;
	CUstream stream;
	struct reclog_rec r;

	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
		const cuMemsetD8Async_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, value = p->uc, element = 1;
		width = p->N, pitch = p->N;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
		const cuMemsetD16Async_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, value = p->us, element = 2;
		width = p->N, pitch = 2 * (uint64_t)p->N;
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
		const cuMemsetD32Async_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, value = p->ui, element = 4;
		width = p->N, pitch = 4 * (uint64_t)p->N;
		break;
	}
	default: {   /* cuMemsetD2D8Async */
		const cuMemsetD2D8Async_params *p = cb->functionParams;
		stream = p->hStream;
		dst = p->dstDevice, value = p->uc, element = 1;
		width = p->Width, height = p->Height, pitch = p->dstPitch;
		break;
	}
	}
	if (stream_capturing(stream))
		return;
	begin_work(&r, RECLOG_MEMSET, cb, stream);
	put_memset(&r, dst, value, element, width, height, pitch);
	emit(&r);
}

/* ---------------------------------------------------------------------- */
/* Allocations.                                                            */

/* Keep a copy of an allocation's contents while the budget lasts. */
static void snapshot_alloc(const struct live_alloc *a)
{
	struct reclog_rec r;
	void *host;
	CUresult e;

	if (!R.snapshot || a->bytes == 0 || a->bytes > R.snapshot_left || a->bytes > UINT32_MAX - 64)
		return;
	host = malloc((size_t)a->bytes);
	if (host == NULL) {
		note("snapshot of 0x%" PRIx64 ": out of memory", a->address);
		return;
	}
	e = cuMemcpyDtoH(host, (CUdeviceptr)a->address, (size_t)a->bytes);
	if (e != CUDA_SUCCESS) {
		note("snapshot of 0x%" PRIx64 " (%" PRIu64 " bytes): %s", a->address, a->bytes,
		     cu_err(e));
		free(host);
		return;
	}
	R.snapshot_left -= a->bytes;
	reclog_rec_begin(&r, RECLOG_SNAPSHOT, now());
	reclog_put_u32(&r, a->device);
	reclog_put_u64(&r, a->address);
	reclog_put_bytes(&r, host, (size_t)a->bytes);
	emit(&r);
	free(host);
}

static void alloc_add(uint32_t dev, uint64_t address, uint64_t bytes, int vmm)
{
	struct reclog_rec r;

	if (address == 0 || bytes == 0)
		return;
	reclog_rec_begin(&r, RECLOG_ALLOC, now());
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, address);
	reclog_put_u64(&r, bytes);
	reclog_put_u32(&r, vmm ? RECLOG_ALLOC_VMM : 0);
	emit(&r);
	if (!R.snapshot)
		return;
	pthread_mutex_lock(&R.lock);
	if (R.nallocs == R.callocs) {
		size_t cap = R.callocs ? 2 * R.callocs : 256;
		struct live_alloc *n = realloc(R.allocs, cap * sizeof *n);
		if (n == NULL) {
			pthread_mutex_unlock(&R.lock);
			note("allocation table: out of memory");
			return;
		}
		R.allocs = n;
		R.callocs = cap;
	}
	R.allocs[R.nallocs++] = (struct live_alloc){ address, bytes, dev, vmm };
	pthread_mutex_unlock(&R.lock);
}

/* Before a free: keep the contents (with --snapshot); after it, the record. */
static void alloc_free(uint32_t dev, uint64_t address, int before)
{
	struct reclog_rec r;

	if (address == 0)
		return;
	if (before) {
		if (!R.snapshot)
			return;
		pthread_mutex_lock(&R.lock);
		for (size_t i = 0; i < R.nallocs; i++)
			if (R.allocs[i].address == address && R.allocs[i].device == dev) {
				snapshot_alloc(&R.allocs[i]);
				R.allocs[i] = R.allocs[--R.nallocs];
				break;
			}
		pthread_mutex_unlock(&R.lock);
		return;
	}
	reclog_rec_begin(&r, RECLOG_FREE, now());
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, address);
	emit(&r);
}

static void on_memory(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	int exit = cb->callbackSite == CUPTI_API_EXIT;
	uint32_t dev;

	if (exit && *(CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	dev = ctx_device(cb->context);
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
		const cuMemAlloc_v2_params *p = cb->functionParams;
		if (exit && p->dptr != NULL)
			alloc_add(dev, *p->dptr, p->bytesize, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
		const cuMemAllocPitch_v2_params *p = cb->functionParams;
		if (exit && p->dptr != NULL && p->pPitch != NULL)
			alloc_add(dev, *p->dptr, (uint64_t)*p->pPitch * p->Height, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
		const cuMemAllocAsync_params *p = cb->functionParams;
		if (exit && p->dptr != NULL)
			alloc_add(dev, *p->dptr, p->bytesize, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
		const cuMemAllocFromPoolAsync_params *p = cb->functionParams;
		if (exit && p->dptr != NULL)
			alloc_add(dev, *p->dptr, p->bytesize, 0);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
		const cuMemMap_params *p = cb->functionParams;
		CUmemAllocationProp prop;
		if (!exit)
			break;
		/* The device holding the memory, not the current context's. */
		memset(&prop, 0, sizeof prop);
		if (cuMemGetAllocationPropertiesFromHandle(&prop, p->handle) == CUDA_SUCCESS &&
		    prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
			dev = (uint32_t)prop.location.id;
		alloc_add(dev, p->ptr, p->size, 1);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
		alloc_free(dev, ((const cuMemUnmap_params *)cb->functionParams)->ptr, !exit);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
		alloc_free(dev, ((const cuMemFreeAsync_params *)cb->functionParams)->dptr, !exit);
		break;
	default:   /* cuMemFree_v2 */
		alloc_free(dev, ((const cuMemFree_v2_params *)cb->functionParams)->dptr, !exit);
		break;
	}
}

/* ---------------------------------------------------------------------- */
/* Graphs.                                                                 */

static int node_type(CUgraphNodeType t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL: return PLAN_NODE_KERNEL;
	case CU_GRAPH_NODE_TYPE_MEMCPY: return PLAN_NODE_MEMCPY;
	case CU_GRAPH_NODE_TYPE_MEMSET: return PLAN_NODE_MEMSET;
	case CU_GRAPH_NODE_TYPE_HOST: return PLAN_NODE_HOST;
	case CU_GRAPH_NODE_TYPE_GRAPH: return PLAN_NODE_GRAPH;
	case CU_GRAPH_NODE_TYPE_EMPTY: return PLAN_NODE_EMPTY;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return PLAN_NODE_EVENT_RECORD;
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return PLAN_NODE_EVENT_WAIT;
	default: return PLAN_NODE_OTHER;
	}
}

/* Append node N of a graph: its type and what rebuilds it. A node whose
 * parameters cannot be read is written as OTHER, with a note. */
static void put_node(struct reclog_rec *r, CUgraphNode n, uint64_t exec)
{
	CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
	CUresult e;
	int type;

	if ((e = cuGraphNodeGetType(n, &t)) != CUDA_SUCCESS) {
		note("graph 0x%" PRIx64 ": a node's type: %s", exec, cu_err(e));
		t = (CUgraphNodeType)-1;
	}
	type = node_type(t);
	if (type == PLAN_NODE_KERNEL) {
		CUDA_KERNEL_NODE_PARAMS p;
		CUkernelNodeAttrValue v;
		unsigned grid[3], block[3], cluster[3] = { 0, 0, 0 };
		uint32_t flags = 0;
		uint64_t handle;

		memset(&p, 0, sizeof p);
		if ((e = cuGraphKernelNodeGetParams(n, &p)) != CUDA_SUCCESS) {
			note("graph 0x%" PRIx64 ": kernel node parameters: %s", exec, cu_err(e));
			goto other;
		}
		handle = p.func != NULL ? (uint64_t)(uintptr_t)p.func : (uint64_t)(uintptr_t)p.kern;
		memset(&v, 0, sizeof v);
		if (cuGraphKernelNodeGetAttribute(n, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) ==
		    CUDA_SUCCESS) {
			cluster[0] = v.clusterDim.x;
			cluster[1] = v.clusterDim.y;
			cluster[2] = v.clusterDim.z;
		}
		memset(&v, 0, sizeof v);
		if (cuGraphKernelNodeGetAttribute(n, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) ==
		            CUDA_SUCCESS && v.cooperative)
			flags |= PLAN_LAUNCH_COOP;
		grid[0] = p.gridDimX, grid[1] = p.gridDimY, grid[2] = p.gridDimZ;
		block[0] = p.blockDimX, block[1] = p.blockDimY, block[2] = p.blockDimZ;
		reclog_put_u32(r, PLAN_NODE_KERNEL);
		put_kernel(r, handle, grid, block, cluster, p.sharedMemBytes, flags, p.kernelParams,
		           p.extra);
		return;
	}
	if (type == PLAN_NODE_MEMCPY) {
		CUDA_MEMCPY3D c;
		uint32_t flags = 0;
		uint64_t src, dst;

		memset(&c, 0, sizeof c);
		if ((e = cuGraphMemcpyNodeGetParams(n, &c)) != CUDA_SUCCESS) {
			note("graph 0x%" PRIx64 ": memcpy node parameters: %s", exec, cu_err(e));
			goto other;
		}
		if (c.srcMemoryType == CU_MEMORYTYPE_HOST) {
			flags |= RECLOG_COPY_SRC_HOST;
			src = (uint64_t)(uintptr_t)c.srcHost;
		} else {
			src = c.srcDevice;
		}
		if (c.dstMemoryType == CU_MEMORYTYPE_HOST) {
			flags |= RECLOG_COPY_DST_HOST;
			dst = (uint64_t)(uintptr_t)c.dstHost;
		} else {
			dst = c.dstDevice;
		}
		reclog_put_u32(r, PLAN_NODE_MEMCPY);
		put_copy(r, dst + c.dstXInBytes, src + c.srcXInBytes,
		         (uint64_t)c.WidthInBytes * (c.Height ? c.Height : 1) * (c.Depth ? c.Depth : 1),
		         flags, (flags & RECLOG_COPY_SRC_HOST) ? c.srcHost : NULL);
		return;
	}
	if (type == PLAN_NODE_MEMSET) {
		CUDA_MEMSET_NODE_PARAMS m;

		memset(&m, 0, sizeof m);
		if ((e = cuGraphMemsetNodeGetParams(n, &m)) != CUDA_SUCCESS) {
			note("graph 0x%" PRIx64 ": memset node parameters: %s", exec, cu_err(e));
			goto other;
		}
		reclog_put_u32(r, PLAN_NODE_MEMSET);
		put_memset(r, m.dst, m.value, m.elementSize, m.width, m.height, m.pitch);
		return;
	}
other:
	reclog_put_u32(r, (uint32_t)(type == PLAN_NODE_KERNEL || type == PLAN_NODE_MEMCPY ||
	                             type == PLAN_NODE_MEMSET ? PLAN_NODE_OTHER : type));
	reclog_put_u32(r, (uint32_t)t);
}

struct node_ref {
	CUgraphNode node;
	uint32_t    index;
};

static int by_node(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)((const struct node_ref *)x)->node;
	uintptr_t b = (uintptr_t)((const struct node_ref *)y)->node;

	return a < b ? -1 : a > b;
}

static uint32_t node_index(const struct node_ref *refs, size_t n, CUgraphNode node)
{
	struct node_ref key = { node, 0 };
	const struct node_ref *f = bsearch(&key, refs, n, sizeof *refs, by_node);

	return f != NULL ? f->index : UINT32_MAX;
}

/* Remember that NODE is node INDEX of its graph's walk. Nodes are never
 * forgotten: a handle the driver gives again after its graph is destroyed
 * is overwritten by its next walk. Out of memory: the node's later
 * updates are recorded with an unknown index. */
static void node_remember(uint64_t node, uint32_t index)
{
	size_t i;

	pthread_mutex_lock(&R.lock);
	if ((R.node_n + 1) * 2 > R.node_cap) {
		size_t cap = R.node_cap ? R.node_cap * 2 : 4096;
		struct node_entry *t = calloc(cap, sizeof *t);
		if (t == NULL) {
			pthread_mutex_unlock(&R.lock);
			return;
		}
		for (size_t k = 0; k < R.node_cap; k++) {
			if (R.nodes[k].node == 0)
				continue;
			for (i = fn_slot(R.nodes[k].node, cap); t[i].node != 0; i = (i + 1) & (cap - 1))
				;
			t[i] = R.nodes[k];
		}
		free(R.nodes);
		R.nodes = t;
		R.node_cap = cap;
	}
	for (i = fn_slot(node, R.node_cap); R.nodes[i].node != 0 && R.nodes[i].node != node;
	     i = (i + 1) & (R.node_cap - 1))
		;
	if (R.nodes[i].node == 0)
		R.node_n++;
	R.nodes[i].node = node;
	R.nodes[i].index = index;
	pthread_mutex_unlock(&R.lock);
}

/* NODE's index in its graph's walk; UINT32_MAX when never walked. */
static uint32_t node_lookup(uint64_t node)
{
	uint32_t index = UINT32_MAX;

	pthread_mutex_lock(&R.lock);
	if (R.node_cap != 0)
		for (size_t i = fn_slot(node, R.node_cap); R.nodes[i].node != 0;
		     i = (i + 1) & (R.node_cap - 1))
			if (R.nodes[i].node == node) {
				index = R.nodes[i].index;
				break;
			}
	pthread_mutex_unlock(&R.lock);
	return index;
}

/* Walk GRAPH into a record of TYPE: GRAPH when it was just instantiated
 * as EXEC (its nodes are remembered by index), GRAPH_UPDATE when EXEC
 * now runs GRAPH's parameters (cuGraphExecUpdate). */
static void record_graph(CUgraph graph, CUgraphExec exec, uint32_t dev, uint32_t type)
{
	CUgraphNode *nodes = NULL, *from = NULL, *to = NULL;
	CUgraphEdgeData *edata = NULL;
	struct node_ref *refs = NULL;
	size_t nn = 0, ne = 0;
	struct reclog_rec r;
	CUresult e;

	if ((e = cuGraphGetNodes(graph, NULL, &nn)) != CUDA_SUCCESS)
		goto fail;
	nodes = calloc(nn + 1, sizeof *nodes);
	refs = calloc(nn + 1, sizeof *refs);
	if (nodes == NULL || refs == NULL) {
		e = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	if (nn > 0 && (e = cuGraphGetNodes(graph, nodes, &nn)) != CUDA_SUCCESS)
		goto fail;
	if ((e = cuGraphGetEdges(graph, NULL, NULL, NULL, &ne)) != CUDA_SUCCESS)
		goto fail;
	from = calloc(ne + 1, sizeof *from);
	to = calloc(ne + 1, sizeof *to);
	edata = calloc(ne + 1, sizeof *edata);
	if (from == NULL || to == NULL || edata == NULL) {
		e = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	if (ne > 0 && (e = cuGraphGetEdges(graph, from, to, edata, &ne)) != CUDA_SUCCESS)
		goto fail;
	for (size_t i = 0; i < nn; i++) {
		refs[i].node = nodes[i];
		refs[i].index = (uint32_t)i;
	}
	qsort(refs, nn, sizeof *refs, by_node);
	if (type == RECLOG_GRAPH)
		for (size_t i = 0; i < nn; i++)
			node_remember((uint64_t)(uintptr_t)nodes[i], (uint32_t)i);
	reclog_rec_begin(&r, type, now());
	reclog_put_u64(&r, (uint64_t)(uintptr_t)exec);
	reclog_put_u64(&r, (uint64_t)(uintptr_t)graph);
	reclog_put_u32(&r, dev);
	reclog_put_u32(&r, (uint32_t)nn);
	reclog_put_u32(&r, (uint32_t)ne);
	for (size_t i = 0; i < nn; i++)
		put_node(&r, nodes[i], (uint64_t)(uintptr_t)exec);
	for (size_t i = 0; i < ne; i++) {
		uint32_t a = node_index(refs, nn, from[i]), b = node_index(refs, nn, to[i]);
		if (a == UINT32_MAX || b == UINT32_MAX) {
			a = 0;   /* cannot happen for a graph's own edges */
			b = 0;
		}
		reclog_put_u32(&r, a);
		reclog_put_u32(&r, b);
		reclog_put_u32(&r, edata[i].type);
		reclog_put_u32(&r, edata[i].from_port);
		reclog_put_u32(&r, edata[i].to_port);
	}
	emit(&r);
	goto out;
fail:
	note("graph 0x%" PRIx64 ": cannot walk it: %s", (uint64_t)(uintptr_t)exec, cu_err(e));
out:
	free(nodes);
	free(refs);
	free(from);
	free(to);
	free(edata);
}

/* A node of an executable graph given new parameters. Kernel nodes are
 * recorded (the v1 parameters are the first fields of the later forms);
 * a copy or memset set so is noted: the plan keeps the parameters the
 * node had at instantiation or at its last update. */
static void on_node_set(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	const cuGraphExecKernelNodeSetParams_v2_params *p = cb->functionParams;
	unsigned grid[3], block[3], cluster[3] = { 0, 0, 0 }, shmem;
	void **kernel_params, **extra;
	uint64_t handle;
	struct reclog_rec r;

	if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams) {
		const cuGraphExecNodeSetParams_params *q = cb->functionParams;
		const CUDA_KERNEL_NODE_PARAMS_v3 *k;
		if (q->nodeParams == NULL)
			return;
		if (q->nodeParams->type != CU_GRAPH_NODE_TYPE_KERNEL) {
			note("graph 0x%" PRIx64 ": a node of type %d was given new parameters "
			     "(cuGraphExecNodeSetParams): not followed, the plan keeps its old ones",
			     (uint64_t)(uintptr_t)q->hGraphExec, (int)q->nodeParams->type);
			return;
		}
		k = &q->nodeParams->kernel;
		handle = k->func != NULL ? (uint64_t)(uintptr_t)k->func : (uint64_t)(uintptr_t)k->kern;
		grid[0] = k->gridDimX, grid[1] = k->gridDimY, grid[2] = k->gridDimZ;
		block[0] = k->blockDimX, block[1] = k->blockDimY, block[2] = k->blockDimZ;
		shmem = k->sharedMemBytes;
		kernel_params = k->kernelParams;
		extra = k->extra;
	} else if (id == CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams ||
	           id == CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams) {
		note("graph 0x%" PRIx64 ": a %s node was given new parameters: not followed, the "
		     "plan keeps its old ones", (uint64_t)(uintptr_t)p->hGraphExec,
		     id == CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams ? "memcpy"
		                                                                  : "memset");
		return;
	} else {
		const CUDA_KERNEL_NODE_PARAMS *k = p->nodeParams;
		if (k == NULL)
			return;
		/* the v1 form has no CUkernel field: read only what both have */
		handle = (uint64_t)(uintptr_t)k->func;
		if (handle == 0 && id == CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2)
			handle = (uint64_t)(uintptr_t)k->kern;
		grid[0] = k->gridDimX, grid[1] = k->gridDimY, grid[2] = k->gridDimZ;
		block[0] = k->blockDimX, block[1] = k->blockDimY, block[2] = k->blockDimZ;
		shmem = k->sharedMemBytes;
		kernel_params = k->kernelParams;
		extra = k->extra;
	}
	reclog_rec_begin(&r, RECLOG_GRAPH_NODE_SET, now());
	reclog_put_u64(&r, (uint64_t)(uintptr_t)p->hGraphExec);
	reclog_put_u32(&r, ctx_device(cb->context));
	reclog_put_u32(&r, node_lookup((uint64_t)(uintptr_t)p->hNode));
	put_kernel(&r, handle, grid, block, cluster, shmem, 0, kernel_params, extra);
	emit(&r);
}

static void on_graph_launch(const CUpti_CallbackData *cb)
{
	const cuGraphLaunch_params *p = cb->functionParams;
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_GRAPH_LAUNCH, now());
	reclog_put_u32(&r, ctx_device(cb->context));
	reclog_put_u64(&r, (uint64_t)(uintptr_t)p->hStream);
	reclog_put_u64(&r, (uint64_t)(uintptr_t)p->hGraph);
	reclog_put_u32(&r, cb->correlationId);
	emit(&r);
}

static void on_capture(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	struct reclog_rec r;

	if (id == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture ||
	    id == CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz) {
		const cuStreamEndCapture_params *p = cb->functionParams;
		/* A capture ends, whether or not it made a graph. */
		atomic_fetch_sub(&R.captures, 1);
		reclog_rec_begin(&r, RECLOG_CAPTURE_END, now());
		reclog_put_u32(&r, ctx_device(cb->context));
		reclog_put_u64(&r, (uint64_t)(uintptr_t)p->hStream);
		reclog_put_u64(&r, p->phGraph != NULL ? (uint64_t)(uintptr_t)*p->phGraph : 0);
	} else {
		/* Every begin form starts with the stream. */
		const cuStreamBeginCapture_v2_params *p = cb->functionParams;
		if (*(CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
			return;
		atomic_fetch_add(&R.captures, 1);
		reclog_rec_begin(&r, RECLOG_CAPTURE_BEGIN, now());
		reclog_put_u32(&r, ctx_device(cb->context));
		reclog_put_u64(&r, (uint64_t)(uintptr_t)p->hStream);
	}
	emit(&r);
}

/* ---------------------------------------------------------------------- */
/* Callbacks.                                                              */

static void on_module(const CUpti_ResourceData *rd)
{
	const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
	struct reclog_rec r;
	int image = m != NULL && m->pCubin != NULL && m->cubinSize > 0 &&
	            m->cubinSize < UINT32_MAX - 64;

	reclog_rec_begin(&r, RECLOG_MODULE, now());
	reclog_put_u32(&r, m != NULL ? m->moduleId : 0);
	reclog_put_u32(&r, image ? RECLOG_MODULE_IMAGE : 0);
	reclog_put_u64(&r, m != NULL ? (uint64_t)m->cubinSize : 0);
	reclog_put_bytes(&r, image ? m->pCubin : NULL, image ? m->cubinSize : 0);
	reclog_put_str(&r, image ? "" : m == NULL ? "CUPTI gave no module data"
	                                          : "CUPTI gave no image of it");
	emit(&r);
}

/* The module the MODULE_LOADED callback of this thread last wrote, while
 * a load call runs: the load's exit pairs it with the handle returned. */
static _Thread_local int loaded_set;
static _Thread_local uint32_t loaded_id;

/* Write that module ID has the handle MOD, and keep the pair for its
 * unload. */
static void link_module(uint32_t id, uint64_t mod)
{
	struct reclog_rec r;
	struct module_link *l = NULL;

	reclog_rec_begin(&r, RECLOG_MODULE_HANDLE, now());
	reclog_put_u32(&r, id);
	reclog_put_u64(&r, mod);
	emit(&r);
	pthread_mutex_lock(&R.lock);
	if (R.nlinks == R.clinks) {
		size_t ncap = R.clinks ? R.clinks * 2 : 64;
		l = realloc(R.links, ncap * sizeof *l);
		if (l != NULL) {
			R.links = l;
			R.clinks = ncap;
		}
	}
	if (R.nlinks < R.clinks) {
		l = &R.links[R.nlinks++];
		l->id = id;
		l->handle = mod;
	}
	pthread_mutex_unlock(&R.lock);
	if (l == NULL)
		note("module %u: out of memory (its functions stay described after its unload)",
		     id);
}

/* Module ID is about to be unloaded: say so, and forget the functions of
 * its handle, so that a handle reused later is described again. */
static void on_module_unload(const CUpti_ResourceData *rd)
{
	const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
	struct reclog_rec r;
	struct fn_entry *t = NULL;
	uint64_t mod = 0;
	int failed = 0;

	if (m == NULL)
		return;
	reclog_rec_begin(&r, RECLOG_MODULE_UNLOAD, now());
	reclog_put_u32(&r, m->moduleId);
	emit(&r);
	pthread_mutex_lock(&R.lock);
	for (size_t i = 0; i < R.nlinks; i++)
		if (R.links[i].id == m->moduleId) {
			mod = R.links[i].handle;
			R.links[i] = R.links[--R.nlinks];
			break;
		}
	if (mod != 0 && R.fn_cap != 0) {
		/* Rehash what stays: a probe sequence cannot hold holes. */
		t = calloc(R.fn_cap, sizeof *t);
		failed = t == NULL;
		for (size_t i = 0; t != NULL && i < R.fn_cap; i++) {
			size_t j;
			if (R.fns[i].handle == 0)
				continue;
			if (R.fns[i].module == mod) {
				free(R.fns[i].params);
				R.fn_n--;
				continue;
			}
			for (j = fn_slot(R.fns[i].handle, R.fn_cap); t[j].handle != 0;
			     j = (j + 1) & (R.fn_cap - 1))
				;
			t[j] = R.fns[i];
		}
		if (t != NULL) {
			free(R.fns);
			R.fns = t;
		}
	}
	pthread_mutex_unlock(&R.lock);
	if (failed)
		note("module %u: out of memory (its functions stay described after its unload)",
		     m->moduleId);
}

/* A module load's entry and exit (cuModuleLoad*, cuLibraryLoad*,
 * cuLibraryGetModule): at exit, the module its MODULE_LOADED callback
 * wrote is linked to the handle returned. */
static void on_module_load(const CUpti_CallbackData *cb, CUpti_CallbackId id)
{
	uint32_t mid = loaded_id;
	CUmodule mod = NULL;
	CUlibrary lib = NULL;
	int set = loaded_set;

	loaded_set = 0;
	if (cb->callbackSite != CUPTI_API_EXIT || !set ||
	    *(CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
		mod = *((const cuModuleLoad_params *)cb->functionParams)->module;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
		mod = *((const cuModuleLoadData_params *)cb->functionParams)->module;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
		mod = *((const cuModuleLoadDataEx_params *)cb->functionParams)->module;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
		mod = *((const cuModuleLoadFatBinary_params *)cb->functionParams)->module;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
		lib = *((const cuLibraryLoadData_params *)cb->functionParams)->library;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
		lib = *((const cuLibraryLoadFromFile_params *)cb->functionParams)->library;
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule:
		mod = *((const cuLibraryGetModule_params *)cb->functionParams)->pMod;
		break;
	default:
		return;
	}
	if (lib != NULL && cuLibraryGetModule(&mod, lib) != CUDA_SUCCESS)
		mod = NULL;
	if (mod != NULL)
		link_module(mid, (uint64_t)(uintptr_t)mod);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId id, const void *data)
{
	(void)userdata;
	if (!R.on)
		return;
	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		const CUpti_ResourceData *rd = data;
		switch (id) {
		case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
			record_device(ctx_device(rd->context));
			break;
		case CUPTI_CBID_RESOURCE_MODULE_LOADED:
			on_module(rd);
			if (rd->resourceDescriptor != NULL) {
				loaded_id = ((const CUpti_ModuleResourceData *)rd->resourceDescriptor)
				                    ->moduleId;
				loaded_set = 1;
			}
			break;
		case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
			on_module_unload(rd);
			break;
		default:
			break;
		}
		return;
	}
	if (domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	const CUpti_CallbackData *cb = data;
	/* The contents of the live allocations as the first graph launch
	 * finds them: what a replay of the steps starts from. */
	if (R.snapshot && !R.snapped && cb->callbackSite == CUPTI_API_ENTER &&
	    (id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
	     id == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz)) {
		pthread_mutex_lock(&R.lock);
		if (!R.snapped) {
			R.snapped = 1;
			for (size_t i = 0; i < R.nallocs; i++)
				snapshot_alloc(&R.allocs[i]);
			R.nallocs = 0;
		}
		pthread_mutex_unlock(&R.lock);
		return;
	}
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
		on_memory(cb, id);   /* at entry: the snapshot before the free */
		return;
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
	case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
	case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule:
		on_module_load(cb, id);   /* at entry and exit */
		return;
	default:
		break;
	}
	if (cb->callbackSite != CUPTI_API_EXIT)
		return;
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
		on_capture(cb, id);
		return;
	default:
		break;
	}
	if (*(CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
		return;   /* work that failed did not happen */
	switch (id) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
		on_launch(cb, id);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		on_graph_launch(cb);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
		/* Every form starts with the executable graph made and the
		 * graph it was made from. */
		const cuGraphInstantiateWithFlags_params *p = cb->functionParams;
		if (p->phGraphExec != NULL && *p->phGraphExec != NULL)
			record_graph(p->hGraph, *p->phGraphExec, ctx_device(cb->context),
			             RECLOG_GRAPH);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2: {
		/* Both forms start with the executable and the graph. */
		const cuGraphExecUpdate_v2_params *p = cb->functionParams;
		record_graph(p->hGraph, p->hGraphExec, ctx_device(cb->context),
		             RECLOG_GRAPH_UPDATE);
		break;
	}
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
		on_node_set(cb, id);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
		on_capture(cb, id);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz:
		on_copy(cb, id);
		break;
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
	case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
		on_memset(cb, id);
		break;
	default:
		on_memory(cb, id);
		break;
	}
}

static const CUpti_CallbackId driver_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
	CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
	CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemMap,
	CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
	CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile,
	CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule,
};

static const CUpti_CallbackId resource_cbids[] = {
	CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
	CUPTI_CBID_RESOURCE_MODULE_LOADED,
	CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
};

/* ---------------------------------------------------------------------- */
/* GPU times.                                                              */

#define ACT_BUFFER (4u << 20)

static void CUPTIAPI act_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(8, ACT_BUFFER);
	*size = *buffer != NULL ? ACT_BUFFER : 0;
	*max_records = 0;
}

static void act_put(uint32_t corr, uint32_t kind, uint64_t start, uint64_t end)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_ACTIVITY, now());
	reclog_put_u32(&r, corr);
	reclog_put_u32(&r, kind);
	reclog_put_u64(&r, start);
	reclog_put_u64(&r, end);
	emit(&r);
}

static void CUPTIAPI act_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid)
{
	CUpti_Activity *a = NULL;
	size_t dropped = 0;

	(void)ctx;
	(void)stream;
	(void)size;
	while (R.on && valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
		switch (a->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		case CUPTI_ACTIVITY_KIND_KERNEL: {
			const CUpti_ActivityKernel10 *k = (const void *)a;
			act_put(k->correlationId, RECLOG_ACT_KERNEL, k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const CUpti_ActivityMemcpy6 *m = (const void *)a;
			act_put(m->correlationId, RECLOG_ACT_MEMCPY, m->start, m->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const CUpti_ActivityMemset4 *m = (const void *)a;
			act_put(m->correlationId, RECLOG_ACT_MEMSET, m->start, m->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
			const CUpti_ActivityGraphTrace2 *g = (const void *)a;
			act_put(g->correlationId, RECLOG_ACT_GRAPH, g->start, g->end);
			break;
		}
		default:
			break;
		}
	}
	if (R.on && ctx == NULL &&
	    cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped > 0)
		note("%zu GPU time records were dropped", dropped);
	free(buffer);
}

static void enable_activity(void)
{
	const char *times = getenv("BCG_RECORD_TIMES");
	CUptiResult e;

	if (times != NULL && strcmp(times, "none") == 0)
		return;
	if ((e = cuptiActivityRegisterCallbacks(act_request, act_complete)) != CUPTI_SUCCESS) {
		note("GPU times: cuptiActivityRegisterCallbacks: error %d", (int)e);
		return;
	}
	/* Whole graph launches, one record each: a record a node (what
	 * kernel records of graph kernels cost) made the recorded program's
	 * step 12.6% slower on the H200, whole graphs 2.4%, and the plan
	 * keeps a launch's span either way. "kernels" asks for the record a
	 * node; so does a driver without graph records. "graph" stops at
	 * whole graphs (no break times). */
	if (times == NULL || strcmp(times, "kernels") != 0) {
		if ((e = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)) != CUPTI_SUCCESS)
			note("GPU times of whole graph launches: error %d; timing their kernels "
			     "instead", (int)e);
		else if (times != NULL && strcmp(times, "graph") == 0)
			return;
	}
	/* Kernels (graph nodes among them unless whole graphs are recorded:
	 * they carry their graph launch's correlation), copies and memsets. */
	if ((e = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
		note("GPU times of kernels: error %d", (int)e);
	if ((e = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)) != CUPTI_SUCCESS)
		note("GPU times of copies: error %d", (int)e);
	if ((e = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)) != CUPTI_SUCCESS)
		note("GPU times of memsets: error %d", (int)e);
}

/* ---------------------------------------------------------------------- */
/* The process: start, libraries, end.                                     */

/* "libcublas.so.13.1.0.3" -> "13.1.0.3"; the torch version from the
 * version.py beside its libraries. */
static void record_library(const char *path)
{
	static const struct { const char *stem, *name; } libs[] = {
		{ "libcudart.so.", "cudart" },
		{ "libcublas.so.", "cublas" },
		{ "libcublasLt.so.", "cublasLt" },
		{ "libnccl.so.", "nccl" },
		{ "libcudnn.so.", "cudnn" },
		{ "libnvrtc.so.", "nvrtc" },
		{ "libtorch_cuda.so", "torch" },
	};
	char real[PATH_MAX], version[128] = "";
	const char *base;
	struct reclog_rec r;

	if (realpath(path, real) == NULL)
		return;
	base = strrchr(real, '/');
	base = base != NULL ? base + 1 : real;
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		size_t n = strlen(libs[i].stem);
		if (strncmp(base, libs[i].stem, n) != 0)
			continue;
		if (strcmp(libs[i].name, "torch") == 0) {
			/* .../torch/lib/libtorch_cuda.so -> .../torch/version.py */
			char vp[PATH_MAX + 16], line[256];
			FILE *f;
			snprintf(vp, sizeof vp, "%.*s/../version.py", (int)(base - real - 1), real);
			f = fopen(vp, "r");
			while (f != NULL && fgets(line, sizeof line, f) != NULL)
				if (sscanf(line, "__version__ = '%127[^']'", version) == 1)
					break;
			if (f != NULL)
				fclose(f);
		} else {
			snprintf(version, sizeof version, "%s", base + n);
		}
		if (version[0] == '\0')
			snprintf(version, sizeof version, "?");
		reclog_rec_begin(&r, RECLOG_LIBRARY, now());
		reclog_put_str(&r, libs[i].name);
		reclog_put_str(&r, version);
		reclog_put_str(&r, real);
		emit(&r);
		return;
	}
}

static void record_libraries(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128], last[PATH_MAX] = "";

	if (f == NULL) {
		note("libraries: /proc/self/maps: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char *path = strchr(line, '/');
		if (path == NULL)
			continue;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, last) == 0 || strstr(path, ".so") == NULL)
			continue;
		snprintf(last, sizeof last, "%s", path);
		record_library(path);
	}
	fclose(f);
}

static void record_process(void)
{
	struct reclog_rec r;
	char buf[8192];
	ssize_t n = 0;
	int fd;

	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof buf);
		close(fd);
	}
	if (n < 0)
		n = 0;
	reclog_rec_begin(&r, RECLOG_PROCESS, now());
	reclog_put_u32(&r, (uint32_t)getpid());
	reclog_put_u32(&r, (uint32_t)getppid());
	reclog_put_bytes(&r, buf, (size_t)n);
	emit(&r);
}

static void finish(void)
{
	struct reclog_writer *w;
	struct reclog_rec r;

	if (!R.on)
		return;
	if (R.cupti_on) {
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		if (R.snapshot) {
			pthread_mutex_lock(&R.lock);
			for (size_t i = 0; i < R.nallocs; i++)
				snapshot_alloc(&R.allocs[i]);
			R.nallocs = 0;
			pthread_mutex_unlock(&R.lock);
		}
	}
	record_libraries();
	reclog_rec_begin(&r, RECLOG_END, now());
	emit(&r);
	/* Nothing is written after the end mark: a callback still running
	 * on another thread finds the recording off. */
	R.on = 0;
	w = R.w;
	R.w = NULL;
	if (reclog_close(w) != 0)
		fprintf(stderr, "bcgtool record: the recording log of process %d is incomplete\n",
		        (int)getpid());
}

/* In a child after fork (without exec): CUDA cannot be used there, and
 * the parent's log is the parent's. An exec starts a new recording. */
static void forked_child(void)
{
	reclog_abandon(R.w);
	R.w = NULL;
	R.on = 0;
	R.cupti_on = 0;
}

static void setup(void)
{
	const char *dir = getenv("BCG_RECORD_DIR"), *snap = getenv("BCG_RECORD_SNAPSHOT");
	char path[PATH_MAX];

	if (dir == NULL || dir[0] == '\0')
		return;   /* loaded outside `bcgtool record`: do nothing */
	snprintf(path, sizeof path, "%s/%d.bcglog", dir, (int)getpid());
	R.w = reclog_open(path, (uint32_t)getpid());
	if (R.w == NULL) {
		fprintf(stderr, "bcgtool record: %s: %s (this process is not recorded)\n", path,
		        strerror(errno));
		return;
	}
	if (snap != NULL) {
		unsigned long long v = strtoull(snap, NULL, 10);
		R.snapshot = 1;
		R.snapshot_left = v == 0 ? UINT64_MAX : (uint64_t)v;
	}
	R.on = 1;
	record_process();
	pthread_atfork(NULL, NULL, forked_child);
	atexit(finish);
}

/* CUDA's injection entry point: called once, inside cuInit. */
int InitializeInjection(void);

int InitializeInjection(void)
{
	CUptiResult e;

	pthread_once(&R.once, setup);
	if (!R.on || R.cupti_on)
		return 1;
	if ((e = cuptiSubscribe(&R.sub, (CUpti_CallbackFunc)on_callback, NULL)) != CUPTI_SUCCESS) {
		/* Another tool holds CUPTI (a profiler): record nothing, run on. */
		note("cuptiSubscribe: error %d (another CUPTI tool?): nothing recorded", (int)e);
		return 1;
	}
	for (size_t i = 0; i < sizeof driver_cbids / sizeof driver_cbids[0]; i++)
		if ((e = cuptiEnableCallback(1, R.sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids[i])) !=
		    CUPTI_SUCCESS)
			note("driver callback %u: error %d", (unsigned)driver_cbids[i], (int)e);
	for (size_t i = 0; i < sizeof resource_cbids / sizeof resource_cbids[0]; i++)
		if ((e = cuptiEnableCallback(1, R.sub, CUPTI_CB_DOMAIN_RESOURCE, resource_cbids[i])) !=
		    CUPTI_SUCCESS)
			note("resource callback %u: error %d", (unsigned)resource_cbids[i], (int)e);
	enable_activity();
	R.cupti_on = 1;
	return 1;
}

/* ---------------------------------------------------------------------- */
/* NVTX.                                                                   */

/* A registered string's handle is a copy of its text, kept for the
 * process's life (as the strings' own owners expect). */
static nvtxStringHandle_t NVTX_API nvtx_register(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)(void *)strdup(s != NULL ? s : "");
}

static const char *nvtx_message(const nvtxEventAttributes_t *a)
{
	if (a == NULL)
		return "";
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != NULL)
		return a->message.ascii;
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != NULL)
		return (const char *)(const void *)a->message.registered;
	return "";
}

static uint64_t thread_id(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

static void nvtx_put(uint32_t type, uint64_t id, const char *msg)
{
	struct reclog_rec r;

	pthread_once(&R.once, setup);
	if (!R.on)
		return;
	reclog_rec_begin(&r, type, now());
	reclog_put_u64(&r, id);
	if (msg != NULL)
		reclog_put_str(&r, msg);
	emit(&r);
}

static int NVTX_API nvtx_push_a(const char *msg)
{
	nvtx_put(RECLOG_RANGE_PUSH, thread_id(), msg != NULL ? msg : "");
	return 0;
}

static int NVTX_API nvtx_push_ex(const nvtxEventAttributes_t *a)
{
	nvtx_put(RECLOG_RANGE_PUSH, thread_id(), nvtx_message(a));
	return 0;
}

static int NVTX_API nvtx_pop(void)
{
	nvtx_put(RECLOG_RANGE_POP, thread_id(), NULL);
	return 0;
}

static atomic_uint_fast64_t nvtx_next_range = 1;

static nvtxRangeId_t NVTX_API nvtx_start_a(const char *msg)
{
	nvtxRangeId_t id = atomic_fetch_add(&nvtx_next_range, 1);
	nvtx_put(RECLOG_RANGE_START, id, msg != NULL ? msg : "");
	return id;
}

static nvtxRangeId_t NVTX_API nvtx_start_ex(const nvtxEventAttributes_t *a)
{
	nvtxRangeId_t id = atomic_fetch_add(&nvtx_next_range, 1);
	nvtx_put(RECLOG_RANGE_START, id, nvtx_message(a));
	return id;
}

static void NVTX_API nvtx_end(nvtxRangeId_t id)
{
	nvtx_put(RECLOG_RANGE_END, id, NULL);
}

static int NVTX_API nvtx_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	(void)d;
	return nvtx_push_ex(a);
}

static int NVTX_API nvtx_dpop(nvtxDomainHandle_t d)
{
	(void)d;
	return nvtx_pop();
}

static nvtxRangeId_t NVTX_API nvtx_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	(void)d;
	return nvtx_start_ex(a);
}

static void NVTX_API nvtx_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	nvtx_end(id);
}

/* NVTX's injection entry point: the program's first NVTX call loads this
 * library (NVTX_INJECTION64_PATH) and calls it. */
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *cb =
		(const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
	NvtxFunctionTable core = NULL, core2 = NULL;
	unsigned int ncore = 0, ncore2 = 0;

	pthread_once(&R.once, setup);
	if (cb == NULL || !R.on)
		return 0;
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &ncore) &&
	    ncore > NVTX_CBID_CORE_RangePop) {
		*core[NVTX_CBID_CORE_RangeStartEx] = (NvtxFunctionPointer)nvtx_start_ex;
		*core[NVTX_CBID_CORE_RangeStartA] = (NvtxFunctionPointer)nvtx_start_a;
		*core[NVTX_CBID_CORE_RangeEnd] = (NvtxFunctionPointer)nvtx_end;
		*core[NVTX_CBID_CORE_RangePushEx] = (NvtxFunctionPointer)nvtx_push_ex;
		*core[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)nvtx_push_a;
		*core[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)nvtx_pop;
	}
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &ncore2) &&
	    ncore2 > NVTX_CBID_CORE2_DomainRegisterStringA) {
		*core2[NVTX_CBID_CORE2_DomainRangeStartEx] = (NvtxFunctionPointer)nvtx_dstart;
		*core2[NVTX_CBID_CORE2_DomainRangeEnd] = (NvtxFunctionPointer)nvtx_dend;
		*core2[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)nvtx_dpush;
		*core2[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)nvtx_dpop;
		*core2[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)nvtx_register;
	}
	return 1;
}
