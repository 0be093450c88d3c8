/*
 * sysvsem: a process blocked on SysV IPC that nobody will move — a legacy
 * daemon's semaphore or message queue.
 *
 *   sem  the victim creates a set of one semaphore (value 0); a child
 *        "other" adds 1 and takes it back (so it is the last to operate on
 *        it) and sleeps; the victim blocks in semop taking 1.
 *   msg  the victim creates a queue; the child sends a message of type 2
 *        and sleeps; the victim blocks in msgrcv for type 1.
 *
 * The set or queue is IPC_PRIVATE and outlives the processes: the test
 * removes it by its id.
 *
 * Ready line:
 *   ready pid=P other=C id=ID
 *
 * Build: gcc -O0 -g -pthread -Wall -o sysvsem sysvsem.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "victim.h"

static const char *mode;
static pid_t other;
static int id;

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];
	long nr = task_syscall(victim, victim, args);
	int ok = strcmp(mode, "sem") == 0 ? nr == SYS_semop || nr == SYS_semtimedop : nr == SYS_msgrcv;

	if (!ok) {
		snprintf(line, n, "victim not in its wait (%ld)", nr);
		return 0;
	}
	snprintf(line, n, "ready pid=%d other=%d id=%d", (int)victim, (int)other, id);
	return 1;
}

struct msg {
	long type;
	char text[16];
};

int main(int argc, char **argv)
{
	int ready[2];

	mode = argc > 1 ? argv[1] : "sem";
	if (strcmp(mode, "sem") && strcmp(mode, "msg")) {
		fprintf(stderr, "usage: sysvsem sem|msg\n");
		return 2;
	}
	id = strcmp(mode, "sem") == 0 ? semget(IPC_PRIVATE, 1, 0600) : msgget(IPC_PRIVATE, 0600);
	if (id < 0)
		die("get");
	if (pipe(ready) < 0)
		die("pipe");
	other = fork();
	if (other < 0)
		die("fork");
	if (other == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "other");
		if (strcmp(mode, "sem") == 0) {
			struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };

			if (semop(id, &up, 1) < 0 || semop(id, &down, 1) < 0)
				die("child semop");
		} else {
			struct msg m = { 2, "not for you" };

			if (msgsnd(id, &m, sizeof m.text, 0) < 0)
				die("child msgsnd");
		}
		ready_forever(ready[1]);
	}
	await_ready(ready, "child did not operate");
	spawn_reporter(check);
	if (strcmp(mode, "sem") == 0) {
		struct sembuf down = { 0, -1, 0 };

		while (semop(id, &down, 1) < 0 && errno == EINTR)
			;
	} else {
		struct msg m;

		while (msgrcv(id, &m, sizeof m.text, 1, 0) < 0 && errno == EINTR)
			;
	}
	fprintf(stderr, "error: the wait ended\n");
	return 1;
}
