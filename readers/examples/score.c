/* Score any GGUF reader on the suite with nothing but a C compiler: cc -o score score.c
 *   ./score SUITE_DIR PROFILE 'READER COMMAND'      (PROFILE: 1 = spec, 2 = ggml, 3 = llama.cpp)
 * It reads SUITE_DIR/cases.tsv (file, then the expected outcome under spec, ggml, llama.cpp) and runs the
 * command with each case's path appended: exit 0 = accept, 1-127 = reject, a signal or 128+ = crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s SUITE_DIR PROFILE(1-3) 'READER'\n", argv[0]); return 2; }
    char line[4096], cmd[8192], *col[4];
    int profile = atoi(argv[2]), pass = 0, fail = 0;
    snprintf(cmd, sizeof cmd, "%s/cases.tsv", argv[1]);
    FILE *tsv = fopen(cmd, "r");
    if (!tsv || !fgets(line, sizeof line, tsv)) { perror(cmd); return 2; }  /* skip the header */
    while (fgets(line, sizeof line, tsv)) {
        line[strcspn(line, "\n")] = 0;
        col[0] = strtok(line, "\t");
        for (int i = 1; i < 4; i++) col[i] = strtok(NULL, "\t");
        snprintf(cmd, sizeof cmd, "%s '%s/%s' >/dev/null 2>&1", argv[3], argv[1], col[0]);
        int st = system(cmd);
        const char *got = WIFSIGNALED(st) || WEXITSTATUS(st) >= 128 ? "crash"
                          : WEXITSTATUS(st) == 0 ? "accept" : "reject";
        const char *want = col[profile];
        if (strcmp(got, "crash") && (!strcmp(want, "either") || !strcmp(want, got))) { pass++; continue; }
        fail++;
        printf("%s\t%s\t(expected %s)\n", got, col[0], want);
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail != 0;
}
