/*
 * manythreads: N idle threads (argv[1], default 1000), each with a 64 KiB
 * stack, parked forever in pthread_cond_wait on one shared condvar (a futex
 * wait). Named "parked-0".."parked-(N-1)". The main thread joins the first.
 * Works for N=10000 (needs threads-max / pid_max / ulimit -u above N+2).
 *
 * Ready line, once /proc/self/status says Threads: N+1 and every thread is
 * in a futex wait:
 *   ready pid=P threads=N
 * If a thread cannot be created: "error ..." on stderr and exit status 1.
 *
 * Build: gcc -O0 -g -pthread -Wall -o manythreads manythreads.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* ---- manythreads ---- */

#define STACK_SIZE (64 * 1024)

static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static long nthreads = 1000;

static void *parked(void *arg)
{
	char name[16];

	snprintf(name, sizeof name, "parked-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&park_mu);
	for (;;)
		pthread_cond_wait(&park_cv, &park_mu); /* nobody ever signals */
	return NULL;
}

/* status_threads returns the Threads: field of /proc/PID/status, or -1. */
static long status_threads(pid_t pid)
{
	char path[64], buf[4096], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "\nThreads:");
	if (p == NULL)
		return -1;
	return strtol(p + strlen("\nThreads:"), NULL, 10);
}

static int check(pid_t victim, char *line, size_t n)
{
	char path[64];
	unsigned long a[6];
	struct dirent *de;
	long got, nr, seen = 0;
	DIR *d;

	got = status_threads(victim);
	if (got != nthreads + 1) {
		snprintf(line, n, "Threads: %ld, want %ld", got, nthreads + 1);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/%d/task", (int)victim);
	d = opendir(path);
	if (d == NULL) {
		snprintf(line, n, "opendir %s: %s", path, strerror(errno));
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid <= 0)
			continue;
		seen++;
		nr = task_syscall(victim, tid, a);
		if (nr != SYS_futex) {
			snprintf(line, n, "thread %d not in futex (syscall %ld)", (int)tid, nr);
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	if (seen != nthreads + 1) {
		snprintf(line, n, "saw %ld tasks, want %ld", seen, nthreads + 1);
		return 0;
	}
	snprintf(line, n, "ready pid=%d threads=%ld", (int)victim, nthreads);
	return 1;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t first;
	char *end;
	long i;
	int err;

	if (argc > 1) {
		nthreads = strtol(argv[1], &end, 10);
		if (*argv[1] == 0 || *end != 0 || nthreads < 1) {
			fprintf(stderr, "error: bad thread count %s\n", argv[1]);
			return 1;
		}
	}
	if (pthread_attr_init(&attr) != 0 ||
	    pthread_attr_setstacksize(&attr, STACK_SIZE) != 0 ||
	    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE) != 0)
		die("pthread_attr");
	for (i = 0; i < nthreads; i++) {
		pthread_t th;
		err = pthread_create(&th, &attr, parked, (void *)i);
		if (err != 0) {
			fprintf(stderr, "error: pthread_create thread %ld of %ld: %s "
				"(check ulimit -u, /proc/sys/kernel/threads-max, /proc/sys/kernel/pid_max, "
				"/proc/sys/vm/max_map_count)\n",
				i + 1, nthreads, strerror(err));
			return 1;
		}
		if (i == 0)
			first = th;
	}
	spawn_reporter(check);
	pthread_join(first, NULL); /* never returns */
	return 0;
}
