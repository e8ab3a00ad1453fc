/*
 * cmd.h - the command table: one entry per subcommand, one cmd-*.c each.
 */
#ifndef BCG_CMD_H
#define BCG_CMD_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* Exit status of every command (bcgtool(1), EXIT STATUS). */
enum {
	BCG_EXIT_OK       = 0,  /* success */
	BCG_EXIT_NEGATIVE = 1,  /* a negative answer: differences, failed check */
	BCG_EXIT_USAGE    = 2,  /* usage or input error */
	BCG_EXIT_RUNTIME  = 3,  /* device or run-time error, out of memory */
};

struct cmd_entry {
	const char *name;
	const char *alias;      /* NULL if none */
	const char *usage;      /* synopsis after "bcgtool NAME" */
	const char *summary;    /* one line for the command list */
	const char *options;    /* the option list printed by --help, one per line */
	int (*exec)(int argc, char **argv);   /* argv[0] is the command's name */
};

/* Every command, in alphabetical order. */
extern const struct cmd_entry *const cmd_table[];

/* The entry for NAME: exact name, alias, or unique prefix. On failure print
 * "unknown command" or "ambiguous command: NAME, could be: ..." and return
 * NULL. */
const struct cmd_entry *cmd_find(const char *name);

/* Print "usage: bcgtool NAME USAGE", the options and the common options
 * to F. */
void cmd_print_help(const struct cmd_entry *entry, FILE *f);

/* "bcgtool VERSION (plan format MAJOR.MINOR)". */
void cmd_print_version(FILE *f);

/*
 * getopt_long for a command: like getopt_long, with --help (-h) handled for
 * every command and errors made uniform. The common options are added to
 * the command's and handled here: -q (--quiet) silences notes and
 * progress, -V (--version) prints the version (the command returns 0, as
 * for --help). Returns the option character; -1
 * at the end of the options; CMD_HELP after printing the help to stdout
 * (the command returns 0); CMD_BAD after printing the error and the usage
 * line to stderr (the command returns BCG_EXIT_USAGE).
 */
#define CMD_HELP (-2)
#define CMD_BAD  (-3)
int cmd_getopt(const struct cmd_entry *entry, int argc, char **argv,
               const char *shortopts, const struct option *longopts);

/* Print "bcgtool NAME: MESSAGE" and the usage line to stderr; returns
 * BCG_EXIT_USAGE. */
int cmd_usage_error(const struct cmd_entry *entry, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parse a whole decimal number in [MIN, MAX] given to option OPT; on error
 * report it (as cmd_usage_error) and return -1. */
int cmd_parse_int(const struct cmd_entry *entry, const char *opt, const char *arg,
                  long long min, long long max, long long *out);

/* --var NAME=START:LIMIT, or NAME=VALUE (every step at VALUE), appended
 * to R (*N of at most ENGINE_VAR_RANGES_MAX, engine/engine.h); ARG is
 * kept, its name ended in place. On error report it (as cmd_usage_error,
 * naming the option as OPT: "--var", "--tune-var") and return -1. */
struct engine_var_range;
int cmd_parse_var(const struct cmd_entry *entry, const char *opt, char *arg,
                  struct engine_var_range *r, uint32_t *n);

/* The backend a command uses when --backend is not given: $BCG_BACKEND, or
 * "auto" (cuda when a GPU can be used, else host with a note). */
const char *cmd_default_backend(void);

/* Check a --backend argument: auto, host, or cuda when built. */
int cmd_check_backend(const struct cmd_entry *entry, const char *name);

/* On the host backend timings are the CPU's and model no CUDA graph: say
 * so once (a note) where a command prints them. */
void cmd_note_host_timings(void);

struct plan;
/* Read the plan at PATH ("-": standard input); on failure print "bcgtool:
 * PATH: why" and return the exit status (2 for a bad or missing file, 3
 * out of memory). */
int cmd_read_plan(const char *path, struct plan **out);

struct script;
/* Load the op script at PATH; on failure print "bcgtool: PATH:LINE:COL:
 * why" and return BCG_EXIT_USAGE. */
int cmd_read_script(const char *path, struct script **out);

struct plan_json;
/* What instantiate --json says of a segment it rebuilt and checked, from
 * "status" on: the status word and reason, the node counts and
 * fingerprints of the plan and of the rebuilt graph, and the times to
 * rebuild, instantiate and upload it. Captured and recorded plans alike. */
void cmd_json_segment_check(struct plan_json *j, const char *status, const char *reason,
                            uint32_t plan_nodes, uint32_t nodes, uint64_t plan_fingerprint,
                            uint64_t fingerprint, uint64_t rebuild_ns, uint64_t instantiate_ns,
                            uint64_t upload_ns);

#endif /* BCG_CMD_H */
