/*
 * abba: classic ABBA deadlock between two default-kind pthread mutexes.
 *
 *   thread "left"  locks m1, then (after a barrier) m2
 *   thread "right" locks m2, then (after a barrier) m1
 *   the main thread pthread_join()s them: a futex wait on the thread's tid
 *   word, which is NOT a mutex.
 *
 * Ready line (stdout, once all three threads are parked in futex):
 *   ready pid=P left=TID right=TID m1=0xADDR m2=0xADDR
 *
 * The ready line is written by a short-lived "reporter" child process that
 * polls /proc/PID/task/TID/syscall of this process, so that the line is only
 * written once every thread of the victim, main included, is in its blocking
 * syscall (no window where the printing thread is still on its way to block).
 *
 * Build: gcc -O0 -g -pthread -Wall -o abba abba.c
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

/* ---- abba ---- */

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static pid_t left_tid, right_tid;

static void *left(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "left");
	left_tid = gettid();
	pthread_mutex_lock(&m1);
	pthread_barrier_wait(&started);
	pthread_mutex_lock(&m2); /* never returns: right holds m2 */
	pthread_mutex_unlock(&m2);
	pthread_mutex_unlock(&m1);
	return NULL;
}

static void *right(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "right");
	right_tid = gettid();
	pthread_mutex_lock(&m2);
	pthread_barrier_wait(&started);
	pthread_mutex_lock(&m1); /* never returns: left holds m1 */
	pthread_mutex_unlock(&m1);
	pthread_mutex_unlock(&m2);
	return NULL;
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long a[6];
	long nr;

	nr = task_syscall(victim, left_tid, a);
	if (nr != SYS_futex || a[0] != (unsigned long)&m2) {
		snprintf(line, n, "left (tid %d) not in futex on m2 (syscall %ld)", (int)left_tid, nr);
		return 0;
	}
	nr = task_syscall(victim, right_tid, a);
	if (nr != SYS_futex || a[0] != (unsigned long)&m1) {
		snprintf(line, n, "right (tid %d) not in futex on m1 (syscall %ld)", (int)right_tid, nr);
		return 0;
	}
	nr = task_syscall(victim, victim, a);
	if (nr != SYS_futex) {
		snprintf(line, n, "main (tid %d) not in futex (join) (syscall %ld)", (int)victim, nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d left=%d right=%d m1=%p m2=%p",
		 (int)victim, (int)left_tid, (int)right_tid, (void *)&m1, (void *)&m2);
	return 1;
}

int main(void)
{
	pthread_t tl, tr;

	if (pthread_barrier_init(&started, NULL, 3) != 0)
		die("pthread_barrier_init");
	if ((errno = pthread_create(&tl, NULL, left, NULL)) != 0)
		die("pthread_create left");
	if ((errno = pthread_create(&tr, NULL, right, NULL)) != 0)
		die("pthread_create right");
	pthread_barrier_wait(&started); /* both hold their first mutex */
	spawn_reporter(check);
	pthread_join(tl, NULL); /* never returns */
	pthread_join(tr, NULL);
	return 0;
}
