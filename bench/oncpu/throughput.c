/*
 * throughput: THREADS threads (argv[1], default 2) each do units of pure
 * CPU work (an xorshift round, frame pointers kept, a call per unit) for
 * SECONDS (argv[2], default 4) after it prints "ready pid=P", then print
 * "units=N": the work done, which a profiler that costs the target CPU
 * lowers. Build: gcc -O2 -fno-omit-frame-pointer -pthread -o throughput throughput.c
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static unsigned long long done[64];

static unsigned long long __attribute__((noinline)) unit(unsigned long long x)
{
	for (int i = 0; i < 1000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *work(void *arg)
{
	long k = (long)arg;
	unsigned long long x = k + 1, n = 0;
	while (!stop) {
		x = unit(x);
		n++;
	}
	done[k] = n + (x == 0);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	int seconds = argc > 2 ? atoi(argv[2]) : 4;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return 2;
	printf("ready pid=%d\n", getpid());
	fflush(stdout);
	for (long k = 0; k < threads; k++)
		pthread_create(&t[k], NULL, work, (void *)k);
	sleep(seconds);
	stop = 1;
	unsigned long long sum = 0;
	for (int k = 0; k < threads; k++) {
		pthread_join(t[k], NULL);
		sum += done[k];
	}
	printf("units=%llu\n", sum);
	return 0;
}
