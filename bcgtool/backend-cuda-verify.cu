/*
 * backend-cuda-verify.cu - the sums of a comparison (engine/verify.h) taken
 * where the tensors lie.
 *
 * The order of every addition is the one verify.h fixes, whatever the
 * grid: a block takes whole chunks, its lanes are the chunk's lanes and
 * the chunk's sum goes to its own slot; one block then adds the slots.
 * The result is the host's to the bit, and the same on every run. The
 * double operations are spelled as rounded intrinsics so that the compiler
 * cannot fuse a product into an addition.
 */
#include <stdint.h>
#include <stdio.h>

#include "backend-cuda.h"
#include "engine/verify.h"
#include "ops/numeric.h"

/* An element's bits as a double, per dtype. */
template <int DT, typename R> static __device__ __forceinline__ double verify_value(R bits)
{
	if (DT == PLAN_DTYPE_F32)
		return (double)__uint_as_float((unsigned)bits);
	if (DT == PLAN_DTYPE_F16)
		return (double)bcg_f16_to_f32((uint16_t)bits);
	if (DT == PLAN_DTYPE_BF16)
		return (double)bcg_bf16_to_f32((uint16_t)bits);
	return (double)(int32_t)(uint32_t)bits;
}

struct verify_acc {
	double             d, r;
	unsigned long long mis;
	unsigned           nan;
};

template <int DT, typename R>
static __device__ __forceinline__ void verify_elem(R g, R w, verify_acc &a)
{
	double gv = verify_value<DT>(g), wv = verify_value<DT>(w);
	bool gn = isnan(gv), wn = isnan(wv);

	a.mis += g != w;
	a.nan |= gn != wn;
	if (!gn && !wn) {
		double diff = __dsub_rn(gv, wv);
		a.d = __dadd_rn(a.d, __dmul_rn(diff, diff));
		a.r = __dadd_rn(a.r, __dmul_rn(wv, wv));
	}
}

/* verify.h's tree over VERIFY_LANES values in shared memory; the sum
 * lands in V[0]. Every thread of the block calls it. */
static __device__ __forceinline__ void verify_tree(double *v, double *w)
{
	for (unsigned s = VERIFY_LANES / 2; s > 0; s /= 2) {
		__syncthreads();
		if (threadIdx.x < s) {
			v[threadIdx.x] = __dadd_rn(v[threadIdx.x], v[threadIdx.x + s]);
			w[threadIdx.x] = __dadd_rn(w[threadIdx.x], w[threadIdx.x + s]);
		}
	}
	__syncthreads();
}

/* Rows loaded together: loads in flight before the first sum. */
#define VERIFY_BATCH 4

template <int DT, typename R>
static __global__ void __launch_bounds__(VERIFY_LANES)
verify_chunks(const R *got, const R *want, uint64_t count, uint64_t nchunks, int vec_ok,
              double *part, verify_sums *out)
{
	constexpr unsigned V = 16 / sizeof(R);
	constexpr uint64_t ROW = (uint64_t)VERIFY_LANES * V;
	constexpr uint64_t CHUNK = ROW * VERIFY_ROWS;
	__shared__ double sd[VERIFY_LANES], sr[VERIFY_LANES];
	unsigned long long mis = 0;
	unsigned nan = 0;

	for (uint64_t c = blockIdx.x; c < nchunks; c += gridDim.x) {
		verify_acc a = { 0.0, 0.0, 0, 0 };
		uint64_t base = c * CHUNK + (uint64_t)threadIdx.x * V;

		if (vec_ok && (c + 1) * CHUNK <= count) {
			for (unsigned row = 0; row < VERIFY_ROWS; row += VERIFY_BATCH) {
				uint4 gq[VERIFY_BATCH], wq[VERIFY_BATCH];
#pragma unroll
				for (unsigned k = 0; k < VERIFY_BATCH; k++) {
					gq[k] = *reinterpret_cast<const uint4 *>(got + base + (row + k) * ROW);
					wq[k] = *reinterpret_cast<const uint4 *>(want + base + (row + k) * ROW);
				}
#pragma unroll
				for (unsigned k = 0; k < VERIFY_BATCH; k++) {
					const R *gr = reinterpret_cast<const R *>(&gq[k]);
					const R *wr = reinterpret_cast<const R *>(&wq[k]);
#pragma unroll
					for (unsigned v = 0; v < V; v++)
						verify_elem<DT, R>(gr[v], wr[v], a);
				}
			}
		} else {
			for (unsigned row = 0; row < VERIFY_ROWS; row++)
				for (unsigned v = 0; v < V; v++) {
					uint64_t i = base + row * ROW + v;
					if (i < count)
						verify_elem<DT, R>(got[i], want[i], a);
				}
		}
		mis += a.mis;
		nan |= a.nan;
		sd[threadIdx.x] = a.d;
		sr[threadIdx.x] = a.r;
		verify_tree(sd, sr);
		if (threadIdx.x == 0) {
			part[2 * c] = sd[0];
			part[2 * c + 1] = sr[0];
		}
	}
	/* Counts are integers: any order gives the same total. */
	if (mis != 0)
		atomicAdd(reinterpret_cast<unsigned long long *>(&out->mismatches), mis);
	if (nan != 0)
		atomicOr(&out->nan, 1u);
}

/* One block: accumulator t adds chunk sums t, t + LANES, ... in order. */
static __global__ void __launch_bounds__(VERIFY_LANES)
verify_total(const double *part, uint64_t nchunks, verify_sums *out)
{
	__shared__ double sd[VERIFY_LANES], sr[VERIFY_LANES];
	double d = 0.0, r = 0.0;

	for (uint64_t c = threadIdx.x; c < nchunks; c += VERIFY_LANES) {
		d = __dadd_rn(d, part[2 * c]);
		r = __dadd_rn(r, part[2 * c + 1]);
	}
	sd[threadIdx.x] = d;
	sr[threadIdx.x] = r;
	verify_tree(sd, sr);
	if (threadIdx.x == 0) {
		out->diff2 = sd[0];
		out->ref2 = sr[0];
	}
}

template <int DT, typename R>
static void verify_launch(cudaStream_t stream, const void *got, const void *want, uint64_t count,
                          uint64_t nchunks, unsigned blocks, double *part, verify_sums *out)
{
	int vec_ok = (((uintptr_t)got | (uintptr_t)want) & 15u) == 0;

	verify_chunks<DT, R><<<blocks, VERIFY_LANES, 0, stream>>>(
		static_cast<const R *>(got), static_cast<const R *>(want), count, nchunks, vec_ok,
		part, out);
}

typedef void (*verify_launch_fn)(cudaStream_t, const void *, const void *, uint64_t, uint64_t,
                                 unsigned, double *, verify_sums *);

extern "C" size_t cuda_verify_work_bytes(int dtype, uint64_t count)
{
	uint64_t nchunks = (count + VERIFY_CHUNK(dtype) - 1) / VERIFY_CHUNK(dtype);

	return sizeof(verify_sums) + (size_t)nchunks * 2 * sizeof(double);
}

extern "C" int cuda_verify_sums(cudaStream_t stream, int dtype, const void *got, const void *want,
                                uint64_t count, void *work, int sm_count, char *msg, size_t len)
{
	uint64_t nchunks = (count + VERIFY_CHUNK(dtype) - 1) / VERIFY_CHUNK(dtype);
	uint64_t most = (uint64_t)(sm_count > 0 ? sm_count : 132) * 4;
	unsigned blocks = (unsigned)(nchunks < most ? nchunks : most);
	verify_sums *out = static_cast<verify_sums *>(work);
	double *part = reinterpret_cast<double *>(out + 1);
	verify_launch_fn launch = dtype == PLAN_DTYPE_F32  ? verify_launch<PLAN_DTYPE_F32, uint32_t> :
	                          dtype == PLAN_DTYPE_F16  ? verify_launch<PLAN_DTYPE_F16, uint16_t> :
	                          dtype == PLAN_DTYPE_BF16 ? verify_launch<PLAN_DTYPE_BF16, uint16_t> :
	                          dtype == PLAN_DTYPE_I32  ? verify_launch<PLAN_DTYPE_I32, uint32_t> :
	                          nullptr;
	cudaError_t e;

	if (launch == nullptr) {
		snprintf(msg, len, "comparing tensors of dtype %d: not a dtype", dtype);
		return -1;
	}
	e = cudaMemsetAsync(out, 0, sizeof *out, stream);
	if (e != cudaSuccess) {
		snprintf(msg, len, "clearing the comparison's sums: %s", cudaGetErrorString(e));
		return -1;
	}
	if (blocks > 0)
		launch(stream, got, want, count, nchunks, blocks, part, out);
	verify_total<<<1, VERIFY_LANES, 0, stream>>>(part, nchunks, out);
	e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "comparison kernel: %s", cudaGetErrorString(e));
		return -1;
	}
	return 0;
}
