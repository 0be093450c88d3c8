/*
 * kwaits: a process waiting on a kernel object that names what it waits
 * for only in /proc/PID/fdinfo. By the first argument, the victim:
 *
 *   eventfd   reads an eventfd that a child also has open and never writes;
 *   pidfd     polls the pidfd of a child that sleeps (a wait for its exit);
 *   signalfd  reads a signalfd for SIGUSR1 and SIGTERM (blocked), which
 *             nobody sends;
 *   timerfd   reads a timerfd set to expire in an hour;
 *   inotify   reads an inotify instance watching the temporary directory;
 *   epoll     epoll_waits on the read end of a pipe whose writer is a
 *             child that sleeps;
 *   io_uring  waits in io_uring_enter for a completion of a ring it gave
 *             nothing to do;
 *   futex_waitv  waits in futex_waitv on two futex words of its own that
 *             no thread will wake (a vectorized wait: Wine, Proton, game
 *             engines).
 *
 * Ready line:
 *   ready pid=P other=C
 * (C is the child, or P when there is none).
 *
 * Build: gcc -O0 -g -pthread -Wall -o kwaits kwaits.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>
#include <linux/io_uring.h>

#include "victim.h"

static const char *mode;
static pid_t other;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args), want = SYS_read;

	if (strcmp(mode, "pidfd") == 0)
		want = SYS_poll;
	else if (strcmp(mode, "epoll") == 0)
		want = SYS_epoll_wait;
	else if (strcmp(mode, "io_uring") == 0)
		want = SYS_io_uring_enter;
	else if (strcmp(mode, "futex_waitv") == 0)
		want = SYS_futex_waitv;
	if (nr != want && !(want == SYS_epoll_wait && nr == SYS_epoll_pwait)) {
		snprintf(line, n, "victim not in its wait (%ld)", nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d other=%d", (int)victim, (int)other);
	return 1;
}

/* child forks a child that keeps what it inherited open and sleeps. */
static pid_t child(void)
{
	int ready[2];
	pid_t c;

	if (pipe(ready) < 0)
		die("pipe");
	c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "other");
		ready_forever(ready[1]);
	}
	await_ready(ready, "child did not start");
	close(ready[0]);
	return c;
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char buf[4096];
	int fd;

	mode = argc > 1 ? argv[1] : "eventfd";
	other = getpid();
	if (strcmp(mode, "eventfd") == 0) {
		fd = eventfd(0, EFD_CLOEXEC);
		if (fd < 0)
			die("eventfd");
		other = child();
		spawn_reporter(check);
		if (read(fd, buf, 8) < 0)
			die("read");
	} else if (strcmp(mode, "pidfd") == 0) {
		struct pollfd p;

		other = child();
		fd = syscall(SYS_pidfd_open, other, 0);
		if (fd < 0)
			die("pidfd_open");
		p.fd = fd;
		p.events = POLLIN;
		spawn_reporter(check);
		if (poll(&p, 1, -1) < 0)
			die("poll");
	} else if (strcmp(mode, "signalfd") == 0) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigaddset(&set, SIGTERM);
		if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
			die("sigprocmask");
		fd = signalfd(-1, &set, SFD_CLOEXEC);
		if (fd < 0)
			die("signalfd");
		spawn_reporter(check);
		if (read(fd, buf, sizeof(struct signalfd_siginfo)) < 0)
			die("read");
	} else if (strcmp(mode, "timerfd") == 0) {
		struct itimerspec its = { .it_value = { 3600, 0 } };

		fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (fd < 0 || timerfd_settime(fd, 0, &its, NULL) < 0)
			die("timerfd");
		spawn_reporter(check);
		if (read(fd, buf, 8) < 0)
			die("read");
	} else if (strcmp(mode, "inotify") == 0) {
		fd = inotify_init1(IN_CLOEXEC);
		if (fd < 0 || inotify_add_watch(fd, tmp && *tmp ? tmp : "/tmp", IN_CREATE | IN_DELETE) < 0)
			die("inotify");
		spawn_reporter(check);
		if (read(fd, buf, sizeof buf) < 0)
			die("read");
	} else if (strcmp(mode, "epoll") == 0) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct epoll_event got;
		int p[2], ep;

		if (pipe(p) < 0)
			die("pipe");
		other = child(); /* holds the write end and sleeps */
		close(p[1]);
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
			die("epoll");
		spawn_reporter(check);
		if (epoll_wait(ep, &got, 1, -1) < 0)
			die("epoll_wait");
	} else if (strcmp(mode, "io_uring") == 0) {
		struct io_uring_params params;

		memset(&params, 0, sizeof params);
		fd = syscall(SYS_io_uring_setup, 4, &params);
		if (fd < 0)
			die("io_uring_setup");
		spawn_reporter(check);
		if (syscall(SYS_io_uring_enter, fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
			die("io_uring_enter");
	} else if (strcmp(mode, "futex_waitv") == 0) {
		static uint32_t words[2];
		struct futex_waitv w[2];

		memset(w, 0, sizeof w);
		for (int i = 0; i < 2; i++) {
			w[i].val = 0;
			w[i].uaddr = (uintptr_t)&words[i];
			w[i].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
		}
		spawn_reporter(check);
		if (syscall(SYS_futex_waitv, w, 2, 0, NULL, 0) < 0)
			die("futex_waitv");
	} else {
		fprintf(stderr, "usage: kwaits eventfd|pidfd|signalfd|timerfd|inotify|epoll|io_uring|futex_waitv\n");
		return 2;
	}
	fprintf(stderr, "error: the wait ended\n");
	return 1;
}
