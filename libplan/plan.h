/*
 * plan.h - libplan: the segment plan of a breakable CUDA graph, in memory
 * and on disk.
 *
 * A plan is the artifact `bcgtool capture` writes: the program that was
 * captured (dims, host vars, tensors in one arena, ops), and for every
 * variant (one value of the token dim) the ordered list of items that make a
 * forward step: CUDA-graph segments and the eager breakpoints between them.
 * formats/plan-format.md specifies the file; this header the model.
 *
 * Conventions:
 *  - The library never prints and never exits. Functions that can fail
 *    return 0 or a plan_error code, and fill an optional struct plan_diag.
 *  - Indexes are uint32_t; PLAN_NONE means "no such thing".
 *  - A plan owns every string and array reachable from it. Strings are never
 *    NULL (absent text is ""). The add/set functions copy what they are
 *    given, so callers may pass stack data.
 *  - Accessors return pointers into the plan, valid until the plan is
 *    changed or freed; they return NULL for an index out of range.
 */
#ifndef PLAN_H
#define PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version; bcgtool checks at start-up that the header it was
 * built with matches the library it runs with. */
#define PLAN_VERSION_MAJOR 0
#define PLAN_VERSION_MINOR 1
#define PLAN_VERSION_PATCH 0
#define PLAN_VERSION_NUMBER \
	(PLAN_VERSION_MAJOR * 10000 + PLAN_VERSION_MINOR * 100 + PLAN_VERSION_PATCH)
unsigned plan_version_number(void);

/* The file format version this library writes. It reads every minor version
 * of this major, newer ones included (see plan-format.md, "Compatibility"). */
#define PLAN_FORMAT_MAJOR 1
#define PLAN_FORMAT_MINOR 9
/* A file's minor version is the lowest that holds what it has: a plan
 * without a recording is written as 1.3, byte for byte what 1.3 wrote; a
 * recorded plan as 1.4; a tensor-parallel plan (world > 1, or a tensor
 * split or a weight source sliced) as 1.5; a plan whose segments share
 * executables across variants as 1.6; a recorded plan whose items have
 * recorded start offsets as 1.7; a tensor-parallel plan whose collectives
 * ran in NCCL symmetric memory as 1.8; a plan with a choice confirmed by
 * timing whole steps (PLAN_CHOICE_STEP) as 1.9. */
#define PLAN_FORMAT_MINOR_SCRIPT   3
#define PLAN_FORMAT_MINOR_RECORDED 4
#define PLAN_FORMAT_MINOR_RANKS    5  /* a tensor-parallel plan: world > 1 */
#define PLAN_FORMAT_MINOR_SHARES   6  /* executables shared (SHAR) */
#define PLAN_FORMAT_MINOR_OFFSETS  7  /* items' recorded start offsets */
#define PLAN_FORMAT_MINOR_NCCL_MEM 8  /* collectives in symmetric memory */
#define PLAN_FORMAT_MINOR_STEP     9  /* choices confirmed in the step */

#define PLAN_NONE      UINT32_MAX
#define PLAN_MAX_RANK  4

typedef struct plan plan_t;

/* ---------------------------------------------------------------------- */
/* Enumerations. Values are stored in files: never renumber.              */

enum plan_dtype {
	PLAN_DTYPE_F32  = 1,
	PLAN_DTYPE_F16  = 2,
	PLAN_DTYPE_BF16 = 3,
	PLAN_DTYPE_I32  = 4,
};

enum plan_role {
	PLAN_ROLE_WEIGHT     = 1, /* initialized once, read-only, persistent */
	PLAN_ROLE_INPUT      = 2, /* written by a feed before every step */
	PLAN_ROLE_OUTPUT     = 3, /* read back after a step; persistent */
	PLAN_ROLE_STATE      = 4, /* persistent across steps (KV cache) */
	PLAN_ROLE_ACTIVATION = 5, /* lives between its first write and last read */
};

enum plan_backend {
	PLAN_BACKEND_HOST = 1,
	PLAN_BACKEND_CUDA = 2,
};

enum plan_mode {
	PLAN_MODE_BREAKABLE = 1, /* graph segments, breaking at eager ops */
	PLAN_MODE_FULL      = 2, /* one graph; every op must be graph-safe */
	PLAN_MODE_EAGER     = 3, /* every op a breakpoint (debugging) */
};

enum plan_init_kind {
	PLAN_INIT_NONE   = 0, /* contents undefined until written */
	PLAN_INIT_ZEROS  = 1,
	PLAN_INIT_ONES   = 2,
	PLAN_INIT_CONST  = 3, /* every element = value */
	PLAN_INIT_RANDOM = 4, /* uniform in [-scale, scale), from seed */
	PLAN_INIT_ARANGE = 5, /* element i = value + i * scale */
	PLAN_INIT_SAFETENSORS = 6, /* read from checkpoint files: the plan's
	                              weight sources (1.2) */
};

enum plan_feed_kind {
	PLAN_FEED_NONE      = 0,
	PLAN_FEED_POSITIONS = 1, /* i32: element t = var - T + t (var: the step's value) */
	PLAN_FEED_TOKENS    = 2, /* i32: pseudo-random ids in [0, range), new each step */
	PLAN_FEED_RANDOM    = 3, /* float: uniform in [-scale, scale), new each step */
	PLAN_FEED_PROMPT    = 4, /* i32 (1.2): in a generation, the prompt, then the
	                            last real row of tensor `from` (greedy feedback);
	                            otherwise as TOKENS */
	/* Format 1.2: the serving batch (i32; op-script.md, "Batch feeds"),
	 * from the scheduler's batch or the default batch of the step. */
	PLAN_FEED_SEQ_LENS      = 5, /* [R]: KV length of each request after the step */
	PLAN_FEED_QUERY_START   = 6, /* [R+1]: first token row of each request */
	PLAN_FEED_BLOCK_TABLE   = 7, /* [R, MB]: cache block ids of each request */
	PLAN_FEED_SLOTS         = 8, /* [T]: cache slot of each token; -1 for padding */
	PLAN_FEED_SEQ_POSITIONS = 9, /* [T]: position of each token in its sequence */
};

enum plan_attr_type {
	PLAN_ATTR_INT   = 1, /* i */
	PLAN_ATTR_FLOAT = 2, /* f */
	PLAN_ATTR_BOOL  = 3, /* i: 0 or 1 */
	PLAN_ATTR_VAR   = 4, /* i: index of a host var, read each step */
	PLAN_ATTR_STR   = 5, /* s */
};

enum plan_item_kind {
	PLAN_ITEM_SEGMENT = 1,
	PLAN_ITEM_BREAK   = 2,
};

enum plan_node_type {
	PLAN_NODE_KERNEL = 1,
	PLAN_NODE_MEMCPY = 2,
	PLAN_NODE_MEMSET = 3,
	PLAN_NODE_HOST   = 4,
	PLAN_NODE_GRAPH  = 5, /* child graph */
	PLAN_NODE_EMPTY  = 6,
	PLAN_NODE_EVENT_RECORD = 7,
	PLAN_NODE_EVENT_WAIT   = 8,
	PLAN_NODE_OTHER  = 15,
};

enum plan_break_reason {
	PLAN_BREAK_KIND   = 1, /* the op kind cannot live in a graph in this mode */
	PLAN_BREAK_FORCED = 2, /* the script says eager: true */
	PLAN_BREAK_MODE   = 3, /* the variant's mode is eager */
	/* 4 is kept for a second reason an op kind breaks. */
	PLAN_BREAK_RECORDED = 5, /* (1.4) eager work a recorded program ran
	                            between two graph launches */
};

/* How a plan was made (format 1.4): from an op script by `bcgtool
 * capture`, or from another program's GPU work by `bcgtool record`. */
enum plan_origin {
	PLAN_ORIGIN_SCRIPT   = 1,
	PLAN_ORIGIN_RECORDED = 2,
};

/* Names as used in scripts, output and JSON ("f16", "weight", "breakable",
 * "kernel", "kind"); "?" for a value out of range. The *_from_name
 * functions return 0 when the name is unknown. */
const char *plan_dtype_name(int dtype);
const char *plan_role_name(int role);
const char *plan_backend_name(int backend);
const char *plan_mode_name(int mode);
const char *plan_init_name(int init);
const char *plan_feed_name(int feed);
const char *plan_attr_type_name(int type);
const char *plan_node_type_name(int type);
const char *plan_break_reason_name(int reason);
const char *plan_edge_type_name(int type);     /* "default", "programmatic" */
const char *plan_edge_port_name(int port);     /* "default", "programmatic",
                                                  "launch-completion" */
int plan_dtype_from_name(const char *name);
int plan_role_from_name(const char *name);
int plan_mode_from_name(const char *name);

/* Bytes per element (4, 2, 2, 4); 0 for an unknown dtype. */
size_t plan_dtype_size(int dtype);

/* ---------------------------------------------------------------------- */
/* The model.                                                              */

struct plan_meta {
	const char *tool;          /* "bcgtool 0.1.0" */
	const char *script;        /* the op script's path as given */
	uint64_t    script_hash;   /* plan_hash64() of the script's bytes */
	int64_t     created;       /* seconds since the epoch (plan_now()) */
	int         backend;       /* enum plan_backend */
	const char *device;        /* "NVIDIA H100 80GB HBM3"; "" on host */
	int32_t     cc_major;      /* compute capability; 0 on host */
	int32_t     cc_minor;
	int32_t     cuda_runtime;  /* as cudaRuntimeGetVersion(): 13000 */
	int32_t     cuda_driver;   /* as cudaDriverGetVersion() */
	int32_t     cublas;        /* as cublasGetVersion(): 130000 */
	uint32_t    features;      /* PLAN_FEATURE_*: how the plan was captured */
};

/* Capture features that instantiate and replay must reproduce. */
#define PLAN_FEATURE_PDL 0x1u      /* kernels launched with programmatic
                                      stream serialization where they
                                      support it */

/* The arena: one allocation holding every tensor and var mirror. */
struct plan_layout {
	uint64_t arena_bytes;      /* size of the arena */
	uint64_t unshared_bytes;   /* what it would be without activation reuse */
	uint32_t alignment;        /* every offset is a multiple of this */
};

#define PLAN_DIM_TOKENS 0x1u   /* the token dim; one variant per capture size */

struct plan_dim {
	const char *name;
	const char *expr;    /* the expression as written ("3*H"); "" for a number */
	int64_t     value;   /* resolved; for the token dim, the largest capture size */
	uint32_t    flags;   /* PLAN_DIM_* */
};

/* A host var changes every step. Its value at step s (from 0) is
 * plan_var_value(); a 4-byte i32 mirror of it lives in the arena at
 * `offset`, written before each step, for graph-safe ops to read. */
struct plan_var {
	const char *name;
	int64_t     start;
	int64_t     step;    /* >= 0 */
	int64_t     limit;   /* >= start; past it the value wraps to start */
	uint64_t    offset;
};

/* One axis of a shape: a named dim (dim != PLAN_NONE) or a literal size. */
struct plan_axis {
	uint32_t dim;
	int64_t  size;       /* the literal size; for a dim, its value (informative) */
};

struct plan_init {
	int      kind;       /* enum plan_init_kind */
	uint64_t seed;
	double   scale;
	double   value;
};

struct plan_feed {
	int      kind;       /* enum plan_feed_kind */
	uint32_t var;        /* POSITIONS: the var; PLAN_NONE: var = (s + 1) * T */
	uint64_t seed;       /* TOKENS, RANDOM */
	int64_t  range;      /* TOKENS, PROMPT */
	double   scale;      /* RANDOM */
	uint32_t from;       /* PROMPT: the i32 tensor fed back; else PLAN_NONE */
};

/*
 * How a tensor splits over the ranks of a tensor-parallel plan (format
 * 1.5). Along AXIS the tensor is the concatenation of NBLOCKS blocks (one
 * block when the script names none: q | k | v of a fused product are
 * three). Each block is made of units of UNIT elements along the axis (a
 * head's head_dim; 1 when the script names none) and splits by units: a
 * block of u units over N ranks gives rank r the units [r u/N, (r+1) u/N)
 * when N divides u; when u divides N instead, unit r / (N/u), held alike
 * by N/u ranks (key/value heads fewer than the ranks are replicated); any
 * other u cannot split. In a script's plan each block's START is 0 and
 * LEN its FULL size; in a rank's plan they are that rank's share, and the
 * tensor's shape on AXIS is the sum of the LENs.
 *
 * NBLOCKS 0 (a zeroed record): not split; every rank holds all of it.
 */
#define PLAN_MAX_SPLIT_BLOCKS 8

struct plan_split_block {
	int64_t full;        /* the block's size along the axis, unsplit */
	int64_t start;       /* the first element this rank holds, within the block */
	int64_t len;         /* how many it holds */
};

struct plan_split {
	uint32_t                nblocks;  /* 0: replicated */
	uint32_t                axis;     /* < the tensor's rank; never the token dim */
	int64_t                 unit;     /* >= 1 */
	struct plan_split_block block[PLAN_MAX_SPLIT_BLOCKS];
};

struct plan_tensor {
	const char      *name;
	int              dtype;   /* enum plan_dtype */
	int              role;    /* enum plan_role */
	uint32_t         rank;    /* 1..PLAN_MAX_RANK */
	struct plan_axis shape[PLAN_MAX_RANK];
	uint64_t         offset;  /* arena offset in bytes */
	uint64_t         bytes;   /* bytes reserved: its size at the largest variant */
	struct plan_init init;
	struct plan_feed feed;
	struct plan_split split;  /* tensor parallelism (1.5); zeroed: not split */
};

struct plan_attr {
	const char *key;
	int         type;    /* enum plan_attr_type */
	int64_t     i;       /* INT, BOOL, VAR (the var's index) */
	double      f;       /* FLOAT */
	const char *s;       /* STR; "" otherwise */
};

#define PLAN_OP_EAGER 0x1u     /* `eager: true`: always a breakpoint */

struct plan_op {
	const char             *kind;   /* "matmul" */
	const char             *name;   /* "attn.3"; "" when the script names none */
	uint32_t                flags;  /* PLAN_OP_* */
	uint32_t                line;   /* 1-based position in the script; 0 unknown */
	uint32_t                col;
	uint32_t                nin;
	uint32_t                nout;
	uint32_t                nattr;
	const uint32_t         *in;     /* tensor indexes */
	const uint32_t         *out;
	const struct plan_attr *attr;
};

struct plan_item {
	int      kind;       /* enum plan_item_kind */
	uint32_t index;      /* into the segments or the breakpoints */
};

/* A variant's capture-size key (format 1.3), as a server's batch
 * descriptor: at most REQUESTS requests of its tokens (0: any number, up
 * to the request dim), and, with PLAN_KEY_UNIFORM, uniform decode batches
 * only (one token a request: REQUESTS is then its tokens). A plan of
 * format 1.2 or older has requests 0 and no flags: it holds any batch of
 * up to its tokens. */
#define PLAN_KEY_UNIFORM 0x1u

struct plan_variant {
	int64_t                 tokens;     /* the token dim's value */
	int                     mode;       /* enum plan_mode */
	uint64_t                peak_bytes; /* arena bytes this variant alone needs */
	uint32_t                nitems;
	const struct plan_item *items;      /* in execution order */
	uint32_t                requests;   /* 1.3: the most requests; 0 any */
	uint32_t                key_flags;  /* 1.3: PLAN_KEY_* */
	/* Recorded plans (1.4); "", 0 and 0 in script plans. In a recorded
	 * plan TOKENS is the variant's number (1, 2, ... in order of first
	 * appearance): a recorded step has no token dim. */
	const char             *label;      /* the step's NVTX range name, or
	                                       how it was told apart */
	uint64_t                seen;       /* steps of this shape in the run */
	uint64_t                recorded_ns;/* median step time in the run */
	uint32_t                device;     /* the CUDA device it ran on */
};

/* A word of a kernel's parameters that holds an arena address, stored
 * relocatably. Parameters are scanned as 8-byte words because libraries
 * pass structures by value: index is the word's position in the parameter
 * buffer (its byte offset / 8). */
struct plan_param {
	uint32_t index;      /* 8-byte word of the parameter buffer */
	uint64_t offset;     /* arena offset it points at */
};

struct plan_node {
	int                      type;     /* enum plan_node_type */
	uint32_t                 op;       /* the op whose launch made it; PLAN_NONE unknown */
	const char              *kernel;   /* kernel function name; "" for other nodes */
	uint32_t                 grid[3];
	uint32_t                 block[3];
	uint32_t                 shmem;    /* dynamic shared memory, bytes */
	uint32_t                 nparams;
	const struct plan_param *params;
	uint32_t                 launch;   /* (1.4) recorded plans: the plan_launch
	                                      that rebuilds it (kernel, memcpy and
	                                      memset nodes; PLAN_NONE for others);
	                                      PLAN_NONE in script plans */
};

/* How an edge orders its two nodes (CUDA's cudaGraphDependencyType and
 * kernel node ports). Values are stored in files: never renumber. */
enum plan_edge_type {
	PLAN_EDGE_DEFAULT      = 0, /* `to` starts after `from` completes */
	PLAN_EDGE_PROGRAMMATIC = 1, /* programmatic dependent launch: `to` may
	                               start once `from` triggers or completes */
};

enum plan_edge_port {
	PLAN_PORT_DEFAULT           = 0,
	PLAN_PORT_PROGRAMMATIC      = 1, /* fires when every block triggers */
	PLAN_PORT_LAUNCH_COMPLETION = 2, /* fires when every block has started */
};

struct plan_edge {
	uint32_t from;       /* node indexes within the segment */
	uint32_t to;
	uint8_t  type;       /* enum plan_edge_type; format 1.0 files: DEFAULT */
	uint8_t  from_port;  /* enum plan_edge_port */
	uint8_t  to_port;    /* enum plan_edge_port (CUDA 13: always DEFAULT) */
};

#define PLAN_SEG_NODES 0x1u    /* nodes and fingerprint were recorded (cuda) */

struct plan_segment {
	uint32_t                variant;
	uint32_t                op_first;     /* ops [op_first, op_first + op_count) */
	uint32_t                op_count;
	uint32_t                flags;        /* PLAN_SEG_* */
	uint64_t                fingerprint;  /* see plan_fingerprint(); 0 without nodes */
	uint64_t                capture_ns;
	uint64_t                instantiate_ns;
	uint32_t                nnodes;
	const struct plan_node *nodes;
	uint32_t                nedges;
	const struct plan_edge *edges;
	uint64_t                recorded_ns;  /* (1.4) median time of this graph
	                                         launch in the recorded run; 0 */
	/* (1.7) recorded plans: where the item started within its step, as
	 * medians over the variant's steps (see plan_item_offsets()) */
	uint64_t                start_ns;     /* its GPU start after the GPU start
	                                         of the step's first item */
	uint64_t                issue_ns;     /* its launch call after the step's
	                                         first launch call (host) */
};

struct plan_breakpoint {
	uint32_t        variant;
	uint32_t        op;
	const char     *name;     /* the op's name, or "<kind>#<op index>" */
	int             reason;   /* enum plan_break_reason */
	const char     *detail;   /* why, in words */
	uint32_t        nreads;
	uint32_t        nwrites;
	const uint32_t *reads;    /* tensor indexes */
	const uint32_t *writes;
	/* Recorded plans (1.4): OP is PLAN_NONE, REASON PLAN_BREAK_RECORDED,
	 * no reads or writes; the eager work is launches [launch_first,
	 * launch_first + launch_count), in the order the program issued them.
	 * Script plans: ignored, 0. */
	uint32_t        launch_first;
	uint32_t        launch_count;
	uint64_t        recorded_ns;  /* median time of the break in the run */
	uint64_t        start_ns;     /* (1.7) as plan_segment's, of its first
	                                 launch */
	uint64_t        issue_ns;     /* (1.7) */
};

/* The checksum of one output after the eager reference run. */
struct plan_check {
	uint32_t variant;
	uint32_t tensor;
	uint32_t steps;      /* eager steps run before it was taken */
	uint64_t hash;       /* plan_hash64() of the tensor's bytes at this variant */
	double   sum;        /* sum of its elements, in double */
};

/* Token counts [tokens_min, tokens_max] run on variant (PLAN_NONE: eager).
 * Format 1.3 keys the entry like the variants: only batches of at most
 * REQUESTS_MAX requests (0: any number), and with PLAN_DISPATCH_UNIFORM
 * only uniform decode batches. Lookup takes the first entry, in table
 * order, that holds the batch (plan_dispatch_lookup_key). */
#define PLAN_DISPATCH_UNIFORM 0x1u

struct plan_dispatch {
	int64_t  tokens_min;
	int64_t  tokens_max;
	uint32_t variant;
	uint32_t requests_max;   /* 1.3; 0: any number of requests */
	uint32_t flags;          /* 1.3: PLAN_DISPATCH_* */
};

/* A segment that ran on an executable shared with segments of other
 * variants when captured (1.6, plan-format.md, SHAR): EXEC is the segment
 * whose executable it is (the group's first, which names itself), updated
 * to this one before its launch. REFUSED: the segment matched that group,
 * but the backend refused the update (RESULT: its reason, on cuda a
 * cudaGraphExecUpdateResult) and it got an executable of its own. */
#define PLAN_SHARE_REFUSED 0x1u

struct plan_share {
	uint32_t segment;
	uint32_t exec;
	uint32_t flags;     /* PLAN_SHARE_* */
	uint32_t result;    /* REFUSED: the backend's reason; else 0 */
};

/* The implementation chosen for one op of one variant, where the backend
 * has more than one for it (plan-format.md, CHOI). Instantiate and replay
 * run the recorded one, never choose again. */
#define PLAN_CHOICE_TUNED 0x1u     /* chosen by measurement; else the default */
#define PLAN_CHOICE_CLOSE 0x2u     /* a runner-up measured within the noise
                                      margin: another capture may choose it */
#define PLAN_CHOICE_STEP  0x4u     /* (1.9) confirmed by timing whole steps:
                                      the variant was captured and replayed
                                      with each contested candidate, and this
                                      one's step was the fastest (it may be
                                      slower alone than another candidate);
                                      in the file, CHOI's Tune_Flags bit 0,
                                      no bit of Choice_Flags */

struct plan_candidate {
	const char *impl;    /* implementation name ("mma", "cublas") */
	double      us;      /* median measured GPU time, microseconds; 0 untimed */
};

struct plan_choice {
	uint32_t                     variant;
	uint32_t                     op;
	const char                  *impl;   /* the chosen one; one of cand when ncand > 0 */
	uint32_t                     flags;  /* PLAN_CHOICE_* */
	uint32_t                     ncand;
	const struct plan_candidate *cand;   /* every usable one, as measured */
};

/* Where a weight's bytes came from (plan-format.md, WSRC, format 1.2): one
 * record per checkpoint tensor read into a tensor initialized from
 * safetensors files. Several records of one tensor fill it in row blocks,
 * in order (q, k and v projections stacked into one q|k|v weight). The
 * weights themselves stay out of the plan: instantiate and replay read
 * them again and compare their hashes. */
#define PLAN_WSRC_HASHED 0x1u     /* hash holds the content hash */

struct plan_weight_source {
	uint32_t    tensor;   /* the plan tensor it fills */
	uint64_t    offset;   /* byte offset of its block in that tensor */
	const char *file;     /* the safetensors file read (a shard, not an index) */
	const char *name;     /* the tensor's name in the checkpoint */
	int         dtype;    /* its dtype in the file: enum plan_dtype */
	uint64_t    bytes;    /* its size in the file */
	uint64_t    hash;     /* XXH64 (seed 0) of those bytes, when HASHED */
	uint32_t    flags;    /* PLAN_WSRC_* */
	/* A rank's share of the checkpoint tensor (1.5): viewed as [OUTER,
	 * FULL, INNER] elements, the block read is [START, START + LEN) of the
	 * middle axis, OUTER * LEN * INNER elements landing contiguously at
	 * OFFSET. LEN 0: the whole tensor (every plan before 1.5). BYTES and
	 * HASH stay those of the whole checkpoint tensor, so that every rank
	 * names the same source. */
	uint64_t    slice_outer;
	uint64_t    slice_full;
	uint64_t    slice_inner;
	uint64_t    slice_start;
	uint64_t    slice_len;
};

struct plan_stats {
	uint64_t materialize_ns;  /* arena allocation and initialization */
	uint64_t reference_ns;    /* the eager reference steps */
	uint64_t capture_ns;      /* all variants, capture only */
	uint64_t instantiate_ns;  /* all segments */
	uint64_t verify_ns;       /* replays compared with the reference */
	uint32_t reference_steps;
	uint32_t verify_exact;    /* 1 when every replay matched bit for bit */
	double   verify_max_error;/* largest relative error seen in verification */
};

/* ---------------------------------------------------------------------- */
/* Recorded plans (format 1.4).                                            */

/*
 * `bcgtool record -- CMD` builds a plan from what CMD did on the GPU (seen
 * through CUDA's injection interface and CUPTI) instead of from a script.
 * Such a plan has no dims, vars, tensors, ops, checks or dispatch table;
 * its segments have no ops (op_first 0, op_count 0) and every node of a
 * kernel names the plan_launch that rebuilds it. What it adds: the
 * recording (how and what was run), the module images the kernels come
 * from, the functions with their parameter layouts, every launch with its
 * parameter bytes and the words that hold device addresses (patches), and
 * the device allocations those addresses fall in. plan_get_origin() tells
 * the two kinds apart; a plan is recorded exactly when it has a recording.
 */

#define PLAN_RECORD_SNAPSHOT 0x1u  /* allocation contents were kept */
#define PLAN_RECORD_NVTX_STEP 0x2u /* steps were marked by an NVTX range */

struct plan_recording {
	const char *command;     /* the command line, shell-quoted words */
	const char *step_rule;   /* "nvtx:NAME", or "repeat" when found */
	const char *libraries;   /* libraries seen, "name version; ..." */
	uint32_t    pid;         /* the process recorded */
	uint32_t    flags;       /* PLAN_RECORD_* */
	uint64_t    wall_ns;     /* the command's wall time, recorded */
	uint64_t    steps;       /* steps seen, every variant */
};

#define PLAN_MODULE_IMAGE 0x1u   /* the image is kept: replayable */

/* A module (cubin, fatbin or PTX image) recorded kernels come from. The
 * plan keeps each image once (modules are unique by hash and size). */
struct plan_module {
	const char *name;        /* where it came from, "" unknown */
	uint64_t    hash;        /* XXH64 (seed 0) of the image */
	uint64_t    bytes;       /* the image's size */
	uint32_t    flags;       /* PLAN_MODULE_* */
	const char *note;        /* without IMAGE: why it was not kept */
	const void *image;       /* BYTES bytes with IMAGE; else NULL */
};

/* One parameter of a kernel, as cuFuncGetParamInfo gives it. */
struct plan_param_info {
	uint32_t offset;         /* in the parameter buffer, bytes */
	uint32_t size;
};

struct plan_function {
	uint32_t                      module;  /* plan_module index */
	const char                   *name;    /* the mangled name */
	uint32_t                      nparams;
	const struct plan_param_info *params;  /* ascending, not overlapping */
};

/* A device address of a recorded plan: in allocation ALLOC at OFFSET, or,
 * with ALLOC PLAN_NONE, an address outside every recorded allocation
 * (OFFSET is then the raw address: host memory, or device memory the
 * recording did not see allocated). */
struct plan_addr {
	uint32_t alloc;
	uint64_t offset;
};

/* A word of a launch's parameter bytes that held a device address (with
 * an allocation: OFFSET at most its size, the size being an end pointer). */
struct plan_patch {
	uint32_t         byte;   /* its byte offset in the parameter buffer;
	                            8-byte aligned, within the buffer */
	struct plan_addr addr;
};

#define PLAN_LAUNCH_PDL     0x1u  /* programmatic stream serialization */
#define PLAN_LAUNCH_COOP    0x2u  /* cooperative launch */

/* One piece of recorded work: a kernel launch, a copy or a memset, eager
 * (in a breakpoint) or a graph node (a node's LAUNCH). TYPE is
 * PLAN_NODE_KERNEL, _MEMCPY or _MEMSET. */
struct plan_launch {
	int                      type;       /* enum plan_node_type */
	/* KERNEL */
	uint32_t                 function;   /* plan_function index */
	uint32_t                 grid[3];
	uint32_t                 block[3];
	uint32_t                 cluster[3]; /* 0 0 0: none */
	uint32_t                 shmem;
	uint32_t                 flags;      /* PLAN_LAUNCH_* */
	uint32_t                 nargs;      /* parameter buffer, laid out as */
	const uint8_t           *args;       /* the function's params say */
	uint32_t                 npatches;
	const struct plan_patch *patches;    /* ascending by byte */
	/* MEMCPY: BYTES from SRC to DST; MEMSET: WIDTH elements of ELEMENT
	 * bytes (1, 2 or 4) set to VALUE, in HEIGHT rows PITCH bytes apart. */
	struct plan_addr         dst;
	struct plan_addr         src;
	uint64_t                 bytes;
	uint32_t                 value;
	uint32_t                 element;
	uint64_t                 width;
	uint64_t                 height;
	uint64_t                 pitch;
	uint32_t                 ndata;      /* MEMCPY from host memory: the */
	const uint8_t           *data;       /* source bytes as they were, */
};                                           /* when kept; else 0, NULL */

#define PLAN_ALLOC_SNAPSHOT 0x1u  /* contents kept (DATA, BYTES bytes) */
#define PLAN_ALLOC_VMM      0x2u  /* made by cuMemCreate/cuMemMap */

/* A device allocation recorded addresses fall in. */
struct plan_alloc {
	uint64_t    address;     /* the virtual address it had */
	uint64_t    bytes;
	uint32_t    device;
	uint32_t    flags;       /* PLAN_ALLOC_* */
	const void *data;        /* with SNAPSHOT; else NULL */
};

/*
 * Building a recorded plan: plan_set_recording first (on a plan with no
 * script program, segments or breakpoints; it may be set again to update
 * it), then modules, functions, allocations and launches (each names only
 * records added before it), then variants, segments and breakpoints. In a
 * recorded plan plan_add_segment takes segments with op_first and
 * op_count 0 whose kernel, memcpy and memset nodes name a launch (other
 * nodes PLAN_NONE), and plan_add_breakpoint breakpoints with op
 * PLAN_NONE, reason PLAN_BREAK_RECORDED, no reads or writes and a launch
 * range inside the launches; a script plan takes neither, and its nodes'
 * launch is stored as PLAN_NONE. A recorded kernel node's kernel, grid,
 * block and shmem are taken from its launch (other nodes get "" and 0);
 * its segment's fingerprint is plan_fingerprint_recorded() with the
 * PLAN_SEG_NODES flag. The add functions check what each record
 * alone can be checked for (patches inside the argument bytes, addresses
 * inside their allocation, allocations of a device not overlapping);
 * plan_validate checks the rest.
 */

/* ---------------------------------------------------------------------- */
/* Tensor parallelism (format 1.5).                                        */

/*
 * A tensor-parallel plan holds every rank: the plan_t a reader returns is
 * rank 0's, and ranks 1 .. world-1 are plans of their own, attached to it
 * (each with the same dims and vars, its own shares of the tensors, its
 * own ops with collectives inserted, its own variants, segments and
 * breakpoints). A plan of one GPU has world 1, rank 0, and no ranks
 * attached; it is written as before 1.5.
 */
struct plan_dist {
	uint32_t world;          /* ranks; 1 for a plan of one GPU */
	uint32_t rank;           /* which rank this plan is, < world */
	int32_t  nccl_version;   /* as ncclGetVersion(): 22809; 0 without NCCL (host ranks) */
	uint32_t flags;          /* 0; reserved */
	/* (1.8) the memory of the collectives' operands: PLAN_NCCL_MEM_* */
	uint32_t nccl_mem;
};

/* plan_dist.nccl_mem: the arena (as before 1.8), or NCCL symmetric
 * memory (buffers from ncclMemAlloc registered as a window). */
#define PLAN_NCCL_MEM_DEFAULT   0u
#define PLAN_NCCL_MEM_SYMMETRIC 1u

/* World 1 and rank 0 until set. WORLD 0, RANK >= WORLD, or a world that
 * disagrees with ranks already attached is PLAN_ERR_INVALID. */
int plan_set_dist(plan_t *plan, const struct plan_dist *dist, struct plan_diag *diag);
const struct plan_dist *plan_get_dist(const plan_t *plan);

/* Attach RANK_PLAN (whose dist says its rank, 1 .. world-1, and PLAN's
 * world) to PLAN, rank 0. PLAN owns RANK_PLAN from then on, also when the
 * call fails. A rank attached twice is PLAN_ERR_INVALID. */
int plan_add_rank(plan_t *plan, plan_t *rank_plan, struct plan_diag *diag);
/* The plan of rank R: PLAN itself for R == its own rank, else an attached
 * one; NULL when R >= world or rank R is not attached. */
const plan_t *plan_get_rank(const plan_t *plan, uint32_t r);
/* Ranks attached (not counting PLAN itself). */
uint32_t plan_count_ranks(const plan_t *plan);

/* The plan's origin: PLAN_ORIGIN_RECORDED when it has a recording. */
int plan_get_origin(const plan_t *plan);
const char *plan_origin_name(int origin);   /* "script", "recorded" */

int plan_set_recording(plan_t *plan, const struct plan_recording *rec, struct plan_diag *diag);
const struct plan_recording *plan_get_recording(const plan_t *plan); /* NULL: a script plan */

/* plan_add_module stores a module once: a module with the hash and size
 * of one already there gives that one's index (keeping the image if only
 * the new one has it). */
int plan_add_module(plan_t *plan, const struct plan_module *module, uint32_t *index, struct plan_diag *diag);
int plan_add_function(plan_t *plan, const struct plan_function *function, uint32_t *index, struct plan_diag *diag);
int plan_add_launch(plan_t *plan, const struct plan_launch *launch, uint32_t *index, struct plan_diag *diag);
int plan_add_alloc(plan_t *plan, const struct plan_alloc *alloc, uint32_t *index, struct plan_diag *diag);

uint32_t plan_count_modules(const plan_t *plan);
uint32_t plan_count_functions(const plan_t *plan);
uint32_t plan_count_launches(const plan_t *plan);
uint32_t plan_count_allocs(const plan_t *plan);
const struct plan_module   *plan_get_module(const plan_t *plan, uint32_t index);
const struct plan_function *plan_get_function(const plan_t *plan, uint32_t index);
const struct plan_launch   *plan_get_launch(const plan_t *plan, uint32_t index);
const struct plan_alloc    *plan_get_alloc(const plan_t *plan, uint32_t index);

/* The allocation of DEVICE that holds ADDRESS, or PLAN_NONE; *OFFSET gets
 * the offset within it. When none holds it, an allocation that ends
 * exactly at ADDRESS is given, *OFFSET its size: a pointer one past the
 * end (C++'s end iterators) is relocated with the allocation it ends. */
uint32_t plan_find_alloc(const plan_t *plan, uint32_t device, uint64_t address, uint64_t *offset);

/* ---------------------------------------------------------------------- */
/* Life cycle and building.                                                */

plan_t *plan_new(void);            /* NULL when out of memory */
void    plan_free(plan_t *plan);   /* NULL is fine */

/* A new plan holding PLAN's meta, layout, dims, vars, tensors and ops, and
 * no variants: the program, ready to be captured again. */
plan_t *plan_clone_program(const plan_t *plan);

int plan_set_meta(plan_t *plan, const struct plan_meta *meta, struct plan_diag *diag);
int plan_set_layout(plan_t *plan, const struct plan_layout *layout, struct plan_diag *diag);
int plan_set_stats(plan_t *plan, const struct plan_stats *stats, struct plan_diag *diag);

/* Each add function copies *X and stores its index in *index (may be NULL).
 * Segments and breakpoints are also appended to their variant's items, in
 * the order they are added. Array fields (in, out, attr, nodes, ...) are
 * copied; counts must match them. */
int plan_add_dim(plan_t *plan, const struct plan_dim *dim, uint32_t *index, struct plan_diag *diag);
int plan_add_var(plan_t *plan, const struct plan_var *var, uint32_t *index, struct plan_diag *diag);
int plan_add_tensor(plan_t *plan, const struct plan_tensor *tensor, uint32_t *index, struct plan_diag *diag);
int plan_add_op(plan_t *plan, const struct plan_op *op, uint32_t *index, struct plan_diag *diag);
int plan_add_variant(plan_t *plan, const struct plan_variant *variant, uint32_t *index, struct plan_diag *diag); /* items ignored */
int plan_add_segment(plan_t *plan, const struct plan_segment *segment, uint32_t *index, struct plan_diag *diag);
int plan_add_breakpoint(plan_t *plan, const struct plan_breakpoint *bp, uint32_t *index, struct plan_diag *diag);
int plan_add_check(plan_t *plan, const struct plan_check *check, uint32_t *index, struct plan_diag *diag);
int plan_add_dispatch(plan_t *plan, const struct plan_dispatch *entry, uint32_t *index, struct plan_diag *diag);
int plan_add_choice(plan_t *plan, const struct plan_choice *choice, uint32_t *index, struct plan_diag *diag);
/* Replace the implementation and flags of the choice recorded for OP in
 * VARIANT, keeping its candidates (a tuner that confirms its choices in
 * the step switches them back and forth). PLAN_ERR_NOT_FOUND: no choice
 * for the pair; PLAN_ERR_INVALID: an empty IMPL, one that is none of the
 * candidates' names (when there are some), an unknown flag, or Close or
 * Step without Tuned; the choice is then left as it was. It allocates
 * only for a choice without candidates: else IMPL becomes the candidate's
 * own string. */
int plan_set_choice(plan_t *plan, uint32_t variant, uint32_t op, const char *impl, uint32_t flags, struct plan_diag *diag);
int plan_add_weight_source(plan_t *plan, const struct plan_weight_source *src, uint32_t *index, struct plan_diag *diag);
/* In ascending order of segment, one at most a segment (1.6). */
int plan_add_share(plan_t *plan, const struct plan_share *share, uint32_t *index, struct plan_diag *diag);
/* Record the content hash of weight source INDEX (sets PLAN_WSRC_HASHED). */
int plan_set_weight_hash(plan_t *plan, uint32_t index, uint64_t hash, struct plan_diag *diag);

/* Placement, filled in by the memory planner. */
int plan_set_tensor_placement(plan_t *plan, uint32_t tensor, uint64_t offset, uint64_t bytes, struct plan_diag *diag);
/* Replace tensor TENSOR's feed (the script parser sets a prompt feed's
 * feedback tensor once every tensor is declared). */
int plan_set_tensor_feed(plan_t *plan, uint32_t tensor, const struct plan_feed *feed, struct plan_diag *diag);
int plan_set_var_offset(plan_t *plan, uint32_t var, uint64_t offset, struct plan_diag *diag);
int plan_set_variant_peak(plan_t *plan, uint32_t variant, uint64_t peak_bytes, struct plan_diag *diag);
int plan_set_segment_times(plan_t *plan, uint32_t segment, uint64_t capture_ns, uint64_t instantiate_ns, struct plan_diag *diag);

/* ---------------------------------------------------------------------- */
/* Reading the model.                                                      */

const struct plan_meta   *plan_get_meta(const plan_t *plan);
const struct plan_layout *plan_get_layout(const plan_t *plan);
const struct plan_stats  *plan_get_stats(const plan_t *plan);

uint32_t plan_count_dims(const plan_t *plan);
uint32_t plan_count_vars(const plan_t *plan);
uint32_t plan_count_tensors(const plan_t *plan);
uint32_t plan_count_ops(const plan_t *plan);
uint32_t plan_count_variants(const plan_t *plan);
uint32_t plan_count_segments(const plan_t *plan);
uint32_t plan_count_breakpoints(const plan_t *plan);
uint32_t plan_count_checks(const plan_t *plan);
uint32_t plan_count_dispatch(const plan_t *plan);
uint32_t plan_count_choices(const plan_t *plan);
uint32_t plan_count_weight_sources(const plan_t *plan);
uint32_t plan_count_shares(const plan_t *plan);

const struct plan_dim        *plan_get_dim(const plan_t *plan, uint32_t index);
const struct plan_var        *plan_get_var(const plan_t *plan, uint32_t index);
const struct plan_tensor     *plan_get_tensor(const plan_t *plan, uint32_t index);
const struct plan_op         *plan_get_op(const plan_t *plan, uint32_t index);
const struct plan_variant    *plan_get_variant(const plan_t *plan, uint32_t index);
const struct plan_segment    *plan_get_segment(const plan_t *plan, uint32_t index);
const struct plan_breakpoint *plan_get_breakpoint(const plan_t *plan, uint32_t index);
const struct plan_check      *plan_get_check(const plan_t *plan, uint32_t index);
const struct plan_dispatch   *plan_get_dispatch(const plan_t *plan, uint32_t index);
const struct plan_choice     *plan_get_choice(const plan_t *plan, uint32_t index);
const struct plan_weight_source *plan_get_weight_source(const plan_t *plan, uint32_t index);
const struct plan_share      *plan_get_share(const plan_t *plan, uint32_t index);
/* SEGMENT's share record, or NULL (it ran on an executable of its own). */
const struct plan_share      *plan_find_share(const plan_t *plan, uint32_t segment);

/*
 * Recorded start offsets (format 1.7): where each item of a recorded
 * variant started within its step, as medians over the variant's steps.
 * START_NS: the item's GPU start after the GPU start of the step's first
 * item (CUPTI activity times; a break's first launch); ISSUE_NS: its
 * launch call after the step's first launch call, on the host. The
 * first item's are 0; a later item's are above 0 where recorded (an
 * item starts after the one before it) and 0 where not (a file before
 * 1.7, or a run without GPU times). Within a variant each kind is
 * recorded for every item past the first or for none, and never
 * decreases along the items (plan_validate).
 */
#define PLAN_OFFSETS_START 0x1u   /* GPU start offsets recorded */
#define PLAN_OFFSETS_ISSUE 0x2u   /* host launch offsets recorded */

/* IT's (a segment's or a breakpoint's) offsets; 0 and 0 for a bad item. */
void plan_item_offsets(const plan_t *plan, const struct plan_item *it, uint64_t *start_ns,
                       uint64_t *issue_ns);
/* Which offsets VARIANT's items have (PLAN_OFFSETS_*): 0 for a script
 * plan or a variant without items; both for a variant of one item. Where
 * START is missing, *MISSING (if not NULL) gets the first item without a
 * GPU start offset, else PLAN_NONE. */
unsigned plan_variant_offsets(const plan_t *plan, uint32_t variant, uint32_t *missing);

/* The choice recorded for OP in VARIANT, or NULL. */
const struct plan_choice *plan_find_choice(const plan_t *plan, uint32_t variant, uint32_t op);

/* Index by name (tokens for variants), or PLAN_NONE. */
uint32_t plan_find_dim(const plan_t *plan, const char *name);
uint32_t plan_find_var(const plan_t *plan, const char *name);
uint32_t plan_find_tensor(const plan_t *plan, const char *name);
uint32_t plan_find_variant(const plan_t *plan, int64_t tokens);

/* The token dim's index, or PLAN_NONE when the plan has none. */
uint32_t plan_token_dim(const plan_t *plan);

/* The variant that runs TOKENS tokens per the dispatch table, or PLAN_NONE
 * (run eagerly: TOKENS is above every capture size, or below 1). In a plan
 * with keys, the batch is the default one of TOKENS tokens (op-script.md):
 * min(TOKENS, the request dim) requests, uniform decode when TOKENS is at
 * most the request dim. */
uint32_t plan_dispatch_lookup(const plan_t *plan, int64_t tokens);

/* The variant that runs a batch of TOKENS tokens over REQUESTS requests
 * (uniform decode when UNIFORM): the first dispatch entry that holds it,
 * or PLAN_NONE (eager). */
uint32_t plan_dispatch_lookup_key(const plan_t *plan, int64_t tokens, uint32_t requests,
                                  int uniform);

/* Whether the plan records capture-size keys (format 1.3): a variant with
 * requests or flags, or a dispatch entry with them. */
int plan_has_keys(const plan_t *plan);

/* Whether script variant VARIANT was verified at capture (its replay
 * compared with an eager reference run): it has output checksums, which
 * only that reference gives, or the program has no output (bcgtool then
 * verifies every variant). 0 for a recorded plan or no such variant. */
int plan_variant_verified(const plan_t *plan, uint32_t variant);

/* The request dim's value: the length of the first tensor fed seq_lens
 * (op-script.md, "Batch feeds"); 0 when the plan has none. */
int64_t plan_request_dim(const plan_t *plan);

/* A var's value at step STEP (0-based): start + (step * STEP) modulo
 * (limit - start + 1). */
int64_t plan_var_value(const struct plan_var *var, uint64_t step);

/* An axis's size at TOKENS tokens (the token dim takes TOKENS, other dims
 * their value); a tensor's element count and bytes likewise. */
int64_t  plan_axis_size(const plan_t *plan, const struct plan_axis *axis, int64_t tokens);
uint64_t plan_tensor_numel(const plan_t *plan, uint32_t tensor, int64_t tokens);
uint64_t plan_tensor_bytes(const plan_t *plan, uint32_t tensor, int64_t tokens);

/* Semantic checks beyond the file format: indexes in range, tensors inside
 * the arena, items covering each variant's ops in order, and so on; (1.5)
 * splits and slices. Rank 0 of a world of two or more is checked with
 * every other rank: each attached, valid, and agreeing with rank 0
 * (plan-format.md, "Tensor-parallel plans"); a plan of another rank is
 * checked alone. */
int plan_validate(const plan_t *plan, struct plan_diag *diag);

/* ---------------------------------------------------------------------- */
/* Hashes and time.                                                        */

/* 64-bit FNV-1a of LEN bytes, continuing from STATE (start with
 * PLAN_HASH64_INIT). Used for script hashes, checksums and fingerprints. */
#define PLAN_HASH64_INIT UINT64_C(0xcbf29ce484222325)
uint64_t plan_hash64(const void *data, size_t len, uint64_t state);

/* CRC-32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF), as the
 * file format uses for its header and payload checksums. */
uint32_t plan_crc32c(const void *data, size_t len);

/* The fingerprint of a segment: a hash of its nodes (type, kernel name,
 * grid, block, shared memory, arena parameters) and edges, in order.
 * Defined exactly in plan-format.md. */
uint64_t plan_fingerprint(const struct plan_segment *segment);

/* The fingerprint of a recorded plan's segment (1.4): as plan_fingerprint,
 * but each node hashes what its launch runs: the function's name, grid,
 * block, cluster, shared memory and the patches as (byte, allocation,
 * offset). A recorded segment with nodes stores this one. Defined exactly
 * in plan-format.md. */
uint64_t plan_fingerprint_recorded(const plan_t *plan, const struct plan_segment *segment);

/* The time to stamp on a new plan: $SOURCE_DATE_EPOCH when it is set to a
 * valid number, else the current time. */
int64_t plan_now(void);

/* ---------------------------------------------------------------------- */
/* Files.                                                                  */

struct plan_limits {
	uint64_t max_file_bytes;     /* the file itself */
	uint64_t max_content_bytes;  /* the decompressed payload */
	uint32_t max_records;        /* records in any one section */
};

/* Defaults: 1 GiB file, 1 GiB content, 16 Mi records. */
void plan_limits_default(struct plan_limits *limits);

/* Read a plan. LIMITS may be NULL for the defaults. On success *OUT holds a
 * validated plan; on failure *OUT is NULL and nothing is leaked. */
int plan_read_file(const char *path, const struct plan_limits *limits,
                   plan_t **out, struct plan_diag *diag);
int plan_read_memory(const void *data, size_t len, const struct plan_limits *limits,
                     plan_t **out, struct plan_diag *diag);

/* The format version of the file a plan was read from (the writer's version
 * for a plan built in memory). */
void plan_get_format_version(const plan_t *plan, unsigned *major, unsigned *minor);

/* Write a plan. The same plan always gives the same bytes. A plan of a
 * world of two or more is written from rank 0, with every other rank
 * attached (another rank alone is PLAN_ERR_INVALID). plan_write_file
 * writes a temporary file in PATH's directory, fsyncs it, and renames it
 * over PATH: on any failure PATH is untouched and no temporary is left.
 * plan_write_memory returns a malloc'd buffer the caller frees. */
int plan_write_file(const plan_t *plan, const char *path, struct plan_diag *diag);
int plan_write_memory(const plan_t *plan, void **data, size_t *len, struct plan_diag *diag);

/* ---------------------------------------------------------------------- */
/* JSON output.                                                            */

/*
 * A streaming JSON writer: the one behind the plan dumps and every --json
 * output of bcgtool, so all of it shares one layout (two-space indent, one
 * member per line), one escaping and one number format (%.9g; NaN and
 * infinities as null). Inside an object, call plan_json_key before each
 * value. The caller keeps the nesting balanced.
 */
struct plan_json;
struct plan_json *plan_json_new(FILE *f);       /* NULL when out of memory */
void plan_json_free(struct plan_json *j);       /* ends the line */
void plan_json_object_begin(struct plan_json *j);
void plan_json_object_end(struct plan_json *j);
void plan_json_array_begin(struct plan_json *j);
void plan_json_array_end(struct plan_json *j);
void plan_json_key(struct plan_json *j, const char *key);
void plan_json_string(struct plan_json *j, const char *s);
void plan_json_int(struct plan_json *j, int64_t v);
void plan_json_uint(struct plan_json *j, uint64_t v);
void plan_json_double(struct plan_json *j, double v);
void plan_json_bool(struct plan_json *j, int v);
void plan_json_null(struct plan_json *j);

/* ---------------------------------------------------------------------- */
/* Text for people.                                                        */

/*
 * Short descriptions of records, as bcgtool's tables, the dumps and the
 * diff write them. Each writes a NUL-terminated text into BUF (LEN bytes,
 * truncated to fit) and returns BUF.
 *
 *   plan_shape_text        "[T, H]": dim names, literal sizes as numbers
 *   plan_op_label          the op's name, or "<kind>#<index>" (as
 *                          breakpoints are named) when it has none
 *   plan_init_text         "random scale 0.5 seed 1", "ones", "none"
 *   plan_feed_text         "tokens range 32 seed 3", "positions var kv_len"
 *   plan_source_text       "feed ...", "init ..." or "-"
 *   plan_attr_text         "eps=1e-05", "kv_len=kv_len" (a var by name)
 *   plan_tensor_list_text  "q, k_cache, v_cache"; "-" for none
 *   plan_version_text      13000 -> "13.0"; with CUBLAS, 130100 -> "13.1.0";
 *                          "-" for 0
 *   plan_dispatch_text     "3-4 -> 4", "1 -> 1", "5-8 -> eager"; with keys
 *                          (1.3) "3-4 x4 uniform -> 4", "1-8 x4 -> 8"
 *   plan_key_text          a variant's key: "4 x4 uniform", "8 x4", "8"
 *   plan_edge_text         "0->1"; with a type or ports other than the
 *                          default, "0->1 programmatic", "0->1
 *                          programmatic out=launch-completion"
 *   plan_features_text     "pdl"; names joined by "," ("-" for none,
 *                          unknown bits as "0x..")
 *
 * Tensor parallelism (1.5):
 *   plan_split_text        a tensor's split: "axis 0 [0, 64) of 128 | [0, 32)
 *                          of 32 | [0, 32) of 32, unit 32" (the unit when
 *                          not 1); "-" for a tensor not split
 *   plan_slice_text        a weight source's slice: "[64, 128) of [1, 128,
 *                          4096]" (start, end, then the [outer, full, inner]
 *                          view); "-" for the whole checkpoint tensor
 *   plan_dist_text         "rank 0 of 4, NCCL 2.28.9", "rank 1 of 2, no
 *                          NCCL" (host ranks); "1 rank" for world 1;
 *                          ", symmetric memory" after it when the
 *                          collectives' operands were there (1.8)
 */
const char *plan_shape_text(const plan_t *plan, const struct plan_tensor *t, char *buf, size_t len);
const char *plan_op_label(const plan_t *plan, uint32_t op, char *buf, size_t len);
const char *plan_init_text(const struct plan_tensor *t, char *buf, size_t len);
const char *plan_feed_text(const plan_t *plan, const struct plan_tensor *t, char *buf, size_t len);
const char *plan_source_text(const plan_t *plan, const struct plan_tensor *t, char *buf, size_t len);
const char *plan_attr_text(const plan_t *plan, const struct plan_attr *a, char *buf, size_t len);
const char *plan_tensor_list_text(const plan_t *plan, const uint32_t *list, uint32_t n,
                                  char *buf, size_t len);
const char *plan_version_text(int32_t version, int cublas, char *buf, size_t len);
const char *plan_dispatch_text(const plan_t *plan, const struct plan_dispatch *d, char *buf,
                               size_t len);
const char *plan_key_text(const struct plan_variant *v, char *buf, size_t len);
const char *plan_edge_text(const struct plan_edge *e, char *buf, size_t len);
const char *plan_features_text(uint32_t features, char *buf, size_t len);
const char *plan_split_text(const struct plan_tensor *t, char *buf, size_t len);
const char *plan_slice_text(const struct plan_weight_source *w, char *buf, size_t len);
const char *plan_dist_text(const plan_t *plan, char *buf, size_t len);

/*
 * Recorded plans (1.4):
 *   plan_addr_text    "a1+4096" (allocation 1, offset 4096); "0x7f5500000000"
 *                     for an address in no allocation
 *   plan_launch_text  "kernel NAME <<<(8,4,1), (128,1,1), 49152>>> cluster
 *                     (2,1,1) pdl"; "memcpy 16 B 0x560000001000 -> a0+0
 *                     (host bytes kept)"; "memset 256 x 4 B = 0x0 -> a1+8192";
 *                     NAME raw, or as NAME_TEXT gives it (NULL: raw)
 *   plan_ns_text      a time: "850 ns", "41.0 us", "1.20 ms", "2.50 s";
 *                     "-" for 0 (not recorded)
 */
const char *plan_addr_text(const struct plan_addr *a, char *buf, size_t len);
const char *plan_launch_text(const plan_t *plan, uint32_t launch, const char *name_text,
                             char *buf, size_t len);
const char *plan_ns_text(uint64_t ns, char *buf, size_t len);

/* ---------------------------------------------------------------------- */
/* Dumps.                                                                  */

struct plan_dump_opts {
	uint32_t    variant;  /* only this variant's records; PLAN_NONE: all */
	const char *title;    /* DOT: the graph's title (NULL: the script, or a
	                         recorded plan's command) */
	/* Recorded plans (1.4), DOT: the text to show for a kernel's raw
	 * (mangled) name, written into BUF (LEN bytes); NULL, or a NULL
	 * return, shows the raw name. bcgtool passes a demangler, so that
	 * libplan stays free of C++. JSON always has the raw names. */
	const char *(*kernel_text)(const char *raw, char *buf, size_t len, void *ctx);
	void        *kernel_ctx;
	/* DOT: every node of every segment, nothing folded. Without it, a
	 * script plan's variant whose step repeats a run of ops (a model's
	 * layers) PLAN_DOT_FOLD_MIN times or more is drawn folded: its
	 * segments and breakpoints as one shape each, the repeated run once,
	 * in a cluster labelled "x N" (plan_variant_fold()); a recorded
	 * plan's segments fold their repeated nodes (plan_segment_fold()). */
	int          nodes;
};

#define PLAN_DOT_FOLD_MIN 4

/*
 * The whole plan as one JSON object (formats/inspect-json.md), or as a
 * Graphviz digraph: per variant a cluster holding one cluster per segment
 * (its nodes and edges, or its ops as a chain when no nodes were recorded)
 * and one octagon per breakpoint, joined in execution order by bold edges.
 * In a recorded plan's segment the longest run of repeating kernels (a
 * model's layers) is drawn once, in a cluster labelled "x N"; see
 * plan_segment_fold().
 * A tensor-parallel plan's JSON (1.5) holds its world and rank, the
 * splits and slices, and in rank 0's the other ranks' plans ("ranks");
 * its DOT is rank 0's, naming the world.
 * OPTS may be NULL. Fails with PLAN_ERR_NOT_FOUND for a variant out of
 * range, PLAN_ERR_IO when the stream reports an error.
 */
/* The repeating run of a recorded segment's nodes that the DOT dump
 * folds: nodes [*FIRST, *FIRST + *PERIOD * *COUNT) are *COUNT repeats of
 * the *PERIOD nodes from *FIRST, alike in type and, for kernels, in
 * function, grid and block. It is the run that covers the most nodes
 * (then the shortest period, then the first); periods of up to 1024
 * nodes are looked for. Returns 0 (and *COUNT 0)
 * when no run repeats at least twice; 1 otherwise. */
int plan_segment_fold(const plan_t *plan, const struct plan_segment *segment, uint32_t *first,
                      uint32_t *period, uint32_t *count);

/* The repeating run of a script plan's variant that the DOT dump folds,
 * over the ops its step runs in order (its items in order, a segment's
 * ops in order; position K is the K-th op run): positions [*FIRST,
 * *FIRST + *PERIOD * *COUNT) are *COUNT repeats of the *PERIOD from
 * *FIRST. Two ops are alike when they are one op of the script (kind and
 * line and column), run alike: both in a segment or both breakpoints,
 * both starting their item or neither. Their implementation choices and
 * nodes may differ (a tuner picks between close candidates op by op, and
 * one library candidate launches more kernels than another): the DOT
 * dump says so on the piece where they do, and counts the nodes of the
 * first repeat. Chosen as
 * plan_segment_fold() chooses. Returns 1 when a run
 * repeats at least twice, 0 otherwise (and for a recorded plan, or a
 * variant out of range), -1 out of memory; *COUNT is 0 unless 1. */
int plan_variant_fold(const plan_t *plan, uint32_t variant, uint32_t *first, uint32_t *period,
                      uint32_t *count);

int plan_dump_json(const plan_t *plan, FILE *f, const struct plan_dump_opts *opts,
                   struct plan_diag *diag);
int plan_dump_dot(const plan_t *plan, FILE *f, const struct plan_dump_opts *opts,
                  struct plan_diag *diag);

/* ---------------------------------------------------------------------- */
/* Diff.                                                                   */

/* Where a difference lies, in the order plan_diff lists them. */
enum plan_diff_area {
	PLAN_DIFF_META     = 1,  /* tool, script, backend, device, toolkit */
	PLAN_DIFF_LAYOUT   = 2,  /* arena size, alignment, reference steps */
	PLAN_DIFF_DIMS     = 3,
	PLAN_DIFF_VARS     = 4,
	PLAN_DIFF_TENSORS  = 5,
	PLAN_DIFF_OPS      = 6,
	PLAN_DIFF_VARIANTS = 7,  /* capture sizes: variants added, removed, changed */
	PLAN_DIFF_ITEMS    = 8,  /* one variant's items, segments' nodes */
	PLAN_DIFF_CHECKS   = 9,
	PLAN_DIFF_DISPATCH = 10,
	PLAN_DIFF_CHOICES  = 11, /* implementation choices, per variant and op */
	PLAN_DIFF_WEIGHTS  = 12, /* weight sources: file, checkpoint name, content */
	/* Recorded plans (1.4); their variants are VARIANTS and their
	 * segments' nodes and breakpoints' launches ITEMS. */
	PLAN_DIFF_MODULES  = 13, /* modules: by name, then content (renamed) */
	PLAN_DIFF_KERNELS  = 14, /* kernels launched: added, removed, renamed
	                            (one base name, other template arguments) */
};

enum plan_diff_change {
	PLAN_DIFF_SAME    = 0,   /* an item present and equal in both (context) */
	PLAN_DIFF_ADDED   = 1,   /* only in B */
	PLAN_DIFF_REMOVED = 2,   /* only in A */
	PLAN_DIFF_CHANGED = 3,   /* FIELD differs; or, FIELD "", A replaced by B */
	PLAN_DIFF_RENAMED = 4,   /* the same thing under another name */
	PLAN_DIFF_MOVED   = 5,   /* the same thing at another place */
};

/*
 * One difference. SUBJECT names the record ("tensor x", "segment ops 0-6
 * embed..v_write", "break attn at op 7"); A and B are its texts in each
 * plan: the whole record for ADDED, REMOVED, RENAMED, MOVED and a CHANGED
 * with FIELD "", else the field's values. Absent texts are "".
 */
struct plan_diff_entry {
	int         area;     /* enum plan_diff_area */
	int         change;   /* enum plan_diff_change */
	int64_t     tokens;   /* VARIANTS, ITEMS, CHECKS, CHOICES: the variant; else 0 */
	const char *subject;
	const char *field;    /* "shape", "node 3 kernel"; "" for a whole record */
	const char *a;
	const char *b;
	uint32_t    a_index;  /* ITEMS: the item's position in A's variant; else the */
	uint32_t    b_index;  /* record's index in A (B); PLAN_NONE where absent */
};

#define PLAN_DIFF_IGNORE_ENV 0x1u  /* ignore tool, device and toolkit versions,
                                     and the script's directory */

/*
 * Compare two plans structurally (bcgtool-diff(1) says what is compared
 * and how records are matched). Two recorded plans (1.4) are compared as
 * recordings: the recording's command and step rule, modules, kernels,
 * variants matched by label then number (their segment and break
 * counts), and in each pair the items aligned by what they run, a break
 * found elsewhere reported MOVED, nodes compared by kernel and launch
 * shape. ITEMS and VARIANTS entries then carry A's variant number as
 * TOKENS. Tensor-parallel plans (1.5) of different worlds differ in
 * their world ("world", 2 vs 4) and their metadata only; of one world
 * they are compared rank by rank, each entry's subject (and a whole
 * record's texts) starting "rank R". Timestamps and timings are never
 * differences. The list holds SAME entries for every item of the variants
 * both plans have, so that a reader can show context; plan_diff_count
 * counts the others. NULL when out of memory.
 */
struct plan_diff;
struct plan_diff *plan_diff(const plan_t *a, const plan_t *b, unsigned flags);
void plan_diff_free(struct plan_diff *d);
uint32_t plan_diff_count(const struct plan_diff *d);     /* differences, SAME excluded */
uint32_t plan_diff_length(const struct plan_diff *d);    /* entries, SAME included */
const struct plan_diff_entry *plan_diff_get(const struct plan_diff *d, uint32_t i);
const char *plan_diff_area_name(int area);     /* "meta", "tensors", "items", ... */
const char *plan_diff_change_name(int change); /* "same", "added", ... */

#ifdef __cplusplus
}
#endif

#endif /* PLAN_H */
