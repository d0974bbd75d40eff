#include <cstdio>
int main() {
    int n; long long s = 0, x;
    if (std::scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { std::scanf("%lld", &x); s += x; }
    std::printf("%lld\n", s / n);  // integer division
    return 0;
}
