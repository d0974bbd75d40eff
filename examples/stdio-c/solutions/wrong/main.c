#include <stdio.h>
int main(void) {
    int n; long a, b;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { scanf("%ld %ld", &a, &b); printf("%ld ", a < b ? a : b); }
    printf("\n");
    return 0;
}
