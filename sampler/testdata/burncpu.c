/*
 * burncpu: an LD_PRELOAD library whose constructor burns about 0.2 s of user
 * time and 0.2 s of system time in the main thread before main() runs, so a
 * victim captured with capture.sh has non-zero utime and stime in its stat
 * files (a hung victim otherwise shows 0 ticks, which cannot tell a parsed
 * CPU time from an unparsed one).
 *
 * Build: gcc -O2 -shared -fPIC -o /tmp/burncpu.so burncpu.c
 * Use:   LD_PRELOAD=/tmp/burncpu.so /tmp/pipeholder
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static double cpu(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((constructor)) static void burn(void)
{
	static char buf[1 << 20];
	volatile unsigned long x = 0;
	double start = cpu(CLOCK_THREAD_CPUTIME_ID);
	int fd;

	while (cpu(CLOCK_THREAD_CPUTIME_ID) - start < 0.2)
		for (int i = 0; i < 100000; i++)
			x += i;
	/* Reading /dev/zero is spent clearing buf in the kernel: system time. */
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	start = cpu(CLOCK_THREAD_CPUTIME_ID);
	while (cpu(CLOCK_THREAD_CPUTIME_ID) - start < 0.2)
		if (read(fd, buf, sizeof buf) < 0)
			break;
	close(fd);
}
