/*
 * cuda-wgmma.cu - the products at 16 to 64 tokens on Hopper's warpgroup
 * tensor-core instruction (wgmma), the tokens and the weights brought into
 * shared memory by the copy engine: implementations "wgmma" and
 * "wgmma_whole" of matmul, matmul_add and matmul_silu_mul.
 *
 * out [M, N] = epilogue(a [M, K] . b^T), b [NB, K] a weight, M <= 64,
 * f16 or bf16 throughout (out and x of a's dtype), K % 128 == 0,
 * N % 8 == 0. Compiled for sm_90a only (wgmma and its descriptors are not
 * in sm_90's instruction set), so usable on a device of compute
 * capability 9.0 only.
 *
 * The tokens are wgmma's A (its M is 64: one warpgroup, warp w rows 16w ..
 * 16w + 15), the weights its B (N = 64 a tile). A block:
 *  - warp 4's first lane copies: a ring of stages, each the tokens' chunk
 *    of 128 k (two boxes of 64 k and M rounded up to 8 rows, by a tensor
 *    map with 128-byte swizzle: rows past M read as zeros) and the
 *    weights' chunk (one bulk copy of 16 KiB from the packed copy, below),
 *    on one "full" mbarrier; the weights of the first stages before the PDL
 *    wait (nothing writes them), the tokens after it;
 *  - warps 0-3 wait for a stage, issue its 8 wgmmas (both operands by
 *    descriptor), commit, and once the stage before has completed
 *    (wgmma.wait_group 1) give it back on its "empty" mbarrier.
 * "wgmma" splits K over a thread block cluster (up to 8 blocks) where the
 * tiles are too few for two blocks a multiprocessor; "wgmma_whole" never
 * splits and aims at one. The tuner chooses: on an H100 at 64 tokens the
 * split form ran the serving sample's down projection best, the whole form
 * its gate|up (bench/wgmma-stream.cu, bench/RESULTS.md, seventeenth
 * session).
 *
 * The merge of a split. Each block writes its f32 sums [64, 64] into its
 * shared memory; the tile's output units (8 columns of a row) are shared
 * out among the cluster's blocks, and every block pushes each unit's sums
 * to the unit's owner by st.async, into a slot of its rank, counted on the
 * owner's mbarrier. The owner adds the ranks' slots in rank order (the same
 * bits every run), applies the epilogue and stores 16 bytes a unit. No
 * atomics, no global scratch.
 *
 * The packed layout (WG_NB = 64 rows, WG_KS = 128 k): a tile's chunk is
 * 16 KiB contiguous, in the order wgmma reads shared memory without a
 * swizzle: for each k16 step, each group of 8 rows, the two 8x8 "core
 * matrices" (k 0-7, then 8-15), each 8 rows of 16 bytes. So in shared
 * memory core matrices adjacent in K are 128 bytes apart (the
 * descriptor's leading offset) and groups of rows 256 (its stride
 * offset). For matmul_silu_mul a tile is 32 gate rows j then their 32 up
 * rows N + j, so one thread holds both sums of an output. Rows past the
 * weight's are zeros. Vector v (16 bytes) of the copy:
 *
 *   v = ((((tile * KC + chunk) * 8 + step) * 8 + group) * 2 + half) * 8 + row
 *
 * holds k chunk * 128 + step * 16 + half * 8 .. + 7 of the tile's row
 * group * 8 + row.
 *
 * Epilogues: matmul stores the sum; matmul_add x + the sum rounded to
 * out's dtype; matmul_silu_mul silu(g) * u, g and u rounded; as the other
 * implementations round. out may be x.
 */
#include "config.h"

#include <limits.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include <mutex>

#include "cuda-internal.h"

#define WG_NB      64           /* weight rows (output columns) a tile */
#define WG_KS      128          /* k a chunk */
#define WG_STEPS   (WG_KS / 16)
#define WG_NSMAX   8            /* stages at most */
#define WG_THREADS 160          /* one warpgroup and the copier's warp */
#define WG_MAX_SPLIT 8          /* a portable cluster */
#define WG_SUM_ROW (WG_NB + 8)  /* the sums' rows in floats: rows 8 banks apart */
#define WG_WB      (WG_NB * WG_KS * 2)     /* a chunk of weights, bytes */
#define WG_MIN_M   16
#define WG_MAX_M   64

enum { WG_EPI_NONE = 0, WG_EPI_ADD = 1, WG_EPI_SILU = 2 };

struct wg_args {
	const void *w, *x;      /* the packed weight; matmul_add's x */
	void       *out;
	int         M;
	int64_t     N, K;       /* N: output columns (silu: gate's) */
	int         tiles, chunks;
	int         per, ksplit;        /* chunks a split; gridDim.x */
	int         box_rows;           /* the tokens' box: M rounded up to 8 */
	int         ns;                 /* stages */
};

/* --- device ------------------------------------------------------------------ */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void wg_bar_init(uint64_t *b, unsigned count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(cuda_smem_addr(b)),
	             "r"(count) : "memory");
}

__device__ __forceinline__ void wg_bar_arrive(uint64_t *b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(cuda_smem_addr(b))
	             : "memory");
}

/* The box at (K0, row 0) of tensor map MAP into DST (1024-byte aligned),
 * counted on B. */
__device__ __forceinline__ void wg_tma_2d(void *dst, const CUtensorMap *map, int k0, uint64_t *b)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
	             " [%0], [%1, {%2, %3}], [%4];"
	             :: "r"(cuda_smem_addr(dst)), "l"(map), "r"(k0), "r"(0),
	                "r"(cuda_smem_addr(b)) : "memory");
}

__device__ __forceinline__ void wg_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wg_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wg_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

/* A shared-memory matrix descriptor: start, leading (K) and stride (M or
 * N) byte offsets, each in 16-byte units; SWIZZLE 1 is 128-byte. */
__device__ __forceinline__ uint64_t wg_desc(unsigned addr, unsigned lbo, unsigned sbo,
                                            unsigned swizzle)
{
	return (uint64_t)((addr >> 4) & 0x3fff) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
	       (uint64_t)((sbo >> 4) & 0x3fff) << 32 | (uint64_t)swizzle << 62;
}

/* D [64, 64] f32 += A [64, 16] . B [16, 64], both read from shared memory
 * through their descriptors (wgmma.mma_async, asynchronous: wg_commit and
 * wg_wait order it); TY the inputs' type. */
#define WG_MMA_ASM(TY)                                                                       \
	asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "               \
	             "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "                \
	             "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "            \
	             "%25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;"            \
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),  \
	               "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),\
	               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),         \
	               "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),         \
	               "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),         \
	               "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])          \
	             : "l"(adesc), "l"(bdesc))

template <typename T>
__device__ __forceinline__ void wg_mma(float (&d)[32], uint64_t adesc, uint64_t bdesc)
{
	if constexpr (std::is_same<T, __half>::value)
		WG_MMA_ASM("f16");
	else
		WG_MMA_ASM("bf16");
}

#undef WG_MMA_ASM

/* The unit range [e0, e1) of rank R of KS among UNITS. */
__device__ __forceinline__ int wg_unit_start(int units, int r, int ks)
{
	return (int)((int64_t)units * r / ks);
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* Grid (ksplit, tiles), clusters of (ksplit, 1, 1) when ksplit > 1;
 * WG_THREADS threads; wg_smem_bytes of dynamic shared memory. TOK maps the
 * tokens [M, K] in boxes of 64 k and box_rows rows. */
template <typename T, int EPI>
__global__ void __launch_bounds__(WG_THREADS)
bcg_wgmma_kernel(const __grid_constant__ CUtensorMap tok, wg_args p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	constexpr int COLS = EPI == WG_EPI_SILU ? WG_NB / 2 : WG_NB;   /* output columns a tile */
	constexpr int CH = COLS / 8;                                   /* units a row */
	constexpr int P = EPI == WG_EPI_SILU ? 16 : 8;                 /* floats a unit */
	extern __shared__ unsigned char wg_dyn[];
	__shared__ uint64_t full[WG_NSMAX], empty[WG_NSMAX], recv_bar;
	/* the tokens' atoms must be 1024-byte aligned for the swizzle */
	unsigned char *ring = reinterpret_cast<unsigned char *>(
		(reinterpret_cast<uintptr_t>(wg_dyn) + 1023) & ~(uintptr_t)1023);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int ks = p.ksplit, r = blockIdx.x, NS = p.ns, M = p.M;
	const int c0 = r * p.per, nc = min(p.per, p.chunks - c0);
	/* A stage: the tokens, two atoms of box_rows rows of 128 bytes, then
	 * the weights' chunk. */
	const unsigned ATOM = (unsigned)p.box_rows * 128, TB = 2 * ATOM, STAGE = TB + WG_WB;
	const int units = M * CH;
	const int e0 = wg_unit_start(units, r, ks), e1 = wg_unit_start(units, r + 1, ks);
	float *recv = reinterpret_cast<float *>(ring + NS * STAGE);

	if (threadIdx.x == 0) {
		for (int s = 0; s < NS; s++) {
			wg_bar_init(&full[s], 1);
			wg_bar_init(&empty[s], 4);
		}
		wg_bar_init(&recv_bar, 1);
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	if (ks > 1) {
		if (threadIdx.x == 0)
			cuda_bar_expect(&recv_bar, (unsigned)(ks * (e1 - e0) * P * 4));
		/* the cluster's blocks push into this one only once it is set up */
		asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
	}

	/* The copier's: chunk c's weights into stage s, the stage's bytes
	 * (its tokens' too) expected on its barrier. */
	const unsigned char *w = static_cast<const unsigned char *>(p.w) +
	                         ((int64_t)blockIdx.y * p.chunks + c0) * WG_WB;
	auto copy_weights = [&](int c, int s) {
		cuda_bar_expect(&full[s], WG_WB + TB);
		cuda_bulk_copy(ring + s * STAGE + TB, w + (int64_t)c * WG_WB, WG_WB, &full[s]);
	};
	const int pre = nc < NS ? nc : NS;
	if (warp == 4 && lane == 0) {
		asm volatile("prefetch.tensormap [%0];" :: "l"(&tok) : "memory");
		for (int c = 0; c < pre; c++)
			copy_weights(c, c);
	}

	/* Every thread waits for the kernel before; matmul_add's threads then
	 * load the x of their first two units of the epilogue, which would
	 * otherwise wait for it at the end. */
	cuda_pdl_wait();
	uint4 xpre[2] = {};
	if constexpr (EPI == WG_EPI_ADD) {
#pragma unroll
		for (int i = 0; i < 2; i++) {
			const int e = e0 + threadIdx.x + i * WG_THREADS;
			const int64_t n = (int64_t)blockIdx.y * COLS + 8 * (e % CH);
			if (e < e1 && n < p.N)
				xpre[i] = *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.x) +
				                                           (int64_t)(e / CH) * p.N + n);
		}
	}
	if (threadIdx.x == 0)
		cuda_pdl_trigger();

	float d[WG_NB / 2];
#pragma unroll
	for (int i = 0; i < WG_NB / 2; i++)
		d[i] = 0.0f;
	if (warp == 4) {
		if (lane == 0)
			for (int c = 0, s = 0; c < nc; c++) {
				if (c >= NS) {
					cuda_bar_wait(&empty[s], (unsigned)((c / NS) - 1) & 1u);
					copy_weights(c, s);
				}
				wg_tma_2d(ring + s * STAGE, &tok, (c0 + c) * WG_KS, &full[s]);
				wg_tma_2d(ring + s * STAGE + ATOM, &tok, (c0 + c) * WG_KS + 64, &full[s]);
				if (++s == NS)
					s = 0;
			}
	} else {
		int s = 0, prev = 0;
		unsigned phase = 0;
		for (int c = 0; c < nc; c++) {
			cuda_bar_wait(&full[s], phase);
			const unsigned base = cuda_smem_addr(ring + s * STAGE);
			wg_fence();
#pragma unroll
			for (int st = 0; st < WG_STEPS; st++) {
				/* A: atom st / 4, 32 bytes a k16 step in its 128-byte rows,
				 * 128-byte swizzle, 8-row groups 1024 bytes apart. B: the
				 * packed chunk's step st. */
				const uint64_t ad = wg_desc(base + (st / 4) * ATOM + (st % 4) * 32, 16, 1024,
				                            1);
				const uint64_t bd = wg_desc(base + TB + st * WG_NB * 32, 128, 256, 0);
				wg_mma<T>(d, ad, bd);
			}
			wg_commit();
			if (c > 0) {
				wg_wait<1>();           /* chunk c - 1's stage is read */
				if (lane == 0)
					wg_bar_arrive(&empty[prev]);
			}
			prev = s;
			if (++s == NS)
				s = 0, phase ^= 1u;
		}
		wg_wait<0>();
	}

	/* Thread (warp, g, q) of the warpgroup holds rows 16 warp + g and + 8
	 * and, of each 8-column group j, columns 8j + 2q and 8j + 2q + 1: into
	 * the block's sums [64][WG_SUM_ROW] (the ring, every stage consumed). */
	const int g = lane >> 2, q = lane & 3;
	const int m0 = 16 * warp + g, m1 = m0 + 8;
	float *sums = reinterpret_cast<float *>(ring);
	if (warp < 4) {
#pragma unroll
		for (int j = 0; j < WG_NB / 8; j++) {
			*reinterpret_cast<float2 *>(sums + m0 * WG_SUM_ROW + 8 * j + 2 * q) =
				make_float2(d[4 * j], d[4 * j + 1]);
			*reinterpret_cast<float2 *>(sums + m1 * WG_SUM_ROW + 8 * j + 2 * q) =
				make_float2(d[4 * j + 2], d[4 * j + 3]);
		}
	}
	__syncthreads();
	if (ks > 1) {
		/* Every unit's sums to its owner's slot (this rank, unit). */
		asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
		const unsigned rl = cuda_smem_addr(recv), bl = cuda_smem_addr(&recv_bar);
		for (int e = threadIdx.x; e < units; e += WG_THREADS) {
			const int m = e / CH, col = 8 * (e % CH);
			const int owner = (int)(((int64_t)(e + 1) * ks - 1) / units);
			const int oe0 = wg_unit_start(units, owner, ks);
			const int oe1 = wg_unit_start(units, owner + 1, ks);
			const unsigned off = (unsigned)((r * (oe1 - oe0) + (e - oe0)) * P * 4);
			unsigned ra, ba;
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra)
			             : "r"(rl + off), "r"(owner));
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ba)
			             : "r"(bl), "r"(owner));
#pragma unroll
			for (int i = 0; i < P / 4; i++) {
				const float4 v = *reinterpret_cast<const float4 *>(
					sums + m * WG_SUM_ROW + col + (i / 2) * (WG_NB / 2) + (i % 2) * 4);
				asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes"
				             ".v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
				             :: "r"(ra + i * 16), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w),
				                "r"(ba) : "memory");
			}
		}
		cuda_bar_wait(&recv_bar, 0);
	}

	const int64_t n0 = (int64_t)blockIdx.y * COLS;
	int it = 0;
	for (int e = e0 + threadIdx.x; e < e1; e += WG_THREADS, it++) {
		const int m = e / CH, col = 8 * (e % CH);
		const int64_t n = n0 + col;
		float v[8] = {}, u[8] = {};
		if (ks > 1) {
			for (int k = 0; k < ks; k++) {
				const float *pk = recv + (k * (e1 - e0) + (e - e0)) * P;
#pragma unroll
				for (int i = 0; i < 8; i++) {
					v[i] += pk[i];
					if constexpr (EPI == WG_EPI_SILU)
						u[i] += pk[8 + i];
				}
			}
		} else {
			const float *pk = sums + m * WG_SUM_ROW + col;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				v[i] = pk[i];
				if constexpr (EPI == WG_EPI_SILU)
					u[i] = pk[WG_NB / 2 + i];
			}
		}
		if (n >= p.N)
			continue;
		const int64_t o = (int64_t)m * p.N + n;
		uint4 xr = make_uint4(0u, 0u, 0u, 0u);
		if constexpr (EPI == WG_EPI_ADD)
			xr = it == 0 ? xpre[0] : it == 1 ? xpre[1]
			     : *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.x) + o);
		const T *xs = reinterpret_cast<const T *>(&xr);
		T res[8];
#pragma unroll
		for (int i = 0; i < 8; i++) {
			if constexpr (EPI == WG_EPI_NONE) {
				res[i] = cuda_from_f32<T>(v[i]);
			} else if constexpr (EPI == WG_EPI_ADD) {
				res[i] = cuda_from_f32<T>(cuda_to_f32(xs[i]) + cuda_to_f32(cuda_from_f32<T>(v[i])));
			} else {
				const float gg = cuda_to_f32(cuda_from_f32<T>(v[i]));
				res[i] = cuda_from_f32<T>(gg / (1.0f + expf(-gg)) * cuda_to_f32(cuda_from_f32<T>(u[i])));
			}
		}
		*reinterpret_cast<uint4 *>(static_cast<T *>(p.out) + o) =
			*reinterpret_cast<const uint4 *>(res);
	}
#else
	__trap();       /* built without sm_90a: cuda_wgmma_usable never offers it */
#endif
}

/* The packed copy (top of the file) of weight SRC [HALVES * NH, K] in
 * 16-byte vectors: VECTORS of them, K % 128 == 0. */
__global__ void bcg_wgmma_pack_kernel(const uint4 *src, uint4 *dst, int64_t nh, int64_t K,
                                      int halves, int64_t vectors)
{
	const int64_t kc = K / WG_KS, kv = K / 8;

	for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v < vectors;
	     v += (int64_t)gridDim.x * blockDim.x) {
		const int64_t row8 = v % 8, half = (v / 8) % 2, group = (v / 16) % 8;
		const int64_t step = (v / 128) % WG_STEPS, chunk = (v / (128 * WG_STEPS)) % kc;
		const int64_t tile = v / (128 * WG_STEPS * kc);
		const int64_t tr = group * 8 + row8;            /* the row within the tile */
		int64_t row;
		bool in;
		if (halves == 2) {
			const int64_t col = tile * (WG_NB / 2) + tr % (WG_NB / 2);
			in = col < nh;
			row = tr < WG_NB / 2 ? col : nh + col;
		} else {
			row = tile * WG_NB + tr;
			in = row < nh;
		}
		const int64_t k8 = (chunk * WG_KS + step * 16 + half * 8) / 8;
		dst[v] = in ? src[row * kv + k8] : make_uint4(0u, 0u, 0u, 0u);
	}
}

/* --- host ------------------------------------------------------------------- */

/* The driver's cuTensorMapEncodeTiled, found once; NULL when the driver has
 * none. */
static PFN_cuTensorMapEncodeTiled_v12000 wg_encoder(void)
{
	static std::once_flag once;
	static PFN_cuTensorMapEncodeTiled_v12000 fn;

	std::call_once(once, [] {
		cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
		void *f = NULL;
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
		                                     cudaEnableDefault, &q) == cudaSuccess &&
		    q == cudaDriverEntryPointSuccess)
			fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
		(void)cudaGetLastError();
	});
	return fn;
}

/* Whether the current device runs sm_90a code: compute capability 9.0.
 * Every launch asks (cuda_product_usable), so the answer is kept a device
 * (the first 64; others ask every time): bit d of KNOWN says device d was
 * asked, bit d of YES its answer. Two threads may both ask the first
 * time: the same answer, no harm. */
static int wg_device_ok(void)
{
	static unsigned long long known, yes;
	int dev = 0, major = 0, minor = 0;

	if (cudaGetDevice(&dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	const unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
	if (bit != 0 && (__atomic_load_n(&known, __ATOMIC_ACQUIRE) & bit) != 0)
		return (__atomic_load_n(&yes, __ATOMIC_RELAXED) & bit) != 0;
	if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
#if defined(BCG_NO_SM90A)
	const int ok = 0;       /* nvcc knew no sm_90a: the kernel is not built */
#else
	const int ok = major == 9 && minor == 0 && wg_encoder() != NULL;
#endif
	if (ok)
		__atomic_fetch_or(&yes, bit, __ATOMIC_RELAXED);
	__atomic_fetch_or(&known, bit, __ATOMIC_RELEASE);
	return ok;
}

int cuda_wgmma_usable(enum op_id id, const struct cuda_product *p, int b_weight)
{
	const int dt = p->a->dtype;

	if (!p->trans_b || p->trans_a || !b_weight)
		return 0;
	if (dt != PLAN_DTYPE_F16 && dt != PLAN_DTYPE_BF16)
		return 0;
	if (p->b->dtype != dt || p->out->dtype != dt || (p->x && p->x->dtype != dt))
		return 0;
	if (p->M < WG_MIN_M || p->M > WG_MAX_M || p->K % WG_KS != 0 || p->K <= 0 ||
	    p->K > INT_MAX / 2 || p->N % 8 != 0 || p->N <= 0 || p->N > INT_MAX / 2)
		return 0;
	if (!cuda_aligned16(p->a) || !cuda_aligned16(p->b) || !cuda_aligned16(p->out) ||
	    (p->x && !cuda_aligned16(p->x)))
		return 0;
	const int64_t cols = id == OP_MATMUL_SILU_MUL ? WG_NB / 2 : WG_NB;
	if ((p->N + cols - 1) / cols > 65535)
		return 0;
	return wg_device_ok();
}

uint64_t cuda_wgmma_pack_bytes(int64_t rows, int64_t K, int halves)
{
	const int64_t cols = halves == 2 ? WG_NB / 2 : WG_NB;
	const int64_t tiles = (rows / halves + cols - 1) / cols;

	return (uint64_t)tiles * WG_NB * (uint64_t)K * 2;
}

int cuda_wgmma_pack(const void *src, void *dst, int64_t rows, int64_t K, int halves,
                    cudaStream_t stream, char *msg, size_t len)
{
	const int64_t vectors = (int64_t)(cuda_wgmma_pack_bytes(rows, K, halves) / 16);
	const int64_t blocks = (vectors + 255) / 256;

	if (K % WG_KS != 0 || rows % halves != 0)
		return cuda_fail(msg, len, "wgmma's layout needs K a multiple of %d (K %lld)", WG_KS,
		                 (long long)K);
	bcg_wgmma_pack_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(
		static_cast<const uint4 *>(src), static_cast<uint4 *>(dst), rows / halves, K, halves,
		vectors);
	return cuda_check_launch("bcg_wgmma_pack_kernel", msg, len);
}

/* Shared memory a multiprocessor has for blocks (228 KiB on sm_90), less
 * the 1 KiB the system keeps a block; and the most one block may ask. */
#define WG_SM_SMEM   (228 * 1024)
#define WG_BLOCK_MAX (227 * 1024 - 1024)

template <typename T, int EPI>
static int wg_launch_t(const struct cuda_op_ctx *ctx, const CUtensorMap &map, const wg_args &a,
                       size_t smem, char *msg, size_t len)
{
	static unsigned long long set;
	cudaError_t err = cuda_smem_ceiling(bcg_wgmma_kernel<T, EPI>, WG_BLOCK_MAX, &set);

	if (err != cudaSuccess) {
		(void)cudaGetLastError();
		return cuda_fail(msg, len, "wgmma: cudaFuncSetAttribute: %s", cudaGetErrorString(err));
	}
	return cuda_launch_ex(ctx, "bcg_wgmma_kernel", bcg_wgmma_kernel<T, EPI>,
	                      dim3((unsigned)a.ksplit, (unsigned)a.tiles), dim3(WG_THREADS), smem,
	                      a.ksplit > 1 ? (unsigned)a.ksplit : 0u, msg, len, map, a);
}

/* wg_launch_t with product ID's epilogue. */
template <typename T>
static int wg_launch_id(enum op_id id, const struct cuda_op_ctx *ctx, const CUtensorMap &map,
                        const wg_args &a, size_t smem, char *msg, size_t len)
{
	switch (id) {
	case OP_MATMUL_ADD:
		return wg_launch_t<T, WG_EPI_ADD>(ctx, map, a, smem, msg, len);
	case OP_MATMUL_SILU_MUL:
		return wg_launch_t<T, WG_EPI_SILU>(ctx, map, a, smem, msg, len);
	default:
		return wg_launch_t<T, WG_EPI_NONE>(ctx, map, a, smem, msg, len);
	}
}

int cuda_wgmma_run(enum op_id id, const struct cuda_product *p, const void *packed, int whole,
                   const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const char *who = whole ? "wgmma_whole" : "wgmma";
	const int silu = id == OP_MATMUL_SILU_MUL;
	const int64_t cols = silu ? WG_NB / 2 : WG_NB;
	const int bf16 = p->a->dtype == PLAN_DTYPE_BF16;
	wg_args a;

	memset(&a, 0, sizeof a);
	a.w = packed;
	a.x = p->x ? p->x->data : NULL;
	a.out = p->out->data;
	a.M = (int)p->M;
	a.N = p->N;
	a.K = p->K;
	a.tiles = (int)((p->N + cols - 1) / cols);
	a.chunks = (int)(p->K / WG_KS);
	a.box_rows = (a.M + 7) / 8 * 8;

	/* The split: "wgmma" aims at two blocks a multiprocessor, up to a
	 * portable cluster; "wgmma_whole" at one block a tile. */
	const int bps = whole ? 1 : 2;
	int ks = 1;
	if (!whole) {
		const int64_t want = ((int64_t)ctx->sm_count * bps + a.tiles / 2) / a.tiles;
		ks = (int)(want < 1 ? 1 : want > WG_MAX_SPLIT ? WG_MAX_SPLIT : want);
		if (ks > a.chunks)
			ks = a.chunks;
	}
	a.per = (a.chunks + ks - 1) / ks;
	a.ksplit = (a.chunks + a.per - 1) / a.per;

	/* Stages: as many as leave room for BPS blocks a multiprocessor, at
	 * least what holds the sums [64][WG_SUM_ROW] the epilogue puts in
	 * the ring, at most WG_NSMAX. */
	const size_t stage = (size_t)2 * a.box_rows * 128 + WG_WB;
	const size_t units = (size_t)a.M * cols / 8;
	const size_t recv = a.ksplit > 1 ? (units + a.ksplit) * (silu ? 64 : 32) : 0;
	const size_t sums = (size_t)64 * WG_SUM_ROW * 4;
	size_t budget = WG_SM_SMEM / bps - 1024 - 1024;        /* the system's, the alignment */
	if (budget > WG_BLOCK_MAX - 1024)
		budget = WG_BLOCK_MAX - 1024;
	size_t ns = (budget - recv) / stage;
	if (ns > WG_NSMAX)
		ns = WG_NSMAX;
	if (ns * stage < sums)
		ns = (sums + stage - 1) / stage;
	a.ns = (int)ns;
	const size_t smem = ns * stage + recv + 1024;
	if (smem > WG_BLOCK_MAX)
		return cuda_fail(msg, len, "%s: %zu bytes of shared memory a block exceed %d", who,
		                 smem, WG_BLOCK_MAX);

	PFN_cuTensorMapEncodeTiled_v12000 encode = wg_encoder();
	if (encode == NULL)
		return cuda_fail(msg, len, "%s: the driver has no cuTensorMapEncodeTiled", who);
	CUtensorMap map;
	const cuuint64_t dims[2] = { (cuuint64_t)p->K, (cuuint64_t)p->M };
	const cuuint64_t strides[1] = { (cuuint64_t)p->K * 2 };
	const cuuint32_t box[2] = { 64, (cuuint32_t)a.box_rows }, estr[2] = { 1, 1 };
	CUresult cr = encode(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
	                     2, const_cast<void *>(p->a->data), dims, strides, box, estr,
	                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	                     CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (cr != CUDA_SUCCESS)
		return cuda_fail(msg, len, "%s: cuTensorMapEncodeTiled of a [%lld, %lld] failed (%d)",
		                 who, (long long)p->M, (long long)p->K, (int)cr);

	return bf16 ? wg_launch_id<__nv_bfloat16>(id, ctx, map, a, smem, msg, len)
	            : wg_launch_id<__half>(id, ctx, map, a, smem, msg, len);
}
