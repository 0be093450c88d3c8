/*
 * possem: a process blocked in sem_wait on a POSIX named semaphore that
 * nobody posts — a job queue's "work available" count whose producer
 * stopped.
 *
 * The victim creates the semaphore (value 0), forks a child "other" that
 * opens it by name too and sleeps, unlinks the name (so nothing is left in
 * /dev/shm when the test kills them), and waits on it. The child could post
 * it and never does.
 *
 * Ready line:
 *   ready pid=P other=C name=NAME
 *
 * Build: gcc -O0 -g -pthread -Wall -o possem possem.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static char name[64];
static pid_t other;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args);

	if (nr != SYS_futex) {
		snprintf(line, n, "victim not in futex (%ld)", nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d other=%d name=%s", (int)victim, (int)other, name);
	return 1;
}

int main(void)
{
	int ready[2];
	sem_t *sem;

	snprintf(name, sizeof name, "/hangdoc-possem-%d", (int)getpid());
	sem = sem_open(name, O_CREAT | O_EXCL, 0600, 0);
	if (sem == SEM_FAILED)
		die("sem_open");
	if (pipe(ready) < 0)
		die("pipe");
	other = fork();
	if (other < 0)
		die("fork");
	if (other == 0) {
		sem_t *mine;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "other");
		sem_close(sem);
		mine = sem_open(name, 0);
		if (mine == SEM_FAILED)
			die("child sem_open");
		ready_forever(ready[1]);
	}
	await_ready(ready, "child did not open the semaphore");
	sem_unlink(name);
	spawn_reporter(check);
	while (sem_wait(sem) < 0 && errno == EINTR)
		;
	fprintf(stderr, "error: the semaphore was posted\n");
	return 1;
}
