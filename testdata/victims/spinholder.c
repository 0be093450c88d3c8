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
