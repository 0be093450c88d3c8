/*
 * filelock: a process blocked taking a file lock another holds — the two
 * runs of one cron job, a package manager's lock.
 *
 * A child "holder" takes the lock on a file in the temporary directory and
 * sleeps; the victim then blocks taking it too. By the first argument:
 *
 *   flock  flock(fd, LOCK_EX) both;
 *   posix  fcntl(fd, F_SETLKW, {F_WRLCK, whole file}) both;
 *   ofd    fcntl(fd, F_OFD_SETLKW, ...) both: /proc/locks names no pid;
 *   ofd-crowd  ofd, and a second child, "bystander", has the file open
 *          without a lock: two other processes have it open, and only
 *          the holder's fdinfo lists the lock;
 *   self   no child: the victim opens the file twice, flocks the first
 *          descriptor and blocks flocking the second (flock locks belong to
 *          each open, so it waits for itself).
 *
 * Ready line:
 *   ready pid=P holder=H path=PATH
 * (H is P for self). The file is removed when the victim ends normally;
 * the test's temporary directory goes with it otherwise.
 *
 * Build: gcc -O0 -g -pthread -Wall -o filelock filelock.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static const char *mode;
static char path[4096];
static pid_t holder;

static void lock_fd(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (strcmp(mode, "flock") == 0 || strcmp(mode, "self") == 0) {
		if (flock(fd, LOCK_EX) < 0)
			die("flock");
	} else if (strcmp(mode, "posix") == 0) {
		if (fcntl(fd, F_SETLKW, &fl) < 0)
			die("fcntl F_SETLKW");
	} else if (fcntl(fd, F_OFD_SETLKW, &fl) < 0) {
		die("fcntl F_OFD_SETLKW");
	}
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args);
	int flock_call = strcmp(mode, "flock") == 0 || strcmp(mode, "self") == 0;

	if (flock_call ? nr != SYS_flock : nr != SYS_fcntl) {
		snprintf(line, n, "victim not in its lock call (%ld)", nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d holder=%d path=%s", (int)victim, (int)holder, path);
	return 1;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int fd, ready[2];

	mode = argc > 1 ? argv[1] : "flock";
	if (strcmp(mode, "flock") && strcmp(mode, "posix") && strcmp(mode, "ofd") && strcmp(mode, "ofd-crowd") && strcmp(mode, "self")) {
		fprintf(stderr, "usage: filelock flock|posix|ofd|ofd-crowd|self\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/hangdoc-filelock-%d.lock", tmp && *tmp ? tmp : "/tmp", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("open");
	if (strcmp(mode, "self") == 0) {
		holder = getpid();
		lock_fd(fd);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			die("open again");
	} else {
		if (pipe(ready) < 0)
			die("pipe");
		holder = fork();
		if (holder < 0)
			die("fork");
		if (holder == 0) {
			int hfd;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_NAME, "holder");
			hfd = open(path, O_RDWR | O_CLOEXEC);
			if (hfd < 0)
				die("holder open");
			lock_fd(hfd);
			ready_forever(ready[1]);
		}
		await_ready(ready, "holder did not take the lock");
		if (strcmp(mode, "ofd-crowd") == 0) {
			pid_t bystander;

			if (pipe(ready) < 0)
				die("pipe");
			bystander = fork();
			if (bystander < 0)
				die("fork");
			if (bystander == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				prctl(PR_SET_NAME, "bystander");
				if (open(path, O_RDONLY | O_CLOEXEC) < 0)
					die("bystander open");
				ready_forever(ready[1]);
			}
			await_ready(ready, "bystander did not open the file");
		}
	}
	spawn_reporter(check);
	lock_fd(fd);
	unlink(path);
	fprintf(stderr, "error: got the lock\n");
	return 1;
}
