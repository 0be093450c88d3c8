/*
 * working: a healthy, busy process (the negative control).
 *
 * Four threads "cruncher-0".."cruncher-3" loop { ~2 ms of arithmetic;
 * nanosleep 200 us } so they burn CPU, block voluntarily and make syscalls.
 * The main thread joins them.
 *
 * Ready line, once every cruncher has completed a few work/sleep cycles:
 *   ready pid=P workers=TID,TID,TID,TID
 *
 * Build: gcc -O0 -g -pthread -Wall -o working working.c
 */
#define _GNU_SOURCE
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

/* ---- working ---- */

#define NCRUNCHERS 4

static pthread_barrier_t started;
static pid_t cruncher_tid[NCRUNCHERS];
static volatile double sink;

static long elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

/* crunch does ~2 ms of arithmetic (clock_gettime is served by the vDSO). */
static double crunch(double x)
{
	struct timespec t0, now;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 2000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (elapsed_ns(&t0, &now) < 2000000L);
	return x;
}

static void *cruncher(void *arg)
{
	int idx = (int)(long)arg;
	struct timespec nap = { 0, 200000L };
	char name[16];
	double x = idx + 1.0;

	snprintf(name, sizeof name, "cruncher-%d", idx);
	pthread_setname_np(pthread_self(), name);
	cruncher_tid[idx] = gettid();
	pthread_barrier_wait(&started);
	for (;;) {
		x = crunch(x);
		sink = x;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/* voluntary_switches returns voluntary_ctxt_switches of a thread, or -1. */
static long voluntary_switches(pid_t pid, pid_t tid)
{
	char path[64], buf[2048], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "\nvoluntary_ctxt_switches:");
	if (p == NULL)
		return -1;
	return strtol(p + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long a[6];
	char workers[NCRUNCHERS * 12] = "";
	size_t wl = 0;
	long nr, v;
	int i;

	for (i = 0; i < NCRUNCHERS; i++) {
		v = voluntary_switches(victim, cruncher_tid[i]);
		if (v < 5) {
			snprintf(line, n, "cruncher-%d (tid %d) has only %ld voluntary switches",
				 i, (int)cruncher_tid[i], v);
			return 0;
		}
		wl += (size_t)snprintf(workers + wl, sizeof workers - wl, "%s%d",
				       wl ? "," : "", (int)cruncher_tid[i]);
	}
	nr = task_syscall(victim, victim, a);
	if (nr != SYS_futex) {
		snprintf(line, n, "main (tid %d) not in futex (join) (syscall %ld)", (int)victim, nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d workers=%s", (int)victim, workers);
	return 1;
}

int main(void)
{
	pthread_t th[NCRUNCHERS];
	long i;

	if (pthread_barrier_init(&started, NULL, NCRUNCHERS + 1) != 0)
		die("pthread_barrier_init");
	for (i = 0; i < NCRUNCHERS; i++)
		if ((errno = pthread_create(&th[i], NULL, cruncher, (void *)i)) != 0)
			die("pthread_create");
	pthread_barrier_wait(&started);
	spawn_reporter(check);
	for (i = 0; i < NCRUNCHERS; i++)
		pthread_join(th[i], NULL); /* never returns */
	return 0;
}
