/*
 * nsys-run.c - find and run Nsight Systems.
 */
#include "config.h"

#include <errno.h>
#include <glob.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nsys-run.h"
#include "util.h"

extern char **environ;

static int executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static char *on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, *found = NULL;

	if (path == NULL || path[0] == '\0')
		return NULL;
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir != NULL && found == NULL;
	     dir = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/%s", dir[0] ? dir : ".", name);
		if (executable(p))
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}

char *nsys_locate(const char *given, char *msg, size_t len)
{
	/* Where installers put it; the last match of a sorted glob is the
	 * newest version. */
	static const char *const places[] = {
		"/usr/local/cuda*/bin/nsys",
		"/usr/local/cuda*/nsight-systems*/bin/nsys",
		"/opt/nvidia/nsight-systems*/bin/nsys",
		"/opt/nvidia/*/*/bin/nsys",
		"/opt/nvidia/*/*/target-linux-x64/nsys",
		"/opt/nvidia/*/*/host/target-linux-x64/nsys",
	};
	const char *env = getenv("BCG_NSYS");
	char *found = NULL;

	if (given == NULL && env != NULL && env[0] != '\0')
		given = env;
	if (given != NULL) {
		if (strchr(given, '/') == NULL && (found = on_path(given)) != NULL)
			return found;
		if (executable(given))
			return xstrdup(given);
		snprintf(msg, len, "%s: %s", given,
		         access(given, F_OK) == 0 ? "not an executable file" : strerror(ENOENT));
		return NULL;
	}
	if ((found = on_path("nsys")) != NULL)
		return found;
	for (size_t i = 0; i < sizeof places / sizeof places[0] && found == NULL; i++) {
		glob_t g;
		if (glob(places[i], 0, NULL, &g) == 0) {
			for (size_t k = g.gl_pathc; k-- > 0 && found == NULL;)
				if (executable(g.gl_pathv[k]))
					found = xstrdup(g.gl_pathv[k]);
		}
		globfree(&g);
	}
	if (found == NULL)
		snprintf(msg, len, "no nsys found on PATH, in /opt/nvidia or in /usr/local/cuda*: %s",
		         NSYS_HOW_TO_GET);
	return found;
}

int nsys_spawn(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	fflush(stdout);
	fflush(stderr);
	if (posix_spawn_file_actions_init(&fa) != 0)
		return 126;
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		bcg_error("%s: %s", argv[0], strerror(rc));
		return rc == ENOENT ? 127 : 126;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 126;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int nsys_export(const char *nsys, const char *rep, const char *out, char *msg, size_t len)
{
	char *argv[] = {
		(char *)nsys, (char *)"export", (char *)"--type", (char *)"sqlite",
		(char *)"--force-overwrite", (char *)"true", (char *)"-o", (char *)out,
		(char *)rep, NULL,
	};
	int rc = nsys_spawn(argv);

	if (rc != 0) {
		snprintf(msg, len, "nsys export failed (exit status %d)", rc);
		return 3;
	}
	if (access(out, R_OK) != 0) {
		snprintf(msg, len, "nsys export wrote no %s", out);
		return 3;
	}
	return 0;
}

char *nsys_find_importer(const char *nsys)
{
	/* nsys lives in target-linux-x64/ or bin/; the importer in host-linux-x64/
	 * beside it, or next to it. */
	static const char *const rel[] = {
		"QdstrmImporter", "../host-linux-x64/QdstrmImporter",
		"../../host-linux-x64/QdstrmImporter", "../*/QdstrmImporter",
	};
	char *dir = xstrdup(nsys), *slash = strrchr(dir, '/'), *found = NULL;

	if (slash == NULL) {
		free(dir);
		return NULL;
	}
	*slash = '\0';
	for (size_t i = 0; i < sizeof rel / sizeof rel[0] && found == NULL; i++) {
		char *pat = xasprintf("%s/%s", dir, rel[i]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0 && executable(g.gl_pathv[0]))
			found = xstrdup(g.gl_pathv[0]);
		globfree(&g);
		free(pat);
	}
	free(dir);
	return found;
}
