/*
 * demangle.h - kernel names for people: a recorded plan keeps each
 * kernel's mangled (Itanium C++ ABI) name; bcgtool shows it demangled, as
 * libstdc++'s __cxa_demangle gives it.
 */
#ifndef BCG_DEMANGLE_H
#define BCG_DEMANGLE_H

#include <stddef.h>

/* NAME demangled into BUF (LEN bytes, truncated to fit), or NAME itself
 * when it is not a mangled name (an extern "C" kernel) or cannot be
 * demangled. Returns BUF. */
const char *bcg_demangle(const char *name, char *buf, size_t len);

/* The same, as plan_dump_opts.kernel_text wants it (CTX unused). */
const char *bcg_demangle_cb(const char *name, char *buf, size_t len, void *ctx);

/* NAME demangled without its parameter list and a template's return
 * type: "bcg_embedding_kernel<unsigned short>" for
 * _Z20bcg_embedding_kernelItEvPKviPKiPvilll, where an op beside it says
 * what it is for (a script plan's nodes). A name that does not demangle
 * is NAME itself. Returns BUF. */
const char *bcg_demangle_short(const char *name, char *buf, size_t len);
const char *bcg_demangle_short_cb(const char *name, char *buf, size_t len, void *ctx);

#endif /* BCG_DEMANGLE_H */
