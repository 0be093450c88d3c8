/*
 * shmmutex: a process blocked on a process-shared pthread mutex that
 * another process holds — a shared-memory cache or queue whose lock a
 * worker took and never released.
 *
 * The mutex (PTHREAD_PROCESS_SHARED) lies in a MAP_SHARED mapping; a child
 * "holder" locks it and sleeps; the victim then blocks locking it. By the
 * first argument:
 *
 *   file    the mapping is a file in the temporary directory, mapped by both;
 *   anon    anonymous shared memory, mapped before the fork (the kernel
 *           shows it as "/dev/zero (deleted)");
 *   robust  as file, with a robust mutex (PTHREAD_MUTEX_ROBUST): the lock
 *           word is the holder's TID.
 *
 * Ready line:
 *   ready pid=P holder=H path=PATH
 * (PATH is "-" for anon).
 *
 * Build: gcc -O0 -g -pthread -Wall -o shmmutex shmmutex.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static char path[4096] = "-";
static pid_t holder;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args);

	if (nr != SYS_futex) {
		snprintf(line, n, "victim not in futex (%ld)", nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d holder=%d path=%s", (int)victim, (int)holder, path);
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "file";
	const char *tmp = getenv("TMPDIR");
	pthread_mutexattr_t attr;
	pthread_mutex_t *mu;
	size_t size = 4096;
	int ready[2], fd = -1;
	/* The mutex sits past the start of the page, so its offset is not 0. */
	const size_t at = 64;

	if (strcmp(mode, "file") && strcmp(mode, "anon") && strcmp(mode, "robust")) {
		fprintf(stderr, "usage: shmmutex file|anon|robust\n");
		return 2;
	}
	if (strcmp(mode, "anon") == 0) {
		mu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	} else {
		snprintf(path, sizeof path, "%s/hangdoc-shmmutex-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			die("open");
		if (ftruncate(fd, size) < 0)
			die("ftruncate");
		mu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	}
	if (mu == MAP_FAILED)
		die("mmap");
	mu = (pthread_mutex_t *)((char *)mu + at);
	pthread_mutexattr_init(&attr);
	if (pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED))
		die("setpshared");
	if (strcmp(mode, "robust") == 0 && pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST))
		die("setrobust");
	if (pthread_mutex_init(mu, &attr))
		die("mutex init");
	if (pipe(ready) < 0)
		die("pipe");
	holder = fork();
	if (holder < 0)
		die("fork");
	if (holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "holder");
		if (pthread_mutex_lock(mu))
			die("holder lock");
		ready_forever(ready[1]);
	}
	await_ready(ready, "holder did not take the mutex");
	spawn_reporter(check);
	pthread_mutex_lock(mu);
	fprintf(stderr, "error: got the mutex\n");
	return 1;
}
