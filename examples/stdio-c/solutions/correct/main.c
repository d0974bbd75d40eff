#include <stdio.h>
static long gcd(long a, long b) { while (b) { long t = a % b; a = b; b = t; } return a; }
int main(void) {
    int n; long a, b;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { scanf("%ld %ld", &a, &b); printf(i ? " %ld" : "%ld", gcd(a, b)); }
    printf("\n");
    return 0;
}
