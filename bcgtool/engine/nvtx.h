/*
 * nvtx.h - NVTX ranges that name every step, segment and breakpoint, so
 * that Nsight Systems timelines line up with the plan.
 *
 * One domain, "bcgtool"; segment and breakpoint names are registered
 * strings. Ranges pushed while a stream is being captured are not replayed
 * by the driver, so replay pushes its own ranges around every launch:
 *   replay:  "step N" > "seg K <first-op>..<last-op>" (payload: node count)
 *                     > "break <name>"
 *   capture: "capture <tokens>" > the same segment and break ranges.
 * Built without the NVTX headers, every function does nothing.
 */
#ifndef BCG_ENGINE_NVTX_H
#define BCG_ENGINE_NVTX_H

#include <stdint.h>

enum nvtx_kind {
	NVTX_KIND_STEP,
	NVTX_KIND_SEGMENT,
	NVTX_KIND_BREAK,
	NVTX_KIND_CAPTURE,
	NVTX_KIND_PHASE,        /* reference run, verification, ... */
};

struct nvtx;
typedef const void *nvtx_string;   /* a registered string */

/* The bcgtool domain; NULL when NVTX is not built in (calls on NULL are
 * no-ops, so callers need not check). */
struct nvtx *nvtx_open(void);
void nvtx_close(struct nvtx *nv);

nvtx_string nvtx_register(struct nvtx *nv, const char *text);

/* Push a range named by a registered string or by text; PAYLOAD is shown
 * with it when not 0. */
void nvtx_push_registered(struct nvtx *nv, enum nvtx_kind kind, nvtx_string name,
                          uint64_t payload);
void nvtx_push(struct nvtx *nv, enum nvtx_kind kind, const char *text);
void nvtx_pop(struct nvtx *nv);

#endif /* BCG_ENGINE_NVTX_H */
