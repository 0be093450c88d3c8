/*
 * victim.h: what every victim shares: die, sleep_ms, task_syscall (read a
 * thread's /proc/PID/task/TID/syscall) and spawn_reporter (a child that
 * prints the ready line once the hang is in place). Each victim includes it
 * once; the functions are static.
 */
#ifndef HANGDOC_VICTIM_H
#define HANGDOC_VICTIM_H

#include <sys/syscall.h>
#include <unistd.h>

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
 * ready_forever tells the parent, on the write end of a ready pipe, that
 * this child holds what the hang needs, then sleeps until it is killed.
 */
static void __attribute__((unused)) ready_forever(int fd)
{
	if (write(fd, "x", 1) != 1)
		die("write");
	for (;;)
		sleep_ms(3600 * 1000);
}

/*
 * await_ready closes the ready pipe's write end and waits for the child's
 * byte; what is the failure it dies with when the byte never comes.
 */
static void __attribute__((unused)) await_ready(int ready[2], const char *what)
{
	char c;

	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		die(what);
}

/*
 * spawn_reporter forks a child that polls check until it holds twice in a
 * row 100 ms apart, then writes the ready line to stdout and exits. If the
 * hang is not reached within 60 s it writes the last reason to stderr and
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
	/*
	 * The reporter reads only /proc: it lets go of every descriptor it
	 * inherited (pipe ends, an eventfd, a lock's file), which would
	 * otherwise make it one more holder of them until it exits, after
	 * the ready line.
	 */
	syscall(SYS_close_range, 3U, ~0U, 0U);
	prctl(PR_SET_NAME, "reporter");
	for (i = 0; i < 6000; i++) {
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
				   "error: hang not reached within 60s: %s\n", line);
		if (len > 0 && write(2, msg, (size_t)len) < 0)
			_exit(1);
	}
	kill(victim, SIGKILL);
	_exit(1);
}

#endif
