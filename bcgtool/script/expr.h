/*
 * expr.h - integer expressions of op scripts: decimal literals, names,
 * + - * / (exact division), unary minus and parentheses, in 64 bits with
 * every overflow an error.
 */
#ifndef BCG_SCRIPT_EXPR_H
#define BCG_SCRIPT_EXPR_H

#include <stddef.h>
#include <stdint.h>

/* Parentheses and unary minus nest at most this deep. */
#define EXPR_MAX_DEPTH 64

/* The value of name NAME (LEN bytes, not NUL-terminated). Returns 0 with
 * *VALUE set; -1 with a sentence in MSG; EXPR_REPORTED when the error was
 * already reported elsewhere (it is passed through as is). */
#define EXPR_REPORTED (-2)
typedef int (*expr_lookup_fn)(void *ctx, const char *name, size_t len, int64_t *value,
                              char *msg, size_t msglen);

/* Evaluate TEXT. Returns 0 with *OUT set, -1 with a sentence in MSG, or
 * EXPR_REPORTED from LOOKUP. */
int expr_eval(const char *text, expr_lookup_fn lookup, void *ctx, int64_t *out,
              char *msg, size_t len);

/* Whether TEXT is a name: a letter or '_', then letters, digits and '_'. */
int expr_is_name(const char *text);

#endif /* BCG_SCRIPT_EXPR_H */
