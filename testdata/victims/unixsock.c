/*
 * unixsock: a process blocked on a Unix socket whose other end is another
 * process that never answers. By the first argument:
 *
 *   backlog  a child "listener" binds a stream socket in the temporary
 *            directory, listens with a backlog of 0 and never accepts;
 *            the victim fills the backlog with non-blocking connects until
 *            one fails with EAGAIN, then connects blocking: connect()
 *            sleeps in unix_wait_for_peer (the listener's queue is full);
 *   pair     socketpair(); a child "peer" keeps one end and never writes;
 *            the victim closes that end and reads the other.
 *
 * Ready line:
 *   ready pid=P other=C path=PATH
 * (C is the listener or the peer; PATH is the listener's socket, "-" for
 * pair).
 *
 * Build: gcc -O0 -g -pthread -Wall -o unixsock unixsock.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static const char *mode;
static char path[sizeof(((struct sockaddr_un *)0)->sun_path)] = "-";
static pid_t other;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args);
	long want = strcmp(mode, "pair") == 0 ? SYS_read : SYS_connect;

	if (nr != want) {
		snprintf(line, n, "victim not in its call (%ld, want %ld)", nr, want);
		return 0;
	}
	snprintf(line, n, "ready pid=%d other=%d path=%s", (int)victim, (int)other, path);
	return 1;
}

static void backlog(void)
{
	const char *tmp = getenv("TMPDIR");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ready[2], fd, i;

	snprintf(path, sizeof path, "%s/hd-%d.sock", tmp && *tmp ? tmp : "/tmp", (int)getpid());
	if (strlen(path) + 1 > sizeof sa.sun_path) {
		fprintf(stderr, "error: socket path too long: %s\n", path);
		exit(1);
	}
	strcpy(sa.sun_path, path);
	if (pipe(ready) < 0)
		die("pipe");
	other = fork();
	if (other < 0)
		die("fork");
	if (other == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "listener");
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket");
		if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
			die("bind");
		if (listen(fd, 0) < 0)
			die("listen");
		ready_forever(ready[1]);
	}
	await_ready(ready, "the listener did not listen");
	/* Fill the backlog: connect without blocking until the kernel says
	 * the listener's queue is full. */
	for (i = 0;; i++) {
		if (i == 64) {
			fprintf(stderr, "error: the backlog did not fill\n");
			exit(1);
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			continue; /* queued; kept open */
		if (errno == EAGAIN)
			break;
		die("filling connect");
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	spawn_reporter(check);
	connect(fd, (struct sockaddr *)&sa, sizeof sa);
	fprintf(stderr, "error: connect returned\n");
	exit(1);
}

static void pair(void)
{
	int sv[2];
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair");
	other = fork();
	if (other < 0)
		die("fork");
	if (other == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "peer");
		close(sv[0]);
		for (;;)
			sleep_ms(3600 * 1000);
	}
	close(sv[1]);
	spawn_reporter(check);
	if (read(sv[0], &c, 1) >= 0)
		fprintf(stderr, "error: read returned\n");
	exit(1);
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "backlog";
	if (strcmp(mode, "backlog") == 0)
		backlog();
	else if (strcmp(mode, "pair") == 0)
		pair();
	fprintf(stderr, "usage: unixsock backlog|pair\n");
	return 2;
}
