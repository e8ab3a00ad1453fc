/*
 * nsys-run.h - find Nsight Systems and run it: profile a command, import a
 * raw capture, export a report to SQLite.
 */
#ifndef BCG_PROFILE_NSYS_RUN_H
#define BCG_PROFILE_NSYS_RUN_H

#include <stddef.h>

/* How to get nsys, for the messages of report and profile. */
#define NSYS_HOW_TO_GET \
	"install Nsight Systems (https://developer.nvidia.com/nsight-systems, or the " \
	"CUDA toolkit's nsight-systems package), put nsys on PATH, or give --nsys PATH " \
	"or $BCG_NSYS"

/* The nsys to use: GIVEN (--nsys), else $BCG_NSYS, else nsys on PATH, else
 * the newest under /opt/nvidia and /usr/local/cuda*. A malloc'd path, or
 * NULL with the reason in MSG. */
char *nsys_locate(const char *given, char *msg, size_t len);

/* Run ARGV (argv[0] a path, or a name looked up on PATH) with its stdout
 * sent to our stderr, so that ours stays the report's. Returns its exit
 * status, 126/127 when it could not be started, 128 + N on signal N. */
int nsys_spawn(char *const argv[]);

/* Export the report at REP to SQLite at OUT with NSYS. 0, or an exit
 * status with the reason in MSG. */
int nsys_export(const char *nsys, const char *rep, const char *out, char *msg, size_t len);

/* The QdstrmImporter that comes with NSYS, or NULL. */
char *nsys_find_importer(const char *nsys);

#endif /* BCG_PROFILE_NSYS_RUN_H */
