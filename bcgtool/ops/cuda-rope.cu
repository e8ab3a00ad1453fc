/*
 * cuda-rope.cu - the CUDA kernel of rope: rotary position embedding with
 * positions read from device memory.
 *
 * One thread per (token, head, pair): it reads both elements of its pair
 * before writing either, so rope works in place. The angle is computed as
 * the host does: the frequency theta^(-2i/head_dim) in double, rounded once
 * to f32 (an f32 powf may differ by an ulp between libraries, which at
 * position 4096 would move the angle by 1e-4), then a = pos * f in f32 and
 * the accurate cosf and sinf (not the __ intrinsics), which agree with the
 * host's within an ulp or two. The frequencies are computed on the host,
 * once per launch: a double pow per element cost the kernel half its time.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cuda-internal.h"

/* Copy element I of X to element I of OUT: the bits when the dtypes
 * agree (as the host's memmove), else through f32. */
__device__ __forceinline__ void cuda_rope_copy(const void *x, int dtx, void *out, int dto,
                                               int64_t i)
{
	if (dtx == dto && cuda_dtype_size(dtx) == 2)
		static_cast<uint16_t *>(out)[i] = static_cast<const uint16_t *>(x)[i];
	else if (dtx == dto)
		static_cast<uint32_t *>(out)[i] = static_cast<const uint32_t *>(x)[i];
	else
		cuda_st(out, dto, i, cuda_ld(x, dtx, i));
}

/* The frequencies theta^(-2i/head_dim), computed on the host in double and
 * rounded once to f32 -- the host kernel's exact values -- and passed by
 * value, so the kernel does no transcendental work but cosf and sinf. */
#define ROPE_MAX_PAIRS 256
struct rope_freqs {
	float f[ROPE_MAX_PAIRS];
};

/* x, out [T, heads*head_dim]. Work item (t, h, i) for i < per_head, where
 * per_head is head_dim/2 pairs plus, for an odd head_dim, one more item
 * that copies the head's last element unrotated. */
__global__ void bcg_rope_kernel(const void *x, int dtx, const int32_t *pos, void *out,
                                int dto, int64_t T, int64_t heads, int64_t head_dim,
                                struct rope_freqs freqs)
{
	int64_t half = head_dim / 2, per_head = half + (head_dim & 1);
	int64_t total = T * heads * per_head, width = heads * head_dim;

	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = n % per_head, th = n / per_head;
		int64_t h = th % heads, t = th / heads;
		int64_t k = t * width + h * head_dim + i;
		if (i >= half) {
			/* odd head_dim: the head's last element stays as it is */
			cuda_rope_copy(x, dtx, out, dto, t * width + h * head_dim + head_dim - 1);
			continue;
		}
		float p = (float)pos[t];
		float a = __fmul_rn(p, freqs.f[i]);
		float c = cosf(a), s = sinf(a);
		float x1 = cuda_ld(x, dtx, k), x2 = cuda_ld(x, dtx, k + half);
		/* Products rounded before the sums, as on the host, not fused. */
		cuda_st(out, dto, k, __fmul_rn(x1, c) - __fmul_rn(x2, s));
		cuda_st(out, dto, k + half, __fmul_rn(x2, c) + __fmul_rn(x1, s));
	}
}

extern "C" int cuda_run_rope(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *pos = &call->in[1], *out = &call->out[0];
	int64_t heads = call->attr[ROPE_HEADS].i, head_dim = call->attr[ROPE_HEAD_DIM].i;
	double theta = call->attr[ROPE_THETA].f;
	int64_t T = cuda_numel(pos);
	struct rope_freqs freqs;

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype) ||
	    pos->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "rope: dtypes x %s, pos %s, out %s not supported",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(pos->dtype),
		                 cuda_dtype_name(out->dtype));
	if (heads < 1 || head_dim < 1)
		return cuda_fail(msg, len, "rope: heads %lld and head_dim %lld must be positive",
		                 (long long)heads, (long long)head_dim);
	if (head_dim / 2 > ROPE_MAX_PAIRS)
		return cuda_fail(msg, len, "rope: head_dim %lld is above the %d this kernel takes",
		                 (long long)head_dim, 2 * ROPE_MAX_PAIRS);
	if (cuda_numel(x) != T * heads * head_dim || cuda_numel(out) != cuda_numel(x))
		return cuda_fail(msg, len, "rope: x and out must be [%lld, %lld]", (long long)T,
		                 (long long)(heads * head_dim));
	int64_t total = T * heads * (head_dim / 2 + (head_dim & 1));
	if (total <= 0)
		return 0;
	memset(&freqs, 0, sizeof freqs);
	for (int64_t i = 0; i < head_dim / 2; i++)
		freqs.f[i] = (float)pow(theta, -(double)(2 * i) / (double)head_dim);
	bcg_rope_kernel<<<cuda_ew_blocks(total, ctx->sm_count), CUDA_EW_THREADS, 0, ctx->stream>>>(
		x->data, x->dtype, static_cast<const int32_t *>(pos->data), out->data, out->dtype,
		T, heads, head_dim, freqs);
	return cuda_check_launch("bcg_rope_kernel", msg, len);
}
