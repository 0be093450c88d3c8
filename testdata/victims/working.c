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
