/*
 * nobody: a futex wait that no live thread is left to end. By the first
 * argument:
 *
 *   forklock    a thread "holder" locks a mutex and sleeps; the main thread
 *               forks; the child, single-threaded, locks the mutex it
 *               inherited locked: its owner (the parent's holder thread)
 *               does not exist in the child, so nothing can release it;
 *   lone        the main thread waits on a semaphore the worker that
 *               should post it never posts: the worker returned on an error
 *               path first, and the main thread is the only thread left;
 *   lostwakeup  two threads, "main" and "peer", each wait on a condition
 *               variable that only the other would signal: each signalled
 *               before the other waited (a lost wake-up), and both sleep;
 *   loader      a thread "loader" waits on a condition whose signal main
 *               sent before it began to wait (a lost wake-up); three
 *               threads "worker" wait on a second condition that only the
 *               loader would broadcast, once loaded; main joins the workers.
 *
 * Ready line:
 *   ready pid=P [child=C holder=TID lock=0xADDR] [peer=TID] [loader=TID workers=T,T,T]
 * For forklock the stuck process is the child C.
 *
 * Build: gcc -O0 -g -pthread -Wall -o nobody nobody.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

static const char *mode;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t holder_tid, child_pid, peer_tid;
static sem_t sem;

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cmain = PTHREAD_COND_INITIALIZER, cpeer = PTHREAD_COND_INITIALIZER;
static int main_go, peer_go;

#define NWORKERS 3
static pthread_cond_t cload = PTHREAD_COND_INITIALIZER, cwork = PTHREAD_COND_INITIALIZER;
static int load_asked, loaded;
static pid_t loader_tid, worker_tids[NWORKERS];

static void *holder(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holder");
	holder_tid = gettid();
	pthread_mutex_lock(&lock);
	for (;;)
		sleep_ms(3600 * 1000);
	return NULL;
}

static void *poster(void *arg)
{
	(void)arg;
	if (getenv("NOBODY_POSTS") == NULL)
		return NULL; /* the bug: an error path returns before sem_post */
	sem_post(&sem);
	return NULL;
}

static void *peer(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "peer");
	peer_tid = gettid();
	/* Its signal to main goes before main waits: lost. */
	pthread_mutex_lock(&m);
	pthread_cond_signal(&cmain);
	while (!peer_go)
		pthread_cond_wait(&cpeer, &m);
	pthread_mutex_unlock(&m);
	return NULL;
}

static int in_futex(pid_t pid, pid_t tid)
{
	unsigned long args[6];

	return task_syscall(pid, tid, args) == SYS_futex;
}

static void *loader(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "loader");
	pthread_mutex_lock(&m);
	loader_tid = gettid();
	/* The bug: main's signal came before this wait, and main set no flag
	 * the loader could test first. */
	while (!load_asked)
		pthread_cond_wait(&cload, &m);
	loaded = 1;
	pthread_cond_broadcast(&cwork);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;

	pthread_setname_np(pthread_self(), "worker");
	pthread_mutex_lock(&m);
	worker_tids[i] = gettid();
	while (!loaded)
		pthread_cond_wait(&cwork, &m);
	pthread_mutex_unlock(&m);
	return NULL;
}

static int check_loader(pid_t victim, char *line, size_t n)
{
	int i;

	if (!in_futex(victim, victim)) {
		snprintf(line, n, "main not in futex (join)");
		return 0;
	}
	if (!loader_tid || !in_futex(victim, loader_tid)) {
		snprintf(line, n, "loader not in futex");
		return 0;
	}
	for (i = 0; i < NWORKERS; i++) {
		if (!worker_tids[i] || !in_futex(victim, worker_tids[i])) {
			snprintf(line, n, "worker %d not in futex", i);
			return 0;
		}
	}
	snprintf(line, n, "ready pid=%d loader=%d workers=%d,%d,%d", (int)victim, (int)loader_tid,
		 (int)worker_tids[0], (int)worker_tids[1], (int)worker_tids[2]);
	return 1;
}

static int run_loader(void)
{
	pthread_t lt, wt[NWORKERS];
	int i;

	/* The signal goes out before the loader waits: nobody hears it. */
	pthread_mutex_lock(&m);
	pthread_cond_signal(&cload);
	pthread_mutex_unlock(&m);
	if (pthread_create(&lt, NULL, loader, NULL) != 0)
		die("pthread_create");
	for (i = 0; i < NWORKERS; i++)
		if (pthread_create(&wt[i], NULL, worker, (void *)(long)i) != 0)
			die("pthread_create");
	/* The reporter is a fork: it sees the TIDs only if they are set first. */
	for (;;) {
		int all;

		pthread_mutex_lock(&m);
		all = loader_tid != 0;
		for (i = 0; i < NWORKERS; i++)
			all = all && worker_tids[i] != 0;
		pthread_mutex_unlock(&m);
		if (all)
			break;
		sleep_ms(1);
	}
	spawn_reporter(check_loader);
	for (i = 0; i < NWORKERS; i++)
		pthread_join(wt[i], NULL);
	fprintf(stderr, "error: the workers ended\n");
	return 1;
}

static int check(pid_t victim, char *line, size_t n)
{
	if (strcmp(mode, "forklock") == 0) {
		if (!in_futex(child_pid, child_pid)) {
			snprintf(line, n, "child %d not in futex", (int)child_pid);
			return 0;
		}
		snprintf(line, n, "ready pid=%d child=%d holder=%d lock=%p", (int)victim, (int)child_pid,
			 (int)holder_tid, (void *)&lock);
		return 1;
	}
	if (!in_futex(victim, victim)) {
		snprintf(line, n, "main not in futex");
		return 0;
	}
	if (strcmp(mode, "lone") == 0) {
		/* The poster was joined before the wait began. */
		snprintf(line, n, "ready pid=%d", (int)victim);
		return 1;
	}
	if (!in_futex(victim, peer_tid)) {
		snprintf(line, n, "peer not in futex");
		return 0;
	}
	snprintf(line, n, "ready pid=%d peer=%d", (int)victim, (int)peer_tid);
	return 1;
}

int main(int argc, char **argv)
{
	pthread_t t;

	mode = argc > 1 ? argv[1] : "forklock";
	if (strcmp(mode, "forklock") && strcmp(mode, "lone") && strcmp(mode, "lostwakeup") && strcmp(mode, "loader")) {
		fprintf(stderr, "usage: nobody forklock|lone|lostwakeup|loader\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(mode, "loader") == 0)
		return run_loader();
	if (strcmp(mode, "forklock") == 0) {
		if (pthread_create(&t, NULL, holder, NULL) != 0)
			die("pthread_create");
		while (!holder_tid || pthread_mutex_trylock(&lock) == 0) {
			if (holder_tid)
				pthread_mutex_unlock(&lock);
			sleep_ms(1);
		}
		child_pid = fork();
		if (child_pid < 0)
			die("fork");
		if (child_pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			prctl(PR_SET_NAME, "child");
			pthread_mutex_lock(&lock); /* inherited locked, by nobody here */
			_exit(1);
		}
		spawn_reporter(check);
		for (;;)
			pause();
	}
	if (strcmp(mode, "lone") == 0) {
		sem_init(&sem, 0, 0);
		if (pthread_create(&t, NULL, poster, NULL) != 0)
			die("pthread_create");
		pthread_join(t, NULL);
		spawn_reporter(check);
		while (sem_wait(&sem) != 0 && errno == EINTR)
			;
		fprintf(stderr, "error: the semaphore was posted\n");
		return 1;
	}
	if (pthread_create(&t, NULL, peer, NULL) != 0)
		die("pthread_create");
	while (!peer_tid || !in_futex(getpid(), peer_tid))
		sleep_ms(1);
	spawn_reporter(check);
	/* Main's signal to peer would come after its wait: never. */
	pthread_mutex_lock(&m);
	while (!main_go)
		pthread_cond_wait(&cmain, &m);
	pthread_cond_signal(&cpeer);
	pthread_mutex_unlock(&m);
	return 1;
}
