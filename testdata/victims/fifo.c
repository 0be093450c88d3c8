/*
 * fifo: a service's startup open of its control FIFO, with nobody at the
 * other end: open(PATH, O_WRONLY) on a FIFO sleeps in the kernel's
 * wait_for_partner until a reader opens it.
 *
 * The victim makes a FIFO in the temporary directory and opens it to
 * write. By the first argument:
 *
 *   nobody  nobody else has the FIFO open;
 *   writer  a child "writer" has it open for writing already (it opened
 *           it while a reader of its own had it open, then closed that
 *           reader): a FIFO with a writer and no reader.
 *
 * Ready line:
 *   ready pid=P path=PATH writer=W
 * (W is 0 for nobody). The FIFO is removed when the victim ends normally;
 * the test's temporary directory goes with it otherwise.
 *
 * Build: gcc -O0 -g -pthread -Wall -o fifo fifo.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static char path[4096];
static pid_t writer;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	char wpath[64], wchan[128] = "";
	long nr = task_syscall(victim, victim, args);
	ssize_t got;
	int fd;

	if (nr != SYS_openat
#ifdef SYS_open
	    && nr != SYS_open
#endif
	) {
		snprintf(line, n, "victim not in open (%ld)", nr);
		return 0;
	}
	snprintf(wpath, sizeof wpath, "/proc/%d/wchan", (int)victim);
	fd = open(wpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = read(fd, wchan, sizeof wchan - 1);
	close(fd);
	if (got <= 0 || strncmp(wchan, "wait_for_partner", got) != 0) {
		snprintf(line, n, "victim's wchan is %s, not wait_for_partner", wchan);
		return 0;
	}
	snprintf(line, n, "ready pid=%d path=%s writer=%d", (int)victim, path, (int)writer);
	return 1;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	const char *mode = argc > 1 ? argv[1] : "nobody";
	int fd, ready[2];

	if (strcmp(mode, "nobody") && strcmp(mode, "writer")) {
		fprintf(stderr, "usage: fifo nobody|writer\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/hangdoc-fifo-%d.ctl", tmp && *tmp ? tmp : "/tmp", (int)getpid());
	if (mkfifo(path, 0600) < 0)
		die("mkfifo");
	if (strcmp(mode, "writer") == 0) {
		if (pipe(ready) < 0)
			die("pipe");
		writer = fork();
		if (writer < 0)
			die("fork");
		if (writer == 0) {
			int r, w;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_NAME, "writer");
			r = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			if (r < 0)
				die("writer: open to read");
			w = open(path, O_WRONLY | O_CLOEXEC);
			if (w < 0)
				die("writer: open to write");
			close(r);
			ready_forever(ready[1]);
		}
		await_ready(ready, "the writer did not open the FIFO");
	}
	spawn_reporter(check);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	unlink(path);
	fprintf(stderr, "error: open returned %d\n", fd);
	return 1;
}
