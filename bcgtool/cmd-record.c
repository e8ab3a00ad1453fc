/*
 * cmd-record.c - bcgtool record: run a program with the recording library
 * and turn the CUDA graphs it launched into a plan.
 *
 * The command runs CMD (execvp, no shell) with CUDA's injection interface
 * pointing at libbcg-record.so (record/inject.c), which writes one raw log
 * per process into a scratch directory; once CMD has exited, the logs are
 * converted (record/convert.c) and the plan written atomically. CMD's own
 * exit status passes through when it fails, and then no plan is written.
 * Without --follow-forks each process that did GPU work gets its own plan
 * (PLAN.PID when there are several); with it, one plan holds them all.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "plan.h"
#include "record/convert.h"
#include "record/reclog.h"
#include "util.h"

#ifndef BCG_PKGLIBDIR
#define BCG_PKGLIBDIR "/usr/local/lib/bcgtool"
#endif

static int cmd_record_exec(int argc, char **argv);

const struct cmd_entry cmd_record_entry = {
	.name = "record",
	.usage = "[--step NAME] [--snapshot[=BYTES]] [--follow-forks] [--json] -o PLAN -- CMD [ARGS...]",
	.summary = "run a program and record the CUDA graphs it launches as a plan",
	.options =
		"  -o, --output PLAN   write the plan here (PLAN.PID, one per process, when\n"
		"                      several processes did GPU work)\n"
		"      --step NAME     a step is an NVTX range of this name (default: find\n"
		"                      the repeating sequence of graph launches)\n"
		"      --snapshot[=BYTES]  keep the contents of the allocations the kernels\n"
		"                      use, up to BYTES in all (K, M, G suffixes; default:\n"
		"                      256M; 0: all)\n"
		"      --follow-forks  one plan for CMD and every process it starts\n"
		"      --json          print a summary as JSON (see bcgtool-record(1))\n"
		"  -h, --help          show this help\n",
	.exec = cmd_record_exec,
};

/* --snapshot without a size: 256 MiB in all. */
#define RECORD_SNAPSHOT_DEFAULT (UINT64_C(256) << 20)

struct record_args {
	const char *output;
	const char *step;
	int         snapshot;
	uint64_t    snapshot_bytes;   /* 0: all */
	int         follow;
	int         json;
	char      **cmd;              /* NULL-terminated */
};

/* ---------------------------------------------------------------------- */
/* Before the run.                                                         */

/* "64M" -> 67108864; -1 when not a size. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': mul = UINT64_C(1) << 10; end++; break;
	case 'M': case 'm': mul = UINT64_C(1) << 20; end++; break;
	case 'G': case 'g': mul = UINT64_C(1) << 30; end++; break;
	default: return -1;
	}
	if (*end != '\0' || (v != 0 && UINT64_MAX / mul < v))
		return -1;
	*out = v * mul;
	return 0;
}

/* The recording library: $BCG_RECORD_LIB, else the one beside an
 * uninstalled bcgtool (bcgtool/record/.libs), else the installed one. */
static char *record_library(void)
{
	const char *env = getenv("BCG_RECORD_LIB");
	char exe[PATH_MAX], *slash, *path;
	ssize_t n;

	if (env != NULL && env[0] != '\0')
		return xstrdup(env);
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash != NULL) {
			*slash = '\0';
			path = xasprintf("%s/record/.libs/libbcg-record.so", exe);
			if (access(path, R_OK) == 0)
				return path;
			free(path);
		}
	}
	return xstrdup(BCG_PKGLIBDIR "/libbcg-record.so");
}

/* Whether CMD can be run: 0 yes, 127 not found, 126 not executable (the
 * shell's conventions), with the message printed. */
static int check_command(const char *cmd)
{
	const char *path = getenv("PATH");
	int found = 0;

	if (strchr(cmd, '/') != NULL) {
		if (access(cmd, F_OK) != 0) {
			bcg_error("%s: command not found", cmd);
			return 127;
		}
		if (access(cmd, X_OK) != 0) {
			bcg_error("%s: permission denied", cmd);
			return 126;
		}
		return 0;
	}
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path != '\0' || !found) {
		size_t n = strcspn(path, ":");
		char *full = xasprintf("%.*s/%s", (int)n, n ? path : ".", cmd);
		struct stat st;
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			found = 1;
			if (access(full, X_OK) == 0) {
				free(full);
				return 0;
			}
		}
		free(full);
		path += n;
		if (*path == '\0')
			break;
		path++;
	}
	bcg_error("%s: %s", cmd, found ? "permission denied" : "command not found");
	return found ? 126 : 127;
}

/* Whether a GPU can be used: the driver loads and sees a device. The
 * driver is opened, not linked: a bcgtool built with CUDA still runs
 * where there is none. $BCG_RECORD_ASSUME_DEVICE=1 skips the check (the
 * tests of the command's own behaviour, on machines without a GPU). */
static int check_device(char *why, size_t len)
{
	typedef int (*cu_init_fn)(unsigned);
	typedef int (*cu_count_fn)(int *);
	const char *assume = getenv("BCG_RECORD_ASSUME_DEVICE");
	cu_init_fn init;
	cu_count_fn count;
	void *h;
	int n = 0, rc = -1, err;

	if (assume != NULL && strcmp(assume, "1") == 0)
		return 0;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(why, len, "no CUDA driver (libcuda.so.1 does not load)");
		return -1;
	}
	init = (cu_init_fn)(uintptr_t)dlsym(h, "cuInit");
	count = (cu_count_fn)(uintptr_t)dlsym(h, "cuDeviceGetCount");
	if (init == NULL || count == NULL)
		snprintf(why, len, "the CUDA driver lacks cuInit");
	else if ((err = init(0)) != 0)
		snprintf(why, len, "the CUDA driver does not start (error %d)", err);
	else if ((err = count(&n)) != 0 || n < 1)
		snprintf(why, len, "no CUDA device");
	else
		rc = 0;
	dlclose(h);
	return rc;
}

/* The command line, shell-quoted where a word needs it. */
static char *quote_command(char *const *argv)
{
	size_t cap = 64, len = 0;
	char *s = xmalloc(cap);

	s[0] = '\0';
	for (size_t i = 0; argv[i] != NULL; i++) {
		const char *w = argv[i];
		int plain = w[0] != '\0' && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		                                      "0123456789-_./=:,+@%") == strlen(w);
		size_t need = len + 4 * strlen(w) + 4;
		if (need > cap) {
			cap = need * 2;
			s = xrealloc(s, cap);
		}
		if (i > 0)
			s[len++] = ' ';
		if (plain) {
			memcpy(s + len, w, strlen(w));
			len += strlen(w);
		} else {
			s[len++] = '\'';
			for (; *w != '\0'; w++) {
				if (*w == '\'') {
					memcpy(s + len, "'\\''", 4);
					len += 4;
				} else {
					s[len++] = *w;
				}
			}
			s[len++] = '\'';
		}
		s[len] = '\0';
	}
	return s;
}

/* ---------------------------------------------------------------------- */
/* The run.                                                                */

/* Run CMD with the recording environment; its wait status in *STATUS and
 * its wall time in *WALL. -1 when it could not be started. */
static int run_command(const struct record_args *a, const char *lib, const char *dir,
                       int *status, uint64_t *wall, pid_t *child)
{
	struct sigaction ign = { 0 }, old_int, old_quit;
	uint64_t t0;
	pid_t pid;
	int rc = 0;

	fflush(NULL);
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	/* As a shell does: ^C goes to CMD, and bcgtool outlives it to clean
	 * up. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	t0 = bcg_now_ns();
	pid = fork();
	if (pid < 0) {
		bcg_error("cannot start %s: %s", a->cmd[0], strerror(errno));
		rc = -1;
		goto out;
	}
	if (pid == 0) {
		char snap[32];
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		snprintf(snap, sizeof snap, "%" PRIu64, a->snapshot_bytes);
		if (setenv("CUDA_INJECTION64_PATH", lib, 1) != 0 ||
		    setenv("NVTX_INJECTION64_PATH", lib, 1) != 0 ||
		    setenv("BCG_RECORD_DIR", dir, 1) != 0 ||
		    (a->snapshot && setenv("BCG_RECORD_SNAPSHOT", snap, 1) != 0) ||
		    (a->step != NULL && setenv("BCG_RECORD_STEP", a->step, 1) != 0)) {
			fprintf(stderr, "bcgtool: cannot set the recording environment\n");
			_exit(BCG_EXIT_RUNTIME);
		}
		if (!a->snapshot)
			unsetenv("BCG_RECORD_SNAPSHOT");
		execvp(a->cmd[0], a->cmd);
		fprintf(stderr, "bcgtool: %s: %s\n", a->cmd[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	*child = pid;
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			bcg_error("waiting for %s: %s", a->cmd[0], strerror(errno));
			rc = -1;
			goto out;
		}
	}
	*wall = bcg_now_ns() - t0;
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return rc;
}

/* Remove the scratch directory and the logs in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char *p;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			p = xasprintf("%s/%s", dir, e->d_name);
			unlink(p);
			free(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

static int by_pid(const void *x, const void *y)
{
	const struct reclog *a = *(struct reclog *const *)x, *b = *(struct reclog *const *)y;

	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* Read every log of DIR; CMD's own process first, then by pid. */
static int read_logs(const char *dir, pid_t top, struct reclog ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct reclog **logs = NULL;
	struct dirent *e;
	size_t cap = 0;
	int rc = 0;

	*n = 0;
	if (d == NULL) {
		bcg_error("%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char err[256], *p;
		struct reclog *log;
		if (len < 7 || strcmp(e->d_name + len - 7, ".bcglog") != 0)
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		if (reclog_read_file(p, &log, err, sizeof err) != 0) {
			bcg_error("%s: %s", p, err);
			free(p);
			rc = -1;
			continue;
		}
		free(p);
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			logs = xreallocarray(logs, cap, sizeof *logs);
		}
		logs[(*n)++] = log;
	}
	closedir(d);
	qsort(logs, *n, sizeof *logs, by_pid);
	for (size_t i = 0; i < *n; i++)
		if (logs[i]->pid == (uint32_t)top && i > 0) {
			struct reclog *t = logs[i];
			memmove(logs + 1, logs, i * sizeof *logs);
			logs[0] = t;
		}
	*out = logs;
	return rc;
}

static void print_note(void *ctx, const char *msg)
{
	(void)ctx;
	bcg_note("%s", msg);
}

struct record_out {
	char                 *path;
	uint32_t              pid;
	struct record_summary sum;
};

/* The exit status of a convert answer. */
static int convert_status(int rc)
{
	switch (rc) {
	case RECORD_NO_GPU_WORK:
	case RECORD_NO_GRAPHS:
	case RECORD_NO_STEPS:
		return BCG_EXIT_NEGATIVE;
	default:
		return BCG_EXIT_RUNTIME;
	}
}

static void print_summary(const struct record_args *a, const char *command, int status,
                          uint64_t wall, const struct record_out *outs, size_t nouts)
{
	if (a->json) {
		struct plan_json *j = plan_json_new(stdout);
		if (j == NULL)
			return;
		plan_json_object_begin(j);
		plan_json_key(j, "command");
		plan_json_string(j, command);
		plan_json_key(j, "status");
		plan_json_int(j, status);
		plan_json_key(j, "wall_ns");
		plan_json_uint(j, wall);
		plan_json_key(j, "step_rule");
		plan_json_string(j, a->step != NULL ? a->step : "");
		plan_json_key(j, "plans");
		plan_json_array_begin(j);
		for (size_t i = 0; i < nouts; i++) {
			const struct record_summary *s = &outs[i].sum;
			plan_json_object_begin(j);
			plan_json_key(j, "path");
			plan_json_string(j, outs[i].path);
			plan_json_key(j, "pid");
			plan_json_uint(j, outs[i].pid);
			plan_json_key(j, "processes");
			plan_json_uint(j, s->processes);
			plan_json_key(j, "devices");
			plan_json_uint(j, s->devices);
			plan_json_key(j, "steps");
			plan_json_uint(j, s->steps);
			plan_json_key(j, "variants");
			plan_json_uint(j, s->variants);
			plan_json_key(j, "segments");
			plan_json_uint(j, s->segments);
			plan_json_key(j, "breaks");
			plan_json_uint(j, s->breaks);
			plan_json_key(j, "launches");
			plan_json_uint(j, s->launches);
			plan_json_key(j, "modules");
			plan_json_uint(j, s->modules);
			plan_json_key(j, "modules_without_image");
			plan_json_uint(j, s->modules_without_image);
			plan_json_key(j, "allocations");
			plan_json_uint(j, s->allocs);
			plan_json_key(j, "snapshots");
			plan_json_uint(j, s->snapshots);
			plan_json_key(j, "graph_launches");
			plan_json_uint(j, s->graph_launches);
			plan_json_key(j, "eager_launches");
			plan_json_uint(j, s->eager_launches);
			plan_json_key(j, "updates");
			plan_json_uint(j, s->updates);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
		plan_json_free(j);
		return;
	}
	if (bcg_is_quiet())
		return;
	for (size_t i = 0; i < nouts; i++) {
		const struct record_summary *s = &outs[i].sum;
		fprintf(stderr,
		        "bcgtool: recorded %s: %" PRIu64 " steps in %u variant%s, %u segments, "
		        "%u breaks, %u modules (%u not replayable), %u allocations\n",
		        outs[i].path, s->steps, s->variants, s->variants == 1 ? "" : "s",
		        s->segments, s->breaks, s->modules, s->modules_without_image, s->allocs);
	}
}

/* Convert the logs into plans and write them. */
static int record_write(const struct record_args *a, struct reclog **logs, size_t nlogs,
                        const char *command, uint64_t wall, int status)
{
	struct record_out *outs = xcalloc(nlogs + 1, sizeof *outs);
	struct reclog **work = xcalloc(nlogs + 1, sizeof *work);
	struct record_opts o = { 0 };
	char *tool = xasprintf("bcgtool %s", PACKAGE_VERSION);
	size_t nwork = 0, nouts = 0, ngroups;
	int rc = BCG_EXIT_OK;

	for (size_t i = 0; i < nlogs; i++)
		if (record_log_has_work(logs[i]))
			work[nwork++] = logs[i];
	if (nwork == 0) {
		bcg_error("%s did no GPU work that the recorder saw: no plan written", a->cmd[0]);
		rc = BCG_EXIT_NEGATIVE;
		goto out;
	}
	o.step = a->step;
	o.command = command;
	o.tool = tool;
	o.wall_ns = wall;
	o.created = plan_now();
	o.snapshot = a->snapshot;
	o.note = print_note;
	ngroups = a->follow ? 1 : nwork;
	for (size_t g = 0; g < ngroups; g++) {
		struct reclog **group = a->follow ? work : &work[g];
		size_t n = a->follow ? nwork : 1;
		struct plan_diag d = { 0 };
		plan_t *plan = NULL;
		char msg[512];
		int err;

		err = record_convert(group, n, &o, &plan, &outs[nouts].sum, msg, sizeof msg);
		if (err != RECORD_OK && ngroups > 1 && convert_status(err) == BCG_EXIT_NEGATIVE) {
			/* One of several processes with nothing to plan (a helper
			 * process that only copied, say): the others still are. */
			bcg_note("process %u: %s: no plan for it", group[0]->pid, msg);
			continue;
		}
		if (err != RECORD_OK) {
			if (ngroups > 1)
				bcg_error("process %u: %s: no plan written", group[0]->pid, msg);
			else
				bcg_error("%s: no plan written", msg);
			rc = convert_status(err);
			goto out;
		}
		outs[nouts].pid = group[0]->pid;
		outs[nouts].path = ngroups > 1 ? xasprintf("%s.%u", a->output, group[0]->pid)
		                               : xstrdup(a->output);
		err = plan_write_file(plan, outs[nouts].path, &d);
		plan_free(plan);
		if (err != 0) {
			bcg_error("%s: cannot write: %s%s%s", outs[nouts].path, plan_strerror(err),
			          d.message[0] ? ": " : "", d.message);
			free(outs[nouts].path);
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		nouts++;
	}
	if (nouts == 0) {
		bcg_error("no process launched a CUDA graph the recorder could make a plan of: "
		          "no plan written");
		rc = BCG_EXIT_NEGATIVE;
		goto out;
	}
	print_summary(a, command, status, wall, outs, nouts);
out:
	/* All or nothing: a failure leaves none of the plans. */
	for (size_t i = 0; i < nouts; i++) {
		if (rc != BCG_EXIT_OK)
			unlink(outs[i].path);
		free(outs[i].path);
	}
	free(outs);
	free(work);
	free(tool);
	return rc;
}

static int cmd_record_exec(int argc, char **argv)
{
	enum { OPT_STEP = 256, OPT_SNAPSHOT, OPT_FOLLOW, OPT_JSON };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "step", required_argument, NULL, OPT_STEP },
		{ "snapshot", optional_argument, NULL, OPT_SNAPSHOT },
		{ "follow-forks", no_argument, NULL, OPT_FOLLOW },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_record_entry;
	struct record_args a = { 0 };
	struct reclog **logs = NULL;
	size_t nlogs = 0;
	char *lib = NULL, *dir = NULL, *command = NULL, why[256];
	const char *tmp;
	uint64_t wall = 0;
	pid_t child = 0;
	int c, rc, status = 0;

	while ((c = cmd_getopt(self, argc, argv, "+o:h", longopts)) != -1) {
		switch (c) {
		case 'o': a.output = optarg; break;
		case OPT_STEP:
			if (optarg[0] == '\0')
				return cmd_usage_error(self, "--step needs a range name");
			a.step = optarg;
			break;
		case OPT_SNAPSHOT:
			a.snapshot = 1;
			/* Bounded by default: a plan's content must stay under
			 * the readers' limit (libplan's default: 1 GiB). */
			a.snapshot_bytes = RECORD_SNAPSHOT_DEFAULT;
			if (optarg != NULL && parse_size(optarg, &a.snapshot_bytes) != 0)
				return cmd_usage_error(self, "--snapshot takes a size in bytes (K, M, G "
				                       "suffixes), not '%s'", optarg);
			break;
		case OPT_FOLLOW: a.follow = 1; break;
		case OPT_JSON: a.json = 1; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (a.output == NULL)
		return cmd_usage_error(self, "no plan given (-o PLAN)");
	if (optind >= argc)
		return cmd_usage_error(self, "no command given (after --)");
	a.cmd = argv + optind;

	/* A command that cannot run is named first, whatever the build. */
	rc = check_command(a.cmd[0]);
	if (rc != 0)
		return rc;
#ifndef HAVE_CUPTI
	bcg_error("record needs its recording library, and this bcgtool was built without "
	          "CUDA and CUPTI (see configure --with-cuda)");
	return BCG_EXIT_RUNTIME;
#endif
	lib = record_library();
	if (access(lib, R_OK) != 0) {
		bcg_error("%s: the recording library is missing (%s)", lib, strerror(errno));
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (check_device(why, sizeof why) != 0) {
		bcg_error("record needs a GPU: %s", why);
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	tmp = getenv("TMPDIR");
	dir = xasprintf("%s/bcgtool-record.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		bcg_error("%s: cannot make a directory for the logs: %s", dir, strerror(errno));
		free(dir);
		dir = NULL;
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	command = quote_command(a.cmd);
	if (run_command(&a, lib, dir, &status, &wall, &child) != 0) {
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (WIFSIGNALED(status)) {
		bcg_error("%s was killed by signal %d: no plan written", a.cmd[0], WTERMSIG(status));
		rc = 128 + WTERMSIG(status);
		goto out;
	}
	if (WEXITSTATUS(status) != 0) {
		bcg_error("%s exited with status %d: no plan written", a.cmd[0], WEXITSTATUS(status));
		rc = WEXITSTATUS(status);
		goto out;
	}
	if (read_logs(dir, child, &logs, &nlogs) != 0) {
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (nlogs == 0) {
		bcg_error("%s did no GPU work that the recorder saw (CUDA never loaded the "
		          "recording library): no plan written", a.cmd[0]);
		rc = BCG_EXIT_NEGATIVE;
		goto out;
	}
	rc = record_write(&a, logs, nlogs, command, wall, WEXITSTATUS(status));
out:
	for (size_t i = 0; i < nlogs; i++)
		reclog_free(logs[i]);
	free(logs);
	if (dir != NULL) {
		if (getenv("BCG_RECORD_KEEP_LOGS") != NULL)
			bcg_note("recording logs kept in %s", dir);
		else
			remove_dir(dir);
	}
	free(dir);
	free(lib);
	free(command);
	return rc;
}
