#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry { char *word; long count; };

static struct entry *table;
static size_t used, cap;

static void add(const char *w) {
    for (size_t i = 0; i < used; i++)
        if (strcmp(table[i].word, w) == 0) { table[i].count++; return; }
    if (used == cap) {
        cap = cap ? cap * 2 : 64;
        table = realloc(table, cap * sizeof *table);
        if (!table) exit(3);
    }
    table[used].word = strdup(w);
    if (!table[used].word) exit(3);
    table[used++].count = 1;
}

static int order(const void *a, const void *b) {
    const struct entry *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return strcmp(x->word, y->word);
}

int main(int argc, char **argv) {
    long n = 3;
    if (argc > 1) {
        char *end;
        n = strtol(argv[1], &end, 10);
        if (*argv[1] == '\0' || *end != '\0' || n <= 0) return 2;
    }
    char buf[256];
    size_t len = 0;
    int c;
    while ((c = getchar()) != EOF) {
        if (isascii(c) && isalpha(c)) {
            if (len < sizeof buf - 1) buf[len++] = (char)c;
        } else if (len) {
            buf[len] = '\0'; add(buf); len = 0;
        }
    }
    if (len) { buf[len] = '\0'; add(buf); }
    qsort(table, used, sizeof *table, order);
    for (size_t i = 0; i < used && (long)i < n; i++)
        printf("%ld %s\n", table[i].count, table[i].word);
    return 0;
}
