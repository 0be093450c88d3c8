/*
 * starved: a thread that only wants CPU — a long computation, or a loop —
 * and nothing else. Run inside a cgroup with a small CPU quota, it is
 * starved, not hung: it gets the quota and waits for the next period.
 *
 * The thread "spinner" loops on arithmetic, making no syscall; the main
 * thread joins it.
 *
 * Ready line, once the spinner has run on a CPU:
 *   ready pid=P spinner=TID
 *
 * Build: gcc -O0 -g -pthread -Wall -o starved starved.c
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

static volatile unsigned long counter;
static pid_t spinner_tid;

static void *spinner(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	spinner_tid = gettid();
	for (;;)
		counter = counter * 6364136223846793005UL + 1442695040888963407UL;
	return NULL;
}

static int check(pid_t victim, char *line, size_t n)
{
	unsigned long args[6];

	if (counter == 0 || spinner_tid == 0 || task_syscall(victim, spinner_tid, args) != -1) {
		snprintf(line, n, "the spinner has not run");
		return 0;
	}
	snprintf(line, n, "ready pid=%d spinner=%d", (int)victim, (int)spinner_tid);
	return 1;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		die("pthread_create");
	while (!spinner_tid)
		sleep_ms(1);
	spawn_reporter(check);
	pthread_join(t, NULL);
	return 1;
}
