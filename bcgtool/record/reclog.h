/*
 * reclog.h - the raw recording log: what the recording library
 * (libbcg-record.so, inject.c) writes while a program runs, and what
 * `bcgtool record` reads to build a plan (convert.c).
 *
 * One log per process, in the directory the command names through
 * $BCG_RECORD_DIR, called PID.bcglog. The log is private to bcgtool: it
 * lives only between the run and the conversion, and the converter reads
 * exactly the version it was built with.
 *
 * Layout (version 1), little-endian throughout:
 *
 *   header   8 bytes "BCGRLOG\n", u32 version (1), u32 pid
 *   records  until the end of the file, each
 *              u32 type, u32 length (of the payload), u64 time, payload
 *
 * TIME is a timestamp in nanoseconds on CUPTI's clock (cuptiGetTimestamp),
 * the clock the GPU activity records (RECLOG_ACTIVITY) use too. The order
 * of records is the order the program issued the work: the converter
 * relies on it. A record cut short by a crash ends the log (the converter
 * keeps what came before and says so).
 *
 * A payload is a sequence of fields: u32 and u64 integers, and byte
 * strings (u32 length, then the bytes; text is such a string without a
 * terminating NUL). The fields of each type are listed below in order;
 * readers ignore fields after the ones they know, so a record may grow
 * at its end without a new version.
 */
#ifndef BCG_RECORD_RECLOG_H
#define BCG_RECORD_RECLOG_H

#include <stddef.h>
#include <stdint.h>

#define RECLOG_MAGIC   "BCGRLOG\n"
#define RECLOG_VERSION 1u
#define RECLOG_HEADER_BYTES 16u
#define RECLOG_RECORD_HEADER_BYTES 16u

enum reclog_type {
	/* u32 pid, u32 ppid, str argv (words joined by NUL) */
	RECLOG_PROCESS = 1,
	/* u32 device, str name, u32 cc major, u32 cc minor, u32 driver
	 * version (cuDriverGetVersion) */
	RECLOG_DEVICE = 2,
	/* str name ("cublas"), str version ("13.1.0.3"), str path */
	RECLOG_LIBRARY = 3,
	/* str text: something the library could not do, in words */
	RECLOG_NOTE = 4,
	/* u32 module id, u32 flags (RECLOG_MODULE_*), u64 bytes, bytes
	 * image (empty without IMAGE), str note (why no image) */
	RECLOG_MODULE = 5,
	/* u64 handle, u64 module handle (cuFuncGetModule; 0 unknown), str
	 * name, u32 nparams, nparams x (u32 offset, u32 size) */
	RECLOG_FUNCTION = 6,
	/* u32 device, u64 address, u64 bytes, u32 flags (RECLOG_ALLOC_*) */
	RECLOG_ALLOC = 7,
	/* u32 device, u64 address */
	RECLOG_FREE = 8,
	/* an eager kernel launch: u32 device, u64 stream, u32 correlation,
	 * then a kernel (below) */
	RECLOG_KERNEL = 9,
	/* an eager copy: u32 device, u64 stream, u32 correlation, then a
	 * copy (below) */
	RECLOG_MEMCPY = 10,
	/* an eager memset: u32 device, u64 stream, u32 correlation, then a
	 * memset (below) */
	RECLOG_MEMSET = 11,
	/* u32 device, u64 stream */
	RECLOG_CAPTURE_BEGIN = 12,
	/* u32 device, u64 stream, u64 graph */
	RECLOG_CAPTURE_END = 13,
	/* an executable graph as instantiated: u64 exec, u64 graph, u32
	 * device, u32 nnodes, u32 nedges, nnodes x node, nedges x (u32 from,
	 * u32 to, u32 type, u32 from port, u32 to port). A node is u32 type
	 * (enum plan_node_type) and, for KERNEL, a kernel; MEMCPY, a copy;
	 * MEMSET, a memset; others u32 the CUDA node type. */
	RECLOG_GRAPH = 14,
	/* u32 device, u64 stream, u64 exec, u32 correlation */
	RECLOG_GRAPH_LAUNCH = 15,
	/* NVTX: u64 thread, str message */
	RECLOG_RANGE_PUSH = 16,
	/* u64 thread */
	RECLOG_RANGE_POP = 17,
	/* u64 range id, str message */
	RECLOG_RANGE_START = 18,
	/* u64 range id */
	RECLOG_RANGE_END = 19,
	/* GPU time of some work: u32 correlation, u32 kind
	 * (RECLOG_ACT_*), u64 start, u64 end (ns, CUPTI's clock) */
	RECLOG_ACTIVITY = 20,
	/* an allocation's contents: u32 device, u64 address, bytes data */
	RECLOG_SNAPSHOT = 21,
	/* the end of the log, written at exit: no fields */
	RECLOG_END = 22,
	/* an executable graph given another graph's parameters by
	 * cuGraphExecUpdate: the fields of GRAPH, the graph being the one
	 * whose nodes the executable runs from now on (same topology) */
	RECLOG_GRAPH_UPDATE = 23,
	/* one kernel node of an executable graph given new parameters
	 * (cuGraphExecKernelNodeSetParams, cuGraphExecNodeSetParams): u64
	 * exec, u32 device, u32 node (its index in the graph as walked at
	 * instantiation; UINT32_MAX unknown), then a kernel whose cluster and
	 * flags are 0 (the node keeps its own attributes) */
	RECLOG_GRAPH_NODE_SET = 24,
	/* the handle a module load returned (cuModuleLoad*, or the
	 * library's module after cuLibraryLoad*): u32 module id (of the
	 * MODULE record the load wrote), u64 CUmodule. A FUNCTION's module
	 * handle names the latest module so linked before it; a log without
	 * these records leaves the converter to find modules by name. */
	RECLOG_MODULE_HANDLE = 25,
	/* a module about to be unloaded (its handle may name another module
	 * later): u32 module id */
	RECLOG_MODULE_UNLOAD = 26,
};

/*
 * kernel: u64 function handle, u32 grid[3], u32 block[3], u32 cluster[3],
 *         u32 shared memory, u32 flags (PLAN_LAUNCH_*), bytes args (the
 *         parameter buffer laid out by the function's parameters)
 * copy:   u64 dst, u64 src, u64 bytes, u32 flags (RECLOG_COPY_*), bytes
 *         data (the host source bytes, when kept)
 * memset: u64 dst, u32 value, u32 element, u64 width, u64 height, u64 pitch
 */

#define RECLOG_MODULE_IMAGE 0x1u   /* the image follows */
#define RECLOG_ALLOC_VMM    0x1u   /* cuMemMap of cuMemCreate memory */
#define RECLOG_COPY_SRC_HOST 0x1u
#define RECLOG_COPY_DST_HOST 0x2u

enum reclog_activity {
	RECLOG_ACT_KERNEL = 1,
	RECLOG_ACT_GRAPH  = 2,
	RECLOG_ACT_MEMCPY = 3,
	RECLOG_ACT_MEMSET = 4,
};

/* ---------------------------------------------------------------------- */
/* Writing.                                                                */

/* One record being built. Build it on the stack, then write it. */
struct reclog_rec {
	uint8_t *buf;
	size_t   len;
	size_t   cap;
	int      failed;          /* out of memory: reclog_write drops it */
	uint8_t  small[256];
};

void reclog_rec_begin(struct reclog_rec *r, uint32_t type, uint64_t time);
void reclog_put_u32(struct reclog_rec *r, uint32_t v);
void reclog_put_u64(struct reclog_rec *r, uint64_t v);
void reclog_put_bytes(struct reclog_rec *r, const void *data, size_t len);
void reclog_put_str(struct reclog_rec *r, const char *s);   /* NULL: "" */
void reclog_rec_end(struct reclog_rec *r);                  /* frees */

/* A log file open for writing; writes from any thread. */
struct reclog_writer;

/* Create PATH (it must not exist) and write the header; NULL with errno
 * on failure. */
struct reclog_writer *reclog_open(const char *path, uint32_t pid);
/* Append R; -1 when it could not be written (the writer then drops every
 * later record too, so that the log never holds a hole). */
int reclog_write(struct reclog_writer *w, const struct reclog_rec *r);
/* Flush what is buffered to the file. */
int reclog_flush(struct reclog_writer *w);
/* Flush and close; -1 when anything was lost. */
int reclog_close(struct reclog_writer *w);
/* In a child after fork: forget the parent's file without flushing the
 * parent's buffered records a second time. */
void reclog_abandon(struct reclog_writer *w);

/* ---------------------------------------------------------------------- */
/* Reading.                                                                */

struct reclog_record {
	uint32_t       type;
	uint64_t       time;
	uint64_t       seq;       /* position in the log, from 0 */
	const uint8_t *data;
	uint32_t       len;
};

struct reclog {
	char                 *path;
	uint32_t              version;
	uint32_t              pid;
	uint8_t              *bytes;     /* the whole file */
	size_t                size;
	struct reclog_record *rec;
	size_t                nrec;
	int                   truncated; /* a record was cut short */
	int                   ended;     /* RECLOG_END was seen */
};

/* Read a whole log. On failure return -1 with a message in ERR. */
int reclog_read_file(const char *path, struct reclog **out, char *err, size_t errlen);
/* The same from memory (copied). */
int reclog_read_memory(const void *data, size_t len, struct reclog **out, char *err,
                       size_t errlen);
void reclog_free(struct reclog *log);

/* A cursor over one record's fields. Reading past the end gives zeros
 * and sets BAD. */
struct reclog_cur {
	const uint8_t *p;
	const uint8_t *end;
	int            bad;
};

void reclog_cur_init(struct reclog_cur *c, const struct reclog_record *r);
uint32_t reclog_get_u32(struct reclog_cur *c);
uint64_t reclog_get_u64(struct reclog_cur *c);
/* A byte string: its bytes (in the log) and length. */
const uint8_t *reclog_get_bytes(struct reclog_cur *c, uint32_t *len);
/* Text, copied into BUF (LEN bytes, truncated, NUL-terminated). */
const char *reclog_get_str(struct reclog_cur *c, char *buf, size_t len);
/* Text, malloc'd; NULL when out of memory. */
char *reclog_get_strdup(struct reclog_cur *c);

/* The type's name ("kernel", "graph-launch"), "?" when unknown. */
const char *reclog_type_name(uint32_t type);

#endif /* BCG_RECORD_RECLOG_H */
