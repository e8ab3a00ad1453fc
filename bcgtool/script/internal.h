/*
 * internal.h - the op-script parser's state and the helpers its files share
 * (walk.c: YAML nodes and handler tables; symtab.c: names; expr.c:
 * integers; dims.c, vars.c, tensors.c, ops.c, check.c: the sections).
 *
 * Parsing stops at the first error: sp_error() records it (the message and
 * the 1-based position of the node at fault) and every caller returns -1
 * up to script_load.
 */
#ifndef BCG_SCRIPT_INTERNAL_H
#define BCG_SCRIPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "ops/op.h"
#include "script.h"

/* Limits, in formats/op-script.md ("Limits"). */
#define SCRIPT_VERSION       1
#define SCRIPT_MAX_DIMS      256
#define SCRIPT_MAX_VARS      1024
#define SCRIPT_MAX_TENSORS   65536      /* after families are expanded */
#define SCRIPT_MAX_COUNT     65536      /* members of one family */
#define SCRIPT_MAX_OPS       65536      /* after repeat blocks are expanded */
#define SCRIPT_MAX_DEPTH     16         /* nested repeat blocks */
#define SCRIPT_MAX_TOKENS    65536      /* largest capture size */
#define SCRIPT_MAX_NAME      64         /* bytes in a dim, var, tensor or op name */
#define SCRIPT_MAX_BYTES     (UINT64_C(1) << 48)  /* a tensor; all tensors */
#define SCRIPT_MAX_VAR_VALUE INT32_MAX  /* vars have an i32 mirror */

/* ---------------------------------------------------------------------- */
/* Names: one namespace for dims, vars and tensors; one for op names.      */

enum sym_kind { SYM_DIM = 1, SYM_VAR = 2, SYM_TENSOR = 3, SYM_OP = 4 };

struct sym {
	const char *name;      /* not owned: YAML document or plan strings */
	int         kind;      /* enum sym_kind */
	uint32_t    index;     /* into the declarations of its kind */
	unsigned    line;      /* where it was declared, 1-based */
	unsigned    col;
};

struct symtab {
	struct sym *slots;     /* open addressing; name NULL: empty */
	uint32_t    cap;       /* a power of two, or 0 */
	uint32_t    count;
};

/* The symbol NAME, or NULL. */
const struct sym *symtab_find(const struct symtab *tab, const char *name);
/* Add SYM (its name must not be there). Returns 0, or -1 out of memory. */
int  symtab_add(struct symtab *tab, const struct sym *sym);
void symtab_free(struct symtab *tab);

/* The closest of CANDIDATES[0..N) to NAME, if close enough to be a likely
 * typo; else NULL. */
const char *suggest_name(const char *name, const char *const *candidates, size_t n);

/* ---------------------------------------------------------------------- */
/* Declarations.                                                           */

struct dim_decl {
	const char  *name;
	yaml_node_t *node;     /* the value: a scalar, or the token dim's mapping */
	int          tokens;   /* the token dim */
	int          state;    /* 0 unresolved, 1 being resolved, 2 resolved */
	int64_t      value;
};

struct tensor_decl {
	const char  *name;
	yaml_node_t *node;     /* the declaration's mapping */
	uint32_t     first;    /* plan index of member 0 */
	uint32_t     count;    /* members */
	int          family;   /* declared with a count: referenced as name[i] */
};

struct scope_var {
	const char *name;      /* a repeat block's `as` */
	int64_t     value;
};

struct sp {
	const char          *path;
	yaml_document_t     *doc;
	struct script_error *err;
	int                  failed;
	plan_t              *plan;

	struct symtab        names;      /* dims, vars, tensors */
	struct dim_decl     *dims;
	uint32_t             ndims;
	uint32_t             token_dim;  /* PLAN_NONE until found */
	uint32_t             resolving[SCRIPT_MAX_DIMS]; /* dims being resolved */
	uint32_t             nresolving;

	int64_t             *sizes;      /* capture sizes, ascending */
	int                 *modes;
	int64_t             *requests;   /* per size: the most requests (0: not said) */
	unsigned char       *uniform;    /* per size: uniform decode only */
	yaml_node_t        **size_nodes; /* per size of `sizes`: its mapping, else NULL */
	uint32_t             nsizes;
	int                  dflt_mode;  /* the token dim's `mode`, for `sizes` */
	yaml_node_t         *tokens_node;/* the token dim's `tokens`, when given */

	struct tensor_decl  *tensors;
	uint32_t             ntensors;
	uint64_t             total_bytes; /* all tensors at the largest size */

	struct symtab        opnames;    /* named ops; index: the op */
	unsigned char       *written;    /* per plan tensor: some op wrote it */
	struct scope_var     scope[SCRIPT_MAX_DEPTH];
	unsigned             depth;

	struct st_checkpoint **ckpts;    /* checkpoints opened for weights */
	uint32_t             nckpts;
	yaml_node_t         *prompt_node;   /* the prompt feed's, if any */
	yaml_node_t         *prompt_from;   /* its key feedback */
	uint32_t             prompt_tensor;

	char                 scratch[512];  /* a message on its way to sp_error */
};

/* ---------------------------------------------------------------------- */
/* Errors and YAML nodes (walk.c).                                         */

/* Record an error at NODE's position (NULL: no position); returns -1. Only
 * the first error is kept. */
int sp_error(struct sp *p, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sp_error_at(struct sp *p, unsigned line, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

unsigned sp_line(const yaml_node_t *node);
unsigned sp_col(const yaml_node_t *node);

/* "a scalar", "a sequence", "a mapping" */
const char *walk_type_name(yaml_node_type_t type);

yaml_node_t *walk_node(struct sp *p, int id);

/* NODE must be of TYPE; else "expected a TYPE for WHAT, found a ...". */
int walk_expect(struct sp *p, yaml_node_t *node, yaml_node_type_t type, const char *what);

/* A scalar's text (NULL after an error: not a scalar, or a NUL inside). */
const char *walk_scalar(struct sp *p, yaml_node_t *node, const char *what);

/* The value node of KEY in mapping MAP, or NULL (no error). */
yaml_node_t *walk_find(struct sp *p, yaml_node_t *map, const char *key);

/*
 * A handler table: the keys a mapping may hold, each with the node type
 * its value must have (YAML_NO_NODE: any), whether it is required, and the
 * handler that takes the value. walk_mapping() rejects unknown, duplicate
 * and missing keys and values of the wrong type, in document order, then
 * calls the handlers of the keys present in the table's order (so a table
 * lists a key before the keys that depend on it).
 */
#define WALK_REQUIRED 0x1u

struct walk_field {
	const char       *key;        /* NULL ends the table */
	yaml_node_type_t  type;
	unsigned          flags;
	int             (*handler)(struct sp *p, yaml_node_t *value, void *obj);
};

/* WHAT names the mapping in messages: "tensor 'h'", "an op". */
int walk_mapping(struct sp *p, yaml_node_t *map, const struct walk_field *fields,
                 void *obj, const char *what);

/* Scalars. Each reports its own error naming WHAT. */
int walk_bool(struct sp *p, yaml_node_t *node, const char *what, int *out);
int walk_float(struct sp *p, yaml_node_t *node, const char *what, double *out);
/* A name of a dim, var, tensor or repeat variable. */
const char *walk_name(struct sp *p, yaml_node_t *node, const char *what);
/* An integer expression over dims (and repeat variables in scope). */
int walk_int(struct sp *p, yaml_node_t *node, const char *what, int64_t *out);
/* The same from TEXT, with errors placed at NODE. */
int sp_eval(struct sp *p, const char *text, yaml_node_t *node, int64_t *out);
/* An integer in [MIN, MAX]; else "WHAT must be from MIN to MAX, not V". */
int walk_int_range(struct sp *p, yaml_node_t *node, const char *what, int64_t min,
                   int64_t max, int64_t *out);

/* Declare NAME (from NODE) in the shared namespace. */
int sp_declare(struct sp *p, const char *name, yaml_node_t *node, int kind, uint32_t index);

/* ---------------------------------------------------------------------- */
/* Sections.                                                               */

int dims_parse(struct sp *p, yaml_node_t *node);     /* dims.c */
/* The dim called NAME (the token dim included), or an error at NODE. */
int dims_find(struct sp *p, const char *name, yaml_node_t *node, uint32_t *index);
int vars_parse(struct sp *p, yaml_node_t *node);     /* vars.c */
int tensors_parse(struct sp *p, yaml_node_t *node);  /* tensors.c */
/* batch.c: the batch feeds agree on the request dim, and the paged ops on
 * one cache geometry (after the ops). */
int batch_check(struct sp *p);

/* Once the request dim is known (R, the rows of seq_lens feed TENSOR):
 * no capture size of `sizes` may hold more requests. 0, or -1 with the
 * error at the size. */
int dims_check_requests(struct sp *p, int64_t r, const char *tensor);
int ops_parse(struct sp *p, yaml_node_t *node);      /* ops.c */

/* weights.c: the tensors of a safetensors init. */
struct weight_decl {
	const char  *tensor;       /* the script tensor (family) name */
	uint32_t     first;        /* plan index of member 0 */
	uint32_t     count;
	int          family;
	yaml_node_t *file_node;    /* scalar */
	yaml_node_t *names_node;   /* scalar, or a sequence of scalars (row blocks) */
};
/* Open the checkpoint W names (relative to the script's directory), find
 * the tensors of every member, check their dtypes and shapes and add the
 * plan's weight sources. */
int weights_add(struct sp *p, const struct weight_decl *w);
/* The prompt feed's feedback tensor, once every tensor is declared. */
int weights_prompt(struct sp *p);
void weights_release(struct sp *p);

/* check.c: the checks of one op about to be added (tensor roles, aliasing,
 * reads before writes, shapes and dtypes at every capture size); IN_NODES
 * and OUT_NODES place the errors about single operands. */
int check_op(struct sp *p, const struct plan_op *op, const struct op_kind *kind,
             yaml_node_t *op_node, yaml_node_t *const *in_nodes,
             yaml_node_t *const *out_nodes);
/* check.c: every full-mode variant can be scheduled without breaks. */
int check_schedule(struct sp *p);

/* "op 'qkv.0' (matmul)" or "op matmul#7" for op INDEX. */
void sp_op_desc(const char *name, const char *kind, uint32_t index, char *buf, size_t len);

#endif /* BCG_SCRIPT_INTERNAL_H */
