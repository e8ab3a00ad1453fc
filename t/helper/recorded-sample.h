/*
 * recorded-sample.h - a small recorded plan built through the libplan API,
 * as `bcgtool record` would make it, from a module written here as PTX
 * text: for the tests of instantiate and replay of recorded plans
 * (t/unit/cuda-recorded.c on a GPU, t/helper/recorded-plan.c for the CLI
 * tests anywhere).
 *
 * The module (sm_90) holds three kernels over N = 256 u32 elements:
 *   k_write(u32 *dst, u32 n, u32 base)        dst[i] = base + i
 *       triggers its dependents at once (programmatic dependent launch);
 *   k_read(struct { u32 *src; u32 n; u32 mul; } s, u32 *out)
 *                                              out[i] = s.src[i] * mul + 1
 *       waits for its prerequisite grid first (griddepcontrol.wait): the
 *       pointer inside the struct passed by value is a patch at byte 0;
 *   k_indirect(u64 *table, u32 n, u32 *out)   out[i] = ((u32 *)table[0])[i]
 *       follows an address stored in device memory.
 * Allocations (4 KiB each, recorded 64 KiB apart from BASE, so that they
 * share one 2 MiB granule): A B C D E F G H T, T holding A's recorded
 * address as its snapshot. One variant ("step", number 1):
 *   segment 0: k_write(A, N, 7) -programmatic-> k_read({A, N, 3}, B)
 *              -> memcpy B to C (N words) -> memset F[0..63] = 5 (u32)
 *   break "tail": k_write(D, N, 100); a copy of i*i (N words) from host
 *              memory to E; k_read({D, N, 3}, G) with PDL; and with
 *              INDIRECT, k_indirect(T, N, H).
 * So after a step: A = 7+i, B = C = 22+3i, F = 5 (first 64 words), D =
 * 100+i, E = i*i, G = 301+3i, H = 7+i.
 */
#ifndef BCG_T_RECORDED_SAMPLE_H
#define BCG_T_RECORDED_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define RS_N      256u
#define RS_BYTES  4096u
#define RS_STRIDE 0x10000u

enum rs_alloc { RS_A, RS_B, RS_C, RS_D, RS_E, RS_F, RS_G, RS_H, RS_T, RS_NALLOCS };

struct rs_opts {
	uint64_t base;       /* recorded address of A; 2 MiB aligned */
	int      indirect;   /* the break ends with k_indirect */
	int      no_image;   /* the module was recorded without its image */
	int      host_node;  /* the segment holds a host node too */
	int      stray;      /* k_read's output word lies in no allocation */
	int      layout;     /* k_write's parameters recorded as two, (u64, u64)
	                        at bytes 0 and 8, where the module lays out three,
	                        (u64, u32, u32) at 0, 8 and 12: a layout another
	                        driver might have given, a drift here */
	int      foreign;    /* recorded on an "NVIDIA B200" (sm_100, driver
	                        13.1), its module PTX for sm_100 only */
	int      offsets;    /* (format 1.7) the items' start offsets: the break
	                        started 30 us after the segment (which took 20
	                        us: a 10 us gap), launched 25 us after it */
};

/* The plan, or NULL with the reason in MSG. */
plan_t *rs_build(const struct rs_opts *o, char *msg, size_t len);

#endif /* BCG_T_RECORDED_SAMPLE_H */
