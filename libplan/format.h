/*
 * format.h - the plan file format's constants, shared by the reader and the
 * writer: the header, the section directory, every record's field offsets,
 * and little-endian access. formats/plan-format.md is the specification;
 * each number here appears in one of its tables.
 */
#ifndef PLAN_FORMAT_H
#define PLAN_FORMAT_H

#include <stdint.h>
#include <string.h>

#include "plan.h"

/* ---------------------------------------------------------------------- */
/* The file header.                                                        */

#define FMT_MAGIC           "\x89" "BCG\r\n\x1a\n"
#define FMT_MAGIC_SIZE      8
#define FMT_HEADER_SIZE     64

#define HDR_MAGIC           0
#define HDR_MAJOR           8
#define HDR_MINOR           10
#define HDR_FLAGS           12
#define HDR_HEADER_SIZE     16
#define HDR_PAYLOAD_CRC     20
#define HDR_PAYLOAD_SIZE    24
#define HDR_CONTENT_SIZE    32
#define HDR_RESERVED        40
#define HDR_RESERVED_SIZE   20
#define HDR_CRC             60

/* The zstd frame of the payload. */
#define FMT_ZSTD_LEVEL      3
#define FMT_ZSTD_MAGIC      UINT32_C(0xFD2FB528)

/* ---------------------------------------------------------------------- */
/* The content: a directory, then sections.                                */

#define DIR_SECTION_COUNT   0
#define DIR_RESERVED        4
#define DIR_HEADER_SIZE     8
#define DIR_ENTRY_SIZE      24
#define DIR_MAX_SECTIONS    1024

#define ENT_ID              0
#define ENT_FLAGS           4
#define ENT_OFFSET          8
#define ENT_SIZE            16

#define SECT_REQUIRED       UINT32_C(0x1)
#define SECT_ALIGN          8

/* Record-array sections start with this header. */
#define RA_RECORD_SIZE      0
#define RA_RECORD_COUNT     4
#define RA_HEADER_SIZE      8

/* The sections of format 1.5, in the order the writer puts them. RANK
 * (1.5) is the one id a file may list more than once: one section for
 * each rank attached to rank 0, after everything else. */
enum fmt_section {
	S_META, S_STAT, S_DIMS, S_VARS, S_TENS, S_OPER, S_ATTR, S_IDXS,
	S_VARI, S_ITEM, S_SEGS, S_NODE, S_PARM, S_EDGE, S_BRKP, S_CHKS,
	S_DISP, S_CHOI, S_CAND, S_WSRC, S_VKEY, S_DKEY,
	S_RECD, S_MODS, S_FUNC, S_PINF, S_ALOC, S_LNCH, S_PTCH, S_VREC,
	S_SREC, S_NLCH, S_BLCH, S_BLOB, S_DIST, S_SBLK, S_SHAR, S_STRS, S_RANK,
	S_COUNT
};

/* Record sizes of format 1.1; 0 for STRS, which is a table of bytes. */
#define REC_META 80
#define REC_STAT 56
#define REC_DIMS 24
#define REC_VARS 40
#define REC_TENS 144
#define REC_OPER 48
#define REC_ATTR 32
#define REC_IDXS 4
#define REC_VARI 32
#define REC_ITEM 8
#define REC_SEGS 56
#define REC_NODE 48
#define REC_PARM 16
#define REC_EDGE 12
#define REC_BRKP 40
#define REC_CHKS 32
#define REC_DISP 24
#define REC_CHOI 24
#define REC_CAND 16
#define REC_WSRC 48
#define REC_VKEY 8
#define REC_DKEY 8
/* Format 1.4: recorded plans. BLOB, like STRS, is a table of bytes. */
#define REC_RECD 40
#define REC_MODS 40
#define REC_FUNC 16
#define REC_PINF 8
#define REC_ALOC 32
#define REC_LNCH 152
#define REC_PTCH 16
#define REC_VREC 24
#define REC_SREC 8
#define REC_NLCH 4
#define REC_BLCH 16
/* Format 1.5: tensor parallelism. TENS and WSRC grew; RANK, like STRS,
 * is bytes (a rank's whole content). */
#define REC_TENS_1_5 168
#define REC_WSRC_1_5 88
#define REC_DIST 16
#define REC_SBLK 24
/* Format 1.6: executables shared between segments. */
#define REC_SHAR 16
/* Format 1.7: SREC and BLCH grew (the items' recorded start offsets). */
#define REC_SREC_1_7 24
#define REC_BLCH_1_7 32
/* Format 1.8: DIST grew (Nccl_Mem). */
#define REC_DIST_1_8 24
/* Format 1.9: CHOI grew (Tune_Flags: the Step mark). */
#define REC_CHOI_1_9 32

/* The records 1.1 grew, at their 1.0 sizes: a 1.0 file has exactly these,
 * and the fields past them take their defaults. */
#define REC_META_1_0 72
#define REC_EDGE_1_0 8

/*
 * A section as each minor version defines it: SINCE is the first minor
 * version that has it (files of older minors neither have it nor need
 * it, and one there of that id is unknown to them), SIZE[m] its record
 * size in minor version m.
 */
#define FMT_MINORS (PLAN_FORMAT_MINOR + 1)

struct fmt_section_def {
	char     id[5];
	unsigned since;
	uint32_t size[FMT_MINORS];
};

static const struct fmt_section_def fmt_sections[S_COUNT] = {
	[S_META] = { "META", 0, { REC_META_1_0, REC_META, REC_META, REC_META, REC_META, REC_META, REC_META, REC_META, REC_META, REC_META } },
	[S_STAT] = { "STAT", 0, { REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT, REC_STAT } },
	[S_DIMS] = { "DIMS", 0, { REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS, REC_DIMS } },
	[S_VARS] = { "VARS", 0, { REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS, REC_VARS } },
	[S_TENS] = { "TENS", 0, { REC_TENS, REC_TENS, REC_TENS, REC_TENS, REC_TENS, REC_TENS_1_5, REC_TENS_1_5, REC_TENS_1_5, REC_TENS_1_5, REC_TENS_1_5 } },
	[S_OPER] = { "OPER", 0, { REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER, REC_OPER } },
	[S_ATTR] = { "ATTR", 0, { REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR, REC_ATTR } },
	[S_IDXS] = { "IDXS", 0, { REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS, REC_IDXS } },
	[S_VARI] = { "VARI", 0, { REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI, REC_VARI } },
	[S_ITEM] = { "ITEM", 0, { REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM, REC_ITEM } },
	[S_SEGS] = { "SEGS", 0, { REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS, REC_SEGS } },
	[S_NODE] = { "NODE", 0, { REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE, REC_NODE } },
	[S_PARM] = { "PARM", 0, { REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM, REC_PARM } },
	[S_EDGE] = { "EDGE", 0, { REC_EDGE_1_0, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE, REC_EDGE } },
	[S_BRKP] = { "BRKP", 0, { REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP, REC_BRKP } },
	[S_CHKS] = { "CHKS", 0, { REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS, REC_CHKS } },
	[S_DISP] = { "DISP", 0, { REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP, REC_DISP } },
	[S_CHOI] = { "CHOI", 1, { 0, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI, REC_CHOI_1_9 } },
	[S_CAND] = { "CAND", 1, { 0, REC_CAND, REC_CAND, REC_CAND, REC_CAND, REC_CAND, REC_CAND, REC_CAND, REC_CAND, REC_CAND } },
	[S_WSRC] = { "WSRC", 2, { 0, 0, REC_WSRC, REC_WSRC, REC_WSRC, REC_WSRC_1_5, REC_WSRC_1_5, REC_WSRC_1_5, REC_WSRC_1_5, REC_WSRC_1_5 } },
	[S_VKEY] = { "VKEY", 3, { 0, 0, 0, REC_VKEY, REC_VKEY, REC_VKEY, REC_VKEY, REC_VKEY, REC_VKEY, REC_VKEY } },
	[S_DKEY] = { "DKEY", 3, { 0, 0, 0, REC_DKEY, REC_DKEY, REC_DKEY, REC_DKEY, REC_DKEY, REC_DKEY, REC_DKEY } },
	[S_RECD] = { "RECD", 4, { 0, 0, 0, 0, REC_RECD, REC_RECD, REC_RECD, REC_RECD, REC_RECD, REC_RECD } },
	[S_MODS] = { "MODS", 4, { 0, 0, 0, 0, REC_MODS, REC_MODS, REC_MODS, REC_MODS, REC_MODS, REC_MODS } },
	[S_FUNC] = { "FUNC", 4, { 0, 0, 0, 0, REC_FUNC, REC_FUNC, REC_FUNC, REC_FUNC, REC_FUNC, REC_FUNC } },
	[S_PINF] = { "PINF", 4, { 0, 0, 0, 0, REC_PINF, REC_PINF, REC_PINF, REC_PINF, REC_PINF, REC_PINF } },
	[S_ALOC] = { "ALOC", 4, { 0, 0, 0, 0, REC_ALOC, REC_ALOC, REC_ALOC, REC_ALOC, REC_ALOC, REC_ALOC } },
	[S_LNCH] = { "LNCH", 4, { 0, 0, 0, 0, REC_LNCH, REC_LNCH, REC_LNCH, REC_LNCH, REC_LNCH, REC_LNCH } },
	[S_PTCH] = { "PTCH", 4, { 0, 0, 0, 0, REC_PTCH, REC_PTCH, REC_PTCH, REC_PTCH, REC_PTCH, REC_PTCH } },
	[S_VREC] = { "VREC", 4, { 0, 0, 0, 0, REC_VREC, REC_VREC, REC_VREC, REC_VREC, REC_VREC, REC_VREC } },
	[S_SREC] = { "SREC", 4, { 0, 0, 0, 0, REC_SREC, REC_SREC, REC_SREC, REC_SREC_1_7, REC_SREC_1_7, REC_SREC_1_7 } },
	[S_NLCH] = { "NLCH", 4, { 0, 0, 0, 0, REC_NLCH, REC_NLCH, REC_NLCH, REC_NLCH, REC_NLCH, REC_NLCH } },
	[S_BLCH] = { "BLCH", 4, { 0, 0, 0, 0, REC_BLCH, REC_BLCH, REC_BLCH, REC_BLCH_1_7, REC_BLCH_1_7, REC_BLCH_1_7 } },
	[S_BLOB] = { "BLOB", 4, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
	[S_DIST] = { "DIST", 5, { 0, 0, 0, 0, 0, REC_DIST, REC_DIST, REC_DIST, REC_DIST_1_8, REC_DIST_1_8 } },
	[S_SBLK] = { "SBLK", 5, { 0, 0, 0, 0, 0, REC_SBLK, REC_SBLK, REC_SBLK, REC_SBLK, REC_SBLK } },
	[S_SHAR] = { "SHAR", 6, { 0, 0, 0, 0, 0, 0, REC_SHAR, REC_SHAR, REC_SHAR, REC_SHAR } },
	[S_STRS] = { "STRS", 0, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
	[S_RANK] = { "RANK", 5, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
};

/* ---------------------------------------------------------------------- */
/* Field offsets within each record.                                       */

#define META_TOOL            0
#define META_SCRIPT          4
#define META_DEVICE          8
#define META_BACKEND         12
#define META_SCRIPT_HASH     16
#define META_CREATED         24
#define META_CC_MAJOR        32
#define META_CC_MINOR        36
#define META_CUDA_RUNTIME    40
#define META_CUDA_DRIVER     44
#define META_CUBLAS          48
#define META_ALIGNMENT       52
#define META_ARENA_BYTES     56
#define META_UNSHARED_BYTES  64
#define META_FEATURES        72   /* 1.1 */
#define META_RESERVED        76   /* 1.1 */

#define STAT_MATERIALIZE_NS  0
#define STAT_REFERENCE_NS    8
#define STAT_CAPTURE_NS      16
#define STAT_INSTANTIATE_NS  24
#define STAT_VERIFY_NS       32
#define STAT_REFERENCE_STEPS 40
#define STAT_VERIFY_EXACT    44
#define STAT_VERIFY_MAX_ERR  48

#define DIMS_NAME            0
#define DIMS_EXPR            4
#define DIMS_VALUE           8
#define DIMS_FLAGS           16
#define DIMS_RESERVED        20

#define VARS_NAME            0
#define VARS_RESERVED        4
#define VARS_START           8
#define VARS_STEP            16
#define VARS_LIMIT           24
#define VARS_OFFSET          32

#define TENS_NAME            0
#define TENS_DTYPE           4
#define TENS_ROLE            5
#define TENS_RANK            6
#define TENS_RESERVED1       7
#define TENS_OFFSET          8
#define TENS_BYTES           16
#define TENS_AXES            24   /* 4 axes of 16 bytes */
#define TENS_AXIS_SIZE       16
#define AXIS_DIM             0
#define AXIS_RESERVED        4
#define AXIS_LENGTH          8
#define TENS_INIT_KIND       88
#define TENS_FEED_KIND       89
#define TENS_RESERVED2       90   /* 2 bytes */
#define TENS_FEED_VAR        92
#define TENS_INIT_SEED       96
#define TENS_INIT_SCALE      104
#define TENS_INIT_VALUE      112
#define TENS_FEED_SEED       120
#define TENS_FEED_RANGE      128
#define TENS_FEED_SCALE      136
#define TENS_SPLIT_AXIS      144  /* 1.5 */
#define TENS_BLOCK_COUNT     148  /* 1.5 */
#define TENS_SPLIT_UNIT      152  /* 1.5 */
#define TENS_BLOCK_FIRST     160  /* 1.5 */
#define TENS_RESERVED3       164  /* 1.5 */

#define OPER_KIND            0
#define OPER_NAME            4
#define OPER_FLAGS           8
#define OPER_LINE            12
#define OPER_COL             16
#define OPER_INPUT_FIRST     20
#define OPER_INPUT_COUNT     24
#define OPER_OUTPUT_FIRST    28
#define OPER_OUTPUT_COUNT    32
#define OPER_ATTR_FIRST      36
#define OPER_ATTR_COUNT      40
#define OPER_RESERVED        44

#define ATTR_KEY             0
#define ATTR_TYPE            4
#define ATTR_INT             8
#define ATTR_FLOAT           16
#define ATTR_TEXT            24
#define ATTR_RESERVED        28

#define IDXS_INDEX           0

#define VARI_TOKENS          0
#define VARI_MODE            8
#define VARI_RESERVED        12
#define VARI_PEAK_BYTES      16
#define VARI_ITEM_FIRST      24
#define VARI_ITEM_COUNT      28

#define ITEM_KIND            0
#define ITEM_INDEX           4

#define SEGS_VARIANT         0
#define SEGS_OP_FIRST        4
#define SEGS_OP_COUNT        8
#define SEGS_FLAGS           12
#define SEGS_FINGERPRINT     16
#define SEGS_CAPTURE_NS      24
#define SEGS_INSTANTIATE_NS  32
#define SEGS_NODE_FIRST      40
#define SEGS_NODE_COUNT      44
#define SEGS_EDGE_FIRST      48
#define SEGS_EDGE_COUNT      52

#define NODE_TYPE            0
#define NODE_OP              4
#define NODE_KERNEL          8
#define NODE_GRID            12   /* x, y, z */
#define NODE_BLOCK           24   /* x, y, z */
#define NODE_SHARED_BYTES    36
#define NODE_PARAM_FIRST     40
#define NODE_PARAM_COUNT     44

#define PARM_INDEX           0
#define PARM_RESERVED        4
#define PARM_OFFSET          8

#define EDGE_FROM            0
#define EDGE_TO              4
#define EDGE_TYPE            8    /* 1.1 */
#define EDGE_FROM_PORT       9    /* 1.1 */
#define EDGE_TO_PORT         10   /* 1.1 */
#define EDGE_RESERVED        11   /* 1.1 */

#define BRKP_VARIANT         0
#define BRKP_OP              4
#define BRKP_NAME            8
#define BRKP_REASON          12
#define BRKP_DETAIL          16
#define BRKP_READ_FIRST      20
#define BRKP_READ_COUNT      24
#define BRKP_WRITE_FIRST     28
#define BRKP_WRITE_COUNT     32
#define BRKP_RESERVED        36

#define CHKS_VARIANT         0
#define CHKS_TENSOR          4
#define CHKS_STEPS           8
#define CHKS_RESERVED        12
#define CHKS_HASH            16
#define CHKS_SUM             24

#define DISP_TOKENS_MIN      0
#define DISP_TOKENS_MAX      8
#define DISP_VARIANT         16
#define DISP_RESERVED        20

#define CHOI_VARIANT         0
#define CHOI_OP              4
#define CHOI_IMPL            8
#define CHOI_FLAGS           12
#define CHOI_CAND_FIRST      16
#define CHOI_CAND_COUNT      20
#define CHOI_TUNE_FLAGS      24   /* 1.9 */
#define CHOI_RESERVED        28

#define CAND_IMPL            0
#define CAND_RESERVED        4
#define CAND_US              8

#define WSRC_TENSOR          0    /* 1.2 */
#define WSRC_FILE            4
#define WSRC_NAME            8
#define WSRC_DTYPE           12
#define WSRC_RESERVED1       13   /* 3 bytes */
#define WSRC_OFFSET          16
#define WSRC_BYTES           24
#define WSRC_HASH            32
#define WSRC_FLAGS           40
#define WSRC_RESERVED2       44
#define WSRC_SLICE_OUTER     48   /* 1.5 */
#define WSRC_SLICE_FULL      56
#define WSRC_SLICE_INNER     64
#define WSRC_SLICE_START     72
#define WSRC_SLICE_LEN       80

#define SHAR_SEGMENT         0    /* 1.6 */
#define SHAR_EXEC            4
#define SHAR_FLAGS           8
#define SHAR_RESULT          12

#define DIST_WORLD           0    /* 1.5 */
#define DIST_RANK            4
#define DIST_NCCL_VERSION    8
#define DIST_FLAGS           12
#define DIST_NCCL_MEM        16   /* 1.8 */
#define DIST_RESERVED        20

#define SBLK_FULL            0    /* 1.5 */
#define SBLK_START           8
#define SBLK_LEN             16

#define VKEY_REQUESTS        0    /* 1.3 */
#define VKEY_FLAGS           4

#define DKEY_REQUESTS_MAX    0    /* 1.3 */
#define DKEY_FLAGS           4

#define RECD_COMMAND         0    /* 1.4 */
#define RECD_STEP_RULE       4
#define RECD_LIBRARIES       8
#define RECD_PID             12
#define RECD_FLAGS           16
#define RECD_RESERVED        20
#define RECD_WALL_NS         24
#define RECD_STEPS           32

#define MODS_NAME            0    /* 1.4 */
#define MODS_NOTE            4
#define MODS_FLAGS           8
#define MODS_RESERVED        12
#define MODS_HASH            16
#define MODS_BYTES           24
#define MODS_IMAGE           32   /* BLOB offset */

#define FUNC_MODULE          0    /* 1.4 */
#define FUNC_NAME            4
#define FUNC_PARAM_FIRST     8
#define FUNC_PARAM_COUNT     12

#define PINF_OFFSET          0    /* 1.4 */
#define PINF_SIZE            4

#define ALOC_ADDRESS         0    /* 1.4 */
#define ALOC_BYTES           8
#define ALOC_DEVICE          16
#define ALOC_FLAGS           20
#define ALOC_DATA            24   /* BLOB offset */

#define LNCH_TYPE            0    /* 1.4 */
#define LNCH_FUNCTION        4
#define LNCH_GRID            8    /* x, y, z */
#define LNCH_BLOCK           20   /* x, y, z */
#define LNCH_CLUSTER         32   /* x, y, z */
#define LNCH_SHARED_BYTES    44
#define LNCH_FLAGS           48
#define LNCH_ARGS_BYTES      52
#define LNCH_ARGS            56   /* BLOB offset */
#define LNCH_PATCH_FIRST     64
#define LNCH_PATCH_COUNT     68
#define LNCH_DST_ALLOC       72
#define LNCH_SRC_ALLOC       76
#define LNCH_DST_OFFSET      80
#define LNCH_SRC_OFFSET      88
#define LNCH_BYTES           96
#define LNCH_VALUE           104
#define LNCH_ELEMENT         108
#define LNCH_WIDTH           112
#define LNCH_HEIGHT          120
#define LNCH_PITCH           128
#define LNCH_DATA_BYTES      136
#define LNCH_RESERVED        140
#define LNCH_DATA            144  /* BLOB offset */

#define PTCH_BYTE            0    /* 1.4 */
#define PTCH_ALLOC           4
#define PTCH_OFFSET          8

#define VREC_LABEL           0    /* 1.4 */
#define VREC_DEVICE          4
#define VREC_SEEN            8
#define VREC_RECORDED_NS     16

#define SREC_RECORDED_NS     0    /* 1.4 */
#define SREC_START_NS        8    /* 1.7 */
#define SREC_ISSUE_NS        16   /* 1.7 */

#define NLCH_LAUNCH          0    /* 1.4 */

#define BLCH_LAUNCH_FIRST    0    /* 1.4 */
#define BLCH_LAUNCH_COUNT    4
#define BLCH_RECORDED_NS     8
#define BLCH_START_NS        16   /* 1.7 */
#define BLCH_ISSUE_NS        24   /* 1.7 */

/* BLOB pieces start at multiples of this. */
#define BLOB_ALIGN           8

/* Flag bits each version defines; every other bit is reserved. */
#define FMT_DIM_FLAGS        PLAN_DIM_TOKENS
#define FMT_OP_FLAGS         PLAN_OP_EAGER
#define FMT_SEG_FLAGS        PLAN_SEG_NODES
#define FMT_FEATURES         PLAN_FEATURE_PDL
#define FMT_CHOICE_FLAGS     (PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE)
/* (1.9) CHOI's Tune_Flags: bit 0 Step, PLAN_CHOICE_STEP in the model. */
#define FMT_TUNE_STEP        UINT32_C(0x1)
#define FMT_TUNE_FLAGS       FMT_TUNE_STEP
#define FMT_WSRC_FLAGS       PLAN_WSRC_HASHED
#define FMT_KEY_FLAGS        PLAN_KEY_UNIFORM
#define FMT_DISPATCH_FLAGS   PLAN_DISPATCH_UNIFORM
#define FMT_RECORD_FLAGS     (PLAN_RECORD_SNAPSHOT | PLAN_RECORD_NVTX_STEP)
#define FMT_MODULE_FLAGS     PLAN_MODULE_IMAGE
#define FMT_ALLOC_FLAGS      (PLAN_ALLOC_SNAPSHOT | PLAN_ALLOC_VMM)
#define FMT_LAUNCH_FLAGS     (PLAN_LAUNCH_PDL | PLAN_LAUNCH_COOP)
#define FMT_DIST_FLAGS       0u
#define FMT_SHARE_FLAGS      PLAN_SHARE_REFUSED

/* ---------------------------------------------------------------------- */
/* Little-endian access, independent of the host's byte order and of the  */
/* alignment of P.                                                         */

static inline uint16_t fmt_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t fmt_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fmt_get64(const unsigned char *p)
{
	return (uint64_t)fmt_get32(p) | (uint64_t)fmt_get32(p + 4) << 32;
}

static inline int32_t fmt_geti32(const unsigned char *p)
{
	uint32_t u = fmt_get32(p);
	int32_t v;

	memcpy(&v, &u, sizeof v);
	return v;
}

static inline int64_t fmt_geti64(const unsigned char *p)
{
	uint64_t u = fmt_get64(p);
	int64_t v;

	memcpy(&v, &u, sizeof v);
	return v;
}

/* IEEE 754 binary64, stored as its bit pattern. */
static inline double fmt_getf64(const unsigned char *p)
{
	uint64_t u = fmt_get64(p);
	double v;

	memcpy(&v, &u, sizeof v);
	return v;
}

static inline void fmt_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void fmt_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline void fmt_put64(unsigned char *p, uint64_t v)
{
	fmt_put32(p, (uint32_t)v);
	fmt_put32(p + 4, (uint32_t)(v >> 32));
}

static inline void fmt_puti32(unsigned char *p, int32_t v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof u);
	fmt_put32(p, u);
}

static inline void fmt_puti64(unsigned char *p, int64_t v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof u);
	fmt_put64(p, u);
}

static inline void fmt_putf64(unsigned char *p, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof u);
	fmt_put64(p, u);
}

#endif /* PLAN_FORMAT_H */
