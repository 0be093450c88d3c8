/*
 * spinholder: a mutex holder stuck in a pure-CPU infinite loop.
 *
 * Eight threads "renderer-0".."renderer-7" share one mutex. renderer-0 takes
 * it first and then spins forever in a "pagination loop that never exits"
 * (increments a volatile counter, no syscalls); the seven others block in
 * pthread_mutex_lock. The main thread joins them.
 *
 * Ready line:
 *   ready pid=P holder=TID waiters=TID,... lock=0xADDR
 *
 * Build: gcc -O0 -g -pthread -Wall -o spinholder spinholder.c
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

/* ---- spinholder ---- */

#define NRENDERERS 8

static pthread_mutex_t doc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static pid_t renderer_tid[NRENDERERS];
static volatile unsigned long pages_laid_out;

/* The bug: the "last page" condition can never become true. */
static void __attribute__((noinline)) paginate_forever(void)
{
	for (;;) {
		pages_laid_out++;
		if (pages_laid_out == 0) /* wraps after 2^64 iterations: never */
			break;
	}
}

static void *renderer(void *arg)
{
	int idx = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof name, "renderer-%d", idx);
	pthread_setname_np(pthread_self(), name);
	renderer_tid[idx] = gettid();
	if (idx == 0)
		pthread_mutex_lock(&doc_lock);
	pthread_barrier_wait(&started);
	if (idx == 0)
		paginate_forever();
	else
		pthread_mutex_lock(&doc_lock); /* never returns */
	pthread_mutex_unlock(&doc_lock);
	return NULL;
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long a[6];
	char waiters[NRENDERERS * 12] = "";
	size_t wl = 0;
	long nr;
	int i;

	nr = task_syscall(victim, renderer_tid[0], a);
	if (nr != -1) {
		snprintf(line, n, "renderer-0 (tid %d) in a syscall (%ld), expected spinning in user space",
			 (int)renderer_tid[0], nr);
		return 0;
	}
	for (i = 1; i < NRENDERERS; i++) {
		nr = task_syscall(victim, renderer_tid[i], a);
		if (nr != SYS_futex || a[0] != (unsigned long)&doc_lock) {
			snprintf(line, n, "renderer-%d (tid %d) not in futex on lock (syscall %ld)",
				 i, (int)renderer_tid[i], nr);
			return 0;
		}
		wl += (size_t)snprintf(waiters + wl, sizeof waiters - wl, "%s%d",
				       wl ? "," : "", (int)renderer_tid[i]);
	}
	nr = task_syscall(victim, victim, a);
	if (nr != SYS_futex) {
		snprintf(line, n, "main (tid %d) not in futex (join) (syscall %ld)", (int)victim, nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d holder=%d waiters=%s lock=%p",
		 (int)victim, (int)renderer_tid[0], waiters, (void *)&doc_lock);
	return 1;
}

int main(void)
{
	pthread_t th[NRENDERERS];
	long i;

	if (pthread_barrier_init(&started, NULL, NRENDERERS + 1) != 0)
		die("pthread_barrier_init");
	for (i = 0; i < NRENDERERS; i++)
		if ((errno = pthread_create(&th[i], NULL, renderer, (void *)i)) != 0)
			die("pthread_create");
	pthread_barrier_wait(&started);
	spawn_reporter(check);
	for (i = 0; i < NRENDERERS; i++)
		pthread_join(th[i], NULL); /* never returns */
	return 0;
}
