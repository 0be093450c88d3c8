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

/* ---- shared victim helpers (copied in every victim) ---- */

static void die(const char *what)
{
	fprintf(stderr, "error: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * task_syscall reads /proc/PID/task/TID/syscall. It returns the syscall
 * number (>= 0) when the thread is blocked in a syscall, filling args[0..5];
 * -1 when it is not in a syscall ("running" or "-1 sp pc"); -2 on error.
 */
static long task_syscall(pid_t pid, pid_t tid, unsigned long args[6])
{
	char path[64], buf[256], *p;
	ssize_t n;
	long nr;
	int fd, i;

	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -2;
	buf[n] = 0;
	if (strncmp(buf, "running", 7) == 0)
		return -1;
	nr = strtol(buf, &p, 10);
	if (nr < 0)
		return -1;
	for (i = 0; i < 6; i++)
		args[i] = strtoul(p, &p, 16);
	return nr;
}

/*
 * check_fn returns 1 when the victim is in its hang state, writing the ready
 * line into line; otherwise 0, writing the reason into line.
 */
typedef int (*check_fn)(pid_t victim, char *line, size_t n);

/*
 * spawn_reporter forks a child that polls check until it holds twice in a
 * row 100 ms apart, then writes the ready line to stdout and exits. If the
 * hang is not reached within 15 s it writes the last reason to stderr and
 * kills the victim. SIGCHLD is ignored so the reporter never lingers as a
 * zombie. Call it from the main thread (PR_SET_PDEATHSIG follows the thread
 * that forked).
 */
static void spawn_reporter(check_fn check)
{
	pid_t victim = getpid();
	pid_t child;
	char line[4096];
	int i, ok;

	signal(SIGCHLD, SIG_IGN);
	child = fork();
	if (child < 0)
		die("fork reporter");
	if (child > 0)
		return;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != victim)
		_exit(1);
	prctl(PR_SET_NAME, "reporter");
	for (i = 0; i < 1500; i++) {
		ok = check(victim, line, sizeof line);
		if (ok) {
			sleep_ms(100);
			ok = check(victim, line, sizeof line);
		}
		if (ok) {
			size_t len = strlen(line), off = 0;
			line[len++] = '\n';
			while (off < len) {
				ssize_t w = write(1, line + off, len - off);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					_exit(1);
				off += (size_t)w;
			}
			_exit(0);
		}
		sleep_ms(10);
	}
	{
		char msg[4096 + 128];
		int len = snprintf(msg, sizeof msg,
				   "error: hang not reached within 15s: %s\n", line);
		if (len > 0 && write(2, msg, (size_t)len) < 0)
			_exit(1);
	}
	kill(victim, SIGKILL);
	_exit(1);
}

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
