/*
 * instantiate.h - rebuild a plan's graphs in this process and check them.
 *
 * Each segment is rebuilt from its recorded op list by capturing again,
 * then instantiated and uploaded; its nodes are compared with the plan's:
 *   match     the fingerprints agree;
 *   drift     they differ, with the first reason found (node count, a
 *             kernel's name, a launch shape, shared memory, an arena operand,
 *             the edges) -- e.g. cuBLAS picking other kernels on another
 *             GPU model;
 *   unchecked one side has no nodes (a plan captured on host, or the host
 *             backend): only the op list was rebuilt.
 */
#ifndef BCG_ENGINE_INSTANTIATE_H
#define BCG_ENGINE_INSTANTIATE_H

#include <stdint.h>

#include "exec.h"

enum inst_status {
	INST_MATCH = 0,
	INST_DRIFT = 1,
	INST_UNCHECKED = 2,
};

struct inst_segment {
	uint32_t segment;          /* index in the plan */
	int      status;           /* enum inst_status */
	char     reason[256];      /* drift and unchecked: why */
	uint32_t plan_nodes;
	uint32_t nodes;            /* rebuilt */
	uint64_t plan_fingerprint;
	uint64_t fingerprint;      /* rebuilt */
	uint64_t capture_ns;
	uint64_t instantiate_ns;
	uint64_t upload_ns;
	uint64_t update_ns;        /* joining a shared executable */
	uint64_t exec_bytes;       /* device memory its executable took */
	int      share;            /* enum share_status (share.h) */
	int      group;            /* its group in the engine's pool; -1 */
	int      refused;          /* SHARE_REFUSED: the backend's reason */
};

struct inst_report {
	uint32_t             nsegments;
	struct inst_segment *segments;
	uint32_t             matched;
	uint32_t             drifted;
	uint32_t             unchecked;
	uint64_t             capture_ns;      /* totals */
	uint64_t             instantiate_ns;
	uint64_t             upload_ns;
	uint64_t             update_ns;
	uint64_t             exec_bytes;      /* device memory of all executables */
	uint32_t             execs;           /* executables instantiated */
	uint32_t             joined;          /* segments on another's */
	uint32_t             refused;         /* updates refused */
};

/* The plan segment whose executable REP's segment I runs on: the first
 * of its group, or itself. */
uint32_t inst_exec_segment(const struct inst_report *rep, uint32_t i);

void inst_report_release(struct inst_report *rep);

/* Rebuild variant VI of E's plan into X, appending what was found for its
 * segments to REP (which may be NULL). */
int instantiate_variant(struct engine *e, uint32_t vi, struct exec_variant *x,
                        struct inst_report *rep, struct engine_error *err);

/* The first difference between a recorded segment and a rebuilt one, in
 * words; "" when they agree. Exposed for tests. */
void instantiate_explain(const struct plan_segment *want, const struct plan_segment *got,
                         char *buf, size_t len);

#endif /* BCG_ENGINE_INSTANTIATE_H */
