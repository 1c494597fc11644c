/* A CPU burner with one known hot function, for tare profile's tests. Built with frame pointers
 * (-fno-omit-frame-pointer -O1) so that its call chain is tare_hot_spin <- burn <- main. It prints its PID
 * and spins until killed. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) unsigned long tare_hot_spin(unsigned long n) {
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * i;
	return x;
}

__attribute__((noinline)) unsigned long burn(void) {
	unsigned long s = 0;
	for (int i = 0; i < 1000; i++)
		s += tare_hot_spin(10000);
	return s;
}

int main(void) {
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		burn();
}
