/*
 * errors.c - error codes as words, and the library's version.
 */
#include "config.h"

#include "plan.h"

const char *plan_strerror(int code)
{
	switch (code) {
	case PLAN_OK:             return "no error";
	case PLAN_ERR_GENERIC:    return "error";
	case PLAN_ERR_BAD_MAGIC:  return "not a plan file (bad magic number)";
	case PLAN_ERR_VERSION:    return "unsupported plan format version";
	case PLAN_ERR_TRUNCATED:  return "plan file is truncated";
	case PLAN_ERR_CHECKSUM:   return "checksum mismatch";
	case PLAN_ERR_CORRUPT:    return "corrupt plan section";
	case PLAN_ERR_RESERVED:   return "reserved field is not zero";
	case PLAN_ERR_DECOMPRESS: return "cannot decompress plan payload";
	case PLAN_ERR_LIMIT:      return "size limit exceeded";
	case PLAN_ERR_IO:         return "input/output error";
	case PLAN_ERR_NOMEM:      return "out of memory";
	case PLAN_ERR_INVALID:    return "invalid argument or inconsistent plan";
	case PLAN_ERR_NOT_FOUND:  return "not found";
	default:                  return "unknown error";
	}
}

unsigned plan_version_number(void)
{
	return PLAN_VERSION_NUMBER;
}
