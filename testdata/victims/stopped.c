/*
 * stopped: a process that is not hung at all but stopped, in one of three
 * ways, with a mutex held so that a diagnosis that forgets the stop would
 * name a lock holder instead.
 *
 * The main thread "holder" locks a mutex and calls pause(); a thread
 * "waiter" blocks in pthread_mutex_lock on it. Then, by the first argument:
 *
 *   stop    the reporter sends the victim SIGSTOP (state T);
 *   traced  a child "tracer" attaches to the victim's threads with
 *           PTRACE_SEIZE and PTRACE_INTERRUPT and stays, never resuming
 *           them (state t, TracerPid = the tracer);
 *   ttin    a child "session" leads a session of its own on a new
 *           pseudo-terminal and starts a child "bgreader" in a background
 *           process group that reads the terminal: the kernel stops it with
 *           SIGTTIN. The grandchild is the one stopped; the lock is the
 *           victim's, as in the other modes.
 *
 * Ready line:
 *   ready pid=P holder=TID waiter=TID lock=0xADDR stopped=PID [tracer=PID]
 * stopped is the process that is stopped (P, or the bgreader child).
 *
 * Build: gcc -O0 -g -pthread -Wall -o stopped stopped.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t holder_tid, waiter_tid, stopped_pid, tracer_pid;
static const char *mode;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	waiter_tid = gettid();
	pthread_mutex_lock(&lock);
	return NULL;
}

/* state returns the state letter of /proc/PID/stat, or 0. */
static char state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr;
	char st;

	if (stopped_pid == victim) {
		/* The holder's pause() and the waiter's futex are read while
		 * they run; once stopped they stay. */
		st = state(victim);
		if (st != (strcmp(mode, "traced") == 0 ? 't' : 'T')) {
			if (st == 'S' && strcmp(mode, "stop") == 0) {
				nr = task_syscall(victim, holder_tid, args);
				if (nr != SYS_pause) {
					snprintf(line, n, "holder not in pause() (%ld)", nr);
					return 0;
				}
				nr = task_syscall(victim, waiter_tid, args);
				if (nr != SYS_futex || args[0] != (unsigned long)&lock) {
					snprintf(line, n, "waiter not in futex on the lock (%ld)", nr);
					return 0;
				}
				kill(victim, SIGSTOP);
			}
			snprintf(line, n, "victim state %c", st ? st : '?');
			return 0;
		}
	} else if (state(stopped_pid) != 'T') {
		snprintf(line, n, "bgreader %d state %c", (int)stopped_pid, state(stopped_pid));
		return 0;
	}
	snprintf(line, n, "ready pid=%d holder=%d waiter=%d lock=%p stopped=%d", (int)victim,
		 (int)holder_tid, (int)waiter_tid, (void *)&lock, (int)stopped_pid);
	if (tracer_pid > 0)
		snprintf(line + strlen(line), n - strlen(line), " tracer=%d", (int)tracer_pid);
	return 1;
}

/* trace attaches to every thread of victim, once they are in their waits,
 * and never lets them go. */
static void trace(pid_t victim)
{
	pid_t tids[2] = { victim, waiter_tid };
	unsigned long args[6];
	int i, st;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "tracer");
	while (task_syscall(victim, holder_tid, args) != SYS_pause ||
	       task_syscall(victim, waiter_tid, args) != SYS_futex)
		sleep_ms(1);
	for (i = 0; i < 2; i++) {
		if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) != 0)
			die("PTRACE_SEIZE");
		if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) != 0)
			die("PTRACE_INTERRUPT");
		if (waitpid(tids[i], &st, __WALL) < 0)
			die("waitpid");
	}
	for (;;)
		pause();
}

/* bgreader starts a child that leads a session on a new terminal, and
 * there a grandchild in a background process group that reads it: SIGTTIN
 * stops it. It returns the grandchild, which the child reports on a pipe. */
static pid_t bgreader(void)
{
	int fds[2], master, slave;
	pid_t session, child;
	char c;

	if (pipe(fds) < 0)
		die("pipe");
	session = fork();
	if (session < 0)
		die("fork");
	if (session > 0) {
		close(fds[1]);
		if (read(fds[0], &child, sizeof child) != sizeof child)
			die("reading the bgreader's pid");
		close(fds[0]);
		return child;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "session");
	close(fds[0]);
	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master))
		die("posix_openpt");
	if (setsid() < 0)
		die("setsid");
	slave = open(ptsname(master), O_RDWR);
	if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
		die("controlling terminal");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "bgreader");
		setpgid(0, 0);
		if (read(slave, &c, 1) < 0)
			die("read");
		_exit(0);
	}
	setpgid(child, child);
	if (write(fds[1], &child, sizeof child) != sizeof child)
		die("writing the bgreader's pid");
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	pthread_t t;

	mode = argc > 1 ? argv[1] : "stop";
	if (strcmp(mode, "stop") && strcmp(mode, "traced") && strcmp(mode, "ttin")) {
		fprintf(stderr, "usage: stopped stop|traced|ttin\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	prctl(PR_SET_NAME, "holder");
	holder_tid = gettid();
	stopped_pid = getpid();
	pthread_mutex_lock(&lock);
	if (pthread_create(&t, NULL, waiter, NULL) != 0)
		die("pthread_create");
	while (!waiter_tid)
		sleep_ms(1);
	if (strcmp(mode, "ttin") == 0)
		stopped_pid = bgreader();
	if (strcmp(mode, "traced") == 0) {
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
		tracer_pid = fork();
		if (tracer_pid < 0)
			die("fork tracer");
		if (tracer_pid == 0)
			trace(getppid());
	}
	spawn_reporter(check);
	for (;;)
		pause();
}
