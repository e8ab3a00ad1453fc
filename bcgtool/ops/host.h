/*
 * host.h - the host reference kernels: one per op kind, on host memory.
 *
 * They define what every op computes (see op.h): f32 arithmetic, inputs
 * widened exactly, results rounded to nearest even. The host backend runs
 * them; the CUDA kernels are tested against them.
 *
 * Where each kind's reference lives:
 *   host-elementwise.c  fill copy slice add mul scale silu_mul gelu
 *   host-matmul.c       matmul matmul_add matmul_silu_mul, each also
 *                       "blocked"
 *   host-norm.c         rmsnorm layernorm
 *   host-fused.c        add_rmsnorm rope_kv_write
 *   host-softmax.c      softmax argmax
 *   host-position.c     rope embedding kv_write
 *   host-attention.c    attention
 *   host-layer.c        decoder_layer, each also "blocked" (its products)
 *   host-paged.c        paged_kv_write rope_paged_kv_write paged_attention
 *   host-moe.c          moe_router moe_router_paged moe_experts gated_add
 *   host.c              the table below, load/store, tensor initializers
 *
 * Conventions every kernel follows, beyond op.h:
 *  - Arithmetic is plain f32, one operation at a time in the order written,
 *    never fused into a multiply-add (host-kernels.h sees to it);
 *    accumulators are f32 and sum in index order. Attribute values (doubles)
 *    are rounded to f32 before use.
 *  - A kernel reads only operands of the shapes its kind's check accepts,
 *    and never touches memory outside them, whatever the data: ids and
 *    positions out of range, kv_len out of [0, S], are handled as op.h says.
 *  - Kinds flagged OP_INPLACE (copy, add, mul, scale, rmsnorm, layernorm,
 *    gelu, softmax, rope, add_rmsnorm, matmul_add) give the same bytes
 *    when out[0] is in[0].
 *  - A fused kind gives the bytes of its unfused sequence of kernels: it
 *    runs the same arithmetic, rounding to the dtype where the sequence
 *    stores an intermediate.
 *  - Kernels never dereference call->kind: a test may leave it NULL.
 *  - They may allocate scratch to go faster, and fall back to a slower path
 *    giving identical bytes when that fails: they cannot fail. The
 *    collectives and decoder_layer (whose intermediates no slower path can
 *    do without) are the exceptions: the backend runs them through the
 *    functions below, which say why they failed.
 */
#ifndef BCG_OPS_HOST_H
#define BCG_OPS_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"

/* Run CALL, whose operands hold host addresses and passed the kind's check.
 * Host kernels cannot fail. */
typedef void (*host_kernel_fn)(const struct op_call *call);

/* all_reduce and all_gather (host-dist.c), the host kernels that can fail:
 * 0, or -1 with one sentence in MSG (a rank missing, a group aborted). */
int host_collective(const struct op_call *call, char *msg, size_t len);

/* decoder_layer (host-layer.c), BLOCKED picking its products' loop
 * order: 0, or -1 with one sentence in MSG when its intermediates find no
 * memory (out and the caches then untouched). Through the table such a
 * failure leaves NaN in out. */
int host_decoder_layer_run(const struct op_call *call, int blocked, char *msg, size_t len);

/* The reference kernel of op ID; NULL for an ID out of range. */
host_kernel_fn host_kernel(enum op_id id);

/* Implementations of op ID on the host, as cuda.h has them for CUDA: index 0
 * is host_kernel(ID); the products also have a cache-blocked loop order
 * ("blocked") that sums each element in the same order, so every
 * implementation gives the same bytes. Names are stored in plans. */
int            host_impl_count(enum op_id id);
const char    *host_impl_name(enum op_id id, int impl);
host_kernel_fn host_impl_kernel(enum op_id id, int impl);

/* The first row of a moe_router or moe_router_paged call (run) whose
 * weights hold a NaN: its logits were not finite, or gave no finite
 * softmax. -1 when there is none. The host backend reports such a row as
 * a fault of the step. */
int64_t host_moe_router_nan_row(const struct op_call *call);

/* Element I of a float tensor (f32, f16 or bf16) widened to f32, and
 * stored back with rounding; the tensor's dtype decides the format.
 * An i32 tensor loads as (float)value and stores as host_f32_to_i32(v). */
float host_load(const struct op_tensor *t, int64_t i);
void  host_store(const struct op_tensor *t, int64_t i, float v);

/* V truncated toward zero; NaN gives 0, values beyond the i32 range the
 * nearest bound (as CUDA's __float2int_rz). */
int32_t host_f32_to_i32(float v);

/* Fill the COUNT elements of DST (dtype DTYPE) as INIT says (plan.h). Every
 * element i is computed in f32, with these exact operations (each rounded
 * to nearest even, none fused; (float) of a double or of a uint64_t also
 * rounds to nearest even):
 *
 *   NONE    nothing is written
 *   ZEROS   v = 0.0f
 *   ONES    v = 1.0f
 *   CONST   v = (float)value
 *   RANDOM  v = bcg_uniform(seed, i) * (float)scale
 *   ARANGE  v = (float)value + (float)i * (float)scale
 *
 * and stored as f32, as f16 or bf16 rounded to nearest even (numeric.h),
 * or as i32 by host_f32_to_i32(v). cuda_init_tensor() gives the same bytes
 * (on the device: __fmul_rn/__fadd_rn, __ull2float_rn, __float2int_rz).
 * An unknown dtype or init kind writes nothing. */
void host_init_tensor(void *dst, int dtype, uint64_t count, const struct plan_init *init);
/* Elements FIRST to FIRST + COUNT - 1 of that tensor (DST its start), as
 * host_init_tensor writes them: large tensors in parts. */
void host_init_range(void *dst, int dtype, uint64_t first, uint64_t count,
                     const struct plan_init *init);
/* The same for a rank's share of a split tensor: element i takes the
 * value of element bcg_slice_index(SLICE, i) of the whole tensor (numeric.h).
 * SLICE NULL: the whole tensor, as host_init_range. */
struct bcg_slice;
void host_init_range_slice(void *dst, int dtype, uint64_t first, uint64_t count,
                           const struct plan_init *init, const struct bcg_slice *slice);

#endif /* BCG_OPS_HOST_H */
