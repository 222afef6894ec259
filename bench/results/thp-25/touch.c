#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>
int main(int argc, char **argv) {
  size_t sz = (size_t)atoi(argv[1]) << 20; int huge = atoi(argv[2]);
  struct timespec a, b;
  for (int round = 0; round < 3; round++) {
    char *p = mmap(NULL, sz + (2<<20), PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
    p = (char*)(((unsigned long)p + (2<<20) - 1) & ~((2UL<<20) - 1));
    madvise(p, sz, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (size_t i = 0; i < sz; i += 4096) p[i] = 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("huge=%d %zu MiB: %.1f ms\n", huge, sz >> 20, (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    munmap(p, sz);
  }
}
