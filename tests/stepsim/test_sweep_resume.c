/* stepsim/test_sweep_resume.c - a sweep killed with SIGKILL in the middle, resumed (and killed again, and
 * left with a torn last line, and resumed) ends with exactly the lines of an uninterrupted run:
 * no line lost, none duplicated, none torn. The sweep runs as a child process (STEPSIM_BIN). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "sweep_test_util.h"
#include "test_cli_run.h"

#define GRID STEPSIM_FIXTURE_DIR "/sweep/estimates.json"
#define POINTS 864

static size_t count_lines(const char *path) {
    size_t len = 0, n = 0;
    char *text = sweep_read_file(path, &len);
    for (size_t i = 0; text && i < len; i++)
        n += text[i] == '\n';
    free(text);
    return n;
}

/* Start `stepsim sweep GRID --out out [flag]`, SIGKILL it once out holds at least min_lines lines,
 * and return how many it held just after the kill. */
static size_t run_and_kill(const char *out, const char *flag, size_t min_lines) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(STEPSIM_BIN, "stepsim", "sweep", GRID, "--out", out, flag, (char *)NULL);
        _exit(127);
    }
    struct timespec ms = {0, 1000000};
    for (int waited = 0;; waited++) {
        if (count_lines(out) >= min_lines)
            break;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            fail_msg("the sweep ended (status %d) before %zu lines were written", status, min_lines);
        if (waited > 60000)
            fail_msg("no %zu lines after 60 s", min_lines);
        nanosleep(&ms, NULL);
    }
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("the sweep was not killed mid-way (status %d): it finished too early", status);
    return count_lines(out);
}

static void kill_and_resume(void **state) {
    (void)state;
    char ref[128], out[128];
    sweep_scratch(ref, sizeof ref, "ref.jsonl");
    sweep_scratch(out, sizeof out, "killed.jsonl");
    remove(ref);
    remove(out);
    /* The uninterrupted run. */
    cli_run_t r = cli_run("sweep", GRID, "--out", ref, NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    assert_int_equal(count_lines(ref), POINTS);

    /* Killed twice, at different places. */
    size_t first = run_and_kill(out, NULL, 40);
    assert_true(first >= 40 && first < POINTS);
    size_t second = run_and_kill(out, "--resume", first + 100);
    assert_true(second > first && second < POINTS);

    /* A torn last line, as a kill inside a write would leave: --resume cuts it. */
    static const char torn[] = "{\"id\":\"0123456789abcdef\",\"command\":\"estimate\",\"scen";
    int fd = open(out, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, torn, sizeof torn - 1), (ssize_t)(sizeof torn - 1));
    close(fd);

    r = cli_run("sweep", GRID, "--out", out, "--resume", "--json", NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err, "cut a torn last line"));
    cJSON *s = cJSON_Parse(r.out);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(s, "already_done")->valuedouble, (int)second);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(s, "written")->valuedouble, POINTS - (int)second);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(s, "truncated_bytes")->valuedouble,
                     (int)sizeof torn - 1);
    cJSON_Delete(s);
    cli_run_free(&r);

    /* Equal to the uninterrupted run as sets of lines; every id once. */
    assert_true(sweep_same_line_sets(ref, out));
    size_t lines = 0, ids = 0;
    sweep_count_ids(out, &lines, &ids);
    assert_int_equal(lines, POINTS);
    assert_int_equal(ids, POINTS);
    size_t len = 0;
    char *text = sweep_read_file(out, &len);
    assert_true(len > 0 && text[len - 1] == '\n');
    free(text);
    remove(ref);
    remove(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kill_and_resume),
    };
    return cmocka_run_group_tests_name("stepsim.sweep_resume", tests, NULL, NULL);
}
