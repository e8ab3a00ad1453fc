/*
 * kernel-shape.h - the block shapes of the decode products' kernels, to
 * measure them: BCG_GEMV_SHAPE picks the shape of the products' "gemv"
 * (cuda-smallm.cu's bcg_smallm_gemv_kernel), BCG_MOE_GU_SHAPE that of the
 * experts' gate|up at decode sizes (cuda-moe.cu's
 * bcg_moe_gate_up_small_kernel). Unset, empty or "default": the shape the
 * kernels had before the variable existed.
 *
 * A shape is gGuU: G columns a block and U units (16-byte pieces of a
 * weight row, or elements where rows are not whole pieces) in flight a
 * thread per row and round, every load of a round issued before the first
 * product.
 *
 *  - BCG_GEMV_SHAPE: G weight rows a block, 4, 8 or 16 (G output columns
 *    of matmul and matmul_add; G / 2 columns of the gate and of the up
 *    half of matmul_silu_mul); U 1, 2 or 4; G * U <= 16 (the loads of a
 *    round take 4 registers each: 64 at most). At 8 tokens a block holds
 *    one unit a round and at most 8 rows, as the default does, which
 *    keeps the kernel within its registers. "auto": the host planner's
 *    rule (cuda-smallm.cu, smallm_shape_auto). The default is g4u2.
 *  - BCG_MOE_GU_SHAPE: G columns of one expert a block, 2, 4 or 8 (2G
 *    rows: gate and up); U 1, 2 or 4; 2G * U <= 16; at 8 pairs a chunk
 *    one unit, as the default, and G 8 takes chunks of at most 4 pairs.
 *    The default is g4u1 at one pair a chunk (one token), g2u2 above.
 *
 * Every shape of a kernel gives the same bytes when the K split is the
 * same: a column's sum is each thread's units in unit order, the warps'
 * butterflies and the warps in order, whatever the columns a block or
 * the units a round. gemv's split along K follows the column groups (so
 * a shape with fewer groups may split where the default does not); the
 * experts' kernel never splits.
 */
#ifndef BCG_OPS_KERNEL_SHAPE_H
#define BCG_OPS_KERNEL_SHAPE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* G 0: the default shape; G KERNEL_SHAPE_AUTO: the planner's rule. */
struct kernel_shape {
	int g;
	int u;
};

#define KERNEL_SHAPE_AUTO (-1)

enum kernel_shape_kind {
	KERNEL_SHAPE_GEMV   = 0,       /* BCG_GEMV_SHAPE */
	KERNEL_SHAPE_MOE_GU = 1,       /* BCG_MOE_GU_SHAPE */
};

/* Whether (G, U) is a shape KIND takes (not the default nor auto). */
int kernel_shape_valid(enum kernel_shape_kind kind, int g, int u);

/* VALUE (NULL: unset) of KIND's variable into *OUT. 0, or -1 with one
 * sentence in MSG naming the variable, the value and what it takes. */
int kernel_shape_parse(enum kernel_shape_kind kind, const char *value,
                       struct kernel_shape *out, char *msg, size_t len);

/* Both variables from the environment. 0, or -1 with MSG. */
int kernel_shapes_from_env(struct kernel_shape *gemv, struct kernel_shape *moe_gu, char *msg,
                           size_t len);

#ifdef __cplusplus
}
#endif

#endif
