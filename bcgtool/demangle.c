/*
 * demangle.c - kernel names demangled by libstdc++ (bcgtool links with
 * -lstdc++ for this one function; libplan stays free of C++).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* libstdc++'s, from <cxxabi.h> (namespace abi, extern "C" linkage): the
 * demangled name in a malloc'd buffer when BUF is NULL; *STATUS 0 on
 * success, -1 out of memory, -2 not a valid mangled name, -3 bad
 * arguments. */
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

const char *bcg_demangle(const char *name, char *buf, size_t len)
{
	int status = -2;
	char *d = NULL;

	if (len == 0)
		return buf;
	/* Only an Itanium mangled name: a plain C name ("rmsnorm_f32") is
	 * shown as it is, never read as a mangled type. */
	if (strncmp(name, "_Z", 2) == 0)
		d = __cxa_demangle(name, NULL, NULL, &status);
	snprintf(buf, len, "%s", status == 0 && d != NULL ? d : name);
	free(d);
	return buf;
}

const char *bcg_demangle_cb(const char *name, char *buf, size_t len, void *ctx)
{
	(void)ctx;
	return bcg_demangle(name, buf, len);
}
