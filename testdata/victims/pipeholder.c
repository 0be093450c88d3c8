/*
 * pipeholder: a mutex held across a blocking write() to a full pipe.
 *
 * A child process "reader" reads ONE byte per second from the pipe (a slow
 * consumer). Eight threads "worker-0".."worker-7" loop
 *   { lock(out); write(pipe, 512 bytes); unlock(out); }
 * The pipe fills within microseconds: one worker blocks in write() while
 * holding out, the seven others block in pthread_mutex_lock(&out). With
 * 512-byte writes the writer is only woken when a whole pipe page (4096
 * bytes) has been consumed, i.e. after ~68 minutes. The main thread joins
 * the workers.
 *
 * Ready line:
 *   ready pid=P holder=TID waiters=TID,... lock=0xADDR reader=CHILDPID pipefd=N
 * (pipefd is the victim's write end; the holder is the worker found in
 * SYS_write on it in /proc/PID/task/TID/syscall.)
 *
 * Build: gcc -O0 -g -pthread -Wall -o pipeholder pipeholder.c
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

/* ---- pipeholder ---- */

#define NWORKERS 8
#define LINELEN 512

static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static pid_t worker_tid[NWORKERS];
static int pipe_wr = -1;
static pid_t reader_pid;

static void *worker(void *arg)
{
	int idx = (int)(long)arg;
	char name[16], line[LINELEN];

	snprintf(name, sizeof name, "worker-%d", idx);
	pthread_setname_np(pthread_self(), name);
	worker_tid[idx] = gettid();
	memset(line, 'a' + idx, sizeof line - 1);
	line[sizeof line - 1] = '\n';
	pthread_barrier_wait(&started);
	for (;;) {
		pthread_mutex_lock(&out);
		if (write(pipe_wr, line, sizeof line) < 0)
			abort();
		pthread_mutex_unlock(&out);
	}
	return NULL;
}

static void reader(int rd)
{
	char c;

	for (;;) {
		sleep_ms(1000);
		if (read(rd, &c, 1) <= 0)
			_exit(0);
	}
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long a[6];
	pid_t holder = 0;
	char waiters[NWORKERS * 12] = "";
	size_t wl = 0;
	long nr;
	int i;

	for (i = 0; i < NWORKERS; i++) {
		nr = task_syscall(victim, worker_tid[i], a);
		if (nr == SYS_write && a[0] == (unsigned long)pipe_wr) {
			if (holder != 0) {
				snprintf(line, n, "two workers in write()");
				return 0;
			}
			holder = worker_tid[i];
		} else if (nr == SYS_futex && a[0] == (unsigned long)&out) {
			wl += (size_t)snprintf(waiters + wl, sizeof waiters - wl, "%s%d",
					       wl ? "," : "", (int)worker_tid[i]);
		} else {
			snprintf(line, n, "worker-%d (tid %d) neither in write nor futex on lock (syscall %ld)",
				 i, (int)worker_tid[i], nr);
			return 0;
		}
	}
	if (holder == 0) {
		snprintf(line, n, "no worker in write()");
		return 0;
	}
	nr = task_syscall(victim, victim, a);
	if (nr != SYS_futex) {
		snprintf(line, n, "main (tid %d) not in futex (join) (syscall %ld)", (int)victim, nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d holder=%d waiters=%s lock=%p reader=%d pipefd=%d",
		 (int)victim, (int)holder, waiters, (void *)&out, (int)reader_pid, pipe_wr);
	return 1;
}

int main(void)
{
	pthread_t th[NWORKERS];
	pid_t parent = getpid();
	int fds[2];
	long i;

	if (pipe2(fds, O_CLOEXEC) != 0)
		die("pipe2");
	signal(SIGCHLD, SIG_IGN);
	reader_pid = fork();
	if (reader_pid < 0)
		die("fork reader");
	if (reader_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		prctl(PR_SET_NAME, "reader");
		close(fds[1]);
		/* Share nothing else with the victim: no stdio on the test's pipe. */
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		reader(fds[0]);
	}
	close(fds[0]);
	pipe_wr = fds[1];

	if (pthread_barrier_init(&started, NULL, NWORKERS + 1) != 0)
		die("pthread_barrier_init");
	for (i = 0; i < NWORKERS; i++)
		if ((errno = pthread_create(&th[i], NULL, worker, (void *)i)) != 0)
			die("pthread_create");
	pthread_barrier_wait(&started);
	spawn_reporter(check);
	for (i = 0; i < NWORKERS; i++)
		pthread_join(th[i], NULL); /* never returns */
	return 0;
}
