/*
 * nsys.h - what bcgtool reads from an Nsight Systems SQLite export.
 *
 * Only the tables a replay profile needs: kernels (CUPTI_ACTIVITY_KIND_
 * KERNEL), the runtime calls that launched them (CUPTI_ACTIVITY_KIND_
 * RUNTIME, joined by correlation id; CUPTI_ACTIVITY_KIND_DRIVER too, where
 * the export has it, for libraries that launch through the driver), NVTX push/pop ranges (NVTX_EVENTS
 * with StringIds), and graph node creation (CUDA_GRAPH_NODE_EVENTS, which
 * ties an instantiated graph's node to the node it was cloned from). The
 * export is read with SQLite, never parsed by hand; columns are looked up
 * by name, since they move between Nsight Systems versions.
 */
#ifndef BCG_PROFILE_NSYS_H
#define BCG_PROFILE_NSYS_H

#include <stddef.h>
#include <stdint.h>

#define NSYS_NONE (-1)

struct nsys_kernel {
	int64_t  start, end;     /* ns, GPU timeline */
	int64_t  corr;           /* correlation id of the launching call */
	int64_t  node;           /* graph node id as run; NSYS_NONE: not a graph kernel */
	int64_t  orig_node;      /* the node it was cloned from; NSYS_NONE: unknown */
	uint32_t grid[3], block[3];
	const char *name;        /* short name */
	const char *mangled;     /* mangled name; the short name when absent */
	int64_t  row;            /* rowid, for messages */
};

struct nsys_range {           /* an NVTX push/pop or start/end range */
	int64_t  start, end;
	int64_t  tid;
	const char *text;
	uint64_t payload;         /* uint64 payload; 0 when none */
};

struct nsys_call {            /* a CUDA runtime or driver call */
	int64_t start, end;
	int64_t tid;
	int64_t corr;
};

struct nsys_trace {
	struct nsys_kernel *kernels;     /* by start */
	size_t              nkernels;
	struct nsys_range  *ranges;      /* by start */
	size_t              nranges;
	struct nsys_call   *calls;       /* by correlation id */
	size_t              ncalls;
	int                 has_node_events;
	char                version[64]; /* the exporter's version, "" unknown */
	char                device[128]; /* the GPU's name, "" unknown */
	char              **strings;     /* owned copies of every string above */
	size_t              nstrings, capstrings;
};

/* Read the SQLite export at PATH into T. Returns 0, or an exit status (2:
 * not an export, or one that makes no sense; 3: out of memory or I/O)
 * with the reason in MSG (without the path). */
int nsys_read(const char *path, struct nsys_trace *t, char *msg, size_t len);
void nsys_release(struct nsys_trace *t);

/* The call with correlation id CORR, or NULL. */
const struct nsys_call *nsys_find_call(const struct nsys_trace *t, int64_t corr);

/* 1 when this bcgtool reads SQLite exports. */
int nsys_have_sqlite(void);
#define NSYS_NO_SQLITE_MSG "built without SQLite (install libsqlite3-dev and reconfigure)"

#endif /* BCG_PROFILE_NSYS_H */
