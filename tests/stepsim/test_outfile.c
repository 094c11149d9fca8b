/* test_outfile.c - output files are written whole or not at all (output/outfile.h, docs/cli.md): no
 * temporary file after a run, a target that cannot be created is exit 2 with one line and no file,
 * two writers of one path never share a temporary file, and SIGTERM during a trace removes it (the
 * stepsim binary as a child process, STEPSIM_BIN). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "outfile.h"
#include "test_cli_run.h"

#define SMALL "--model", "gpt3", "--gpus", "64", "--gbs", "16", "--pp", "4", "--dp", "2"
#define MODEL "{\"seq_len\":512,\"hidden\":1024,\"heads\":8,\"layers\":4,\"ffn_hidden\":4096}"
#define SMALL_CMP "--model", MODEL, "--gpus", "8", "--nvs", "1", "--tp", "4", "--pp", "1", "--gbs", "8"

/* The entries of dir (dot files included, "." and ".." not), names joined by '|' into buf. */
static int entries(const char *dir, char *buf, size_t n) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int count = 0;
    buf[0] = '\0';
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        count++;
        strncat(buf, e->d_name, n - strlen(buf) - 2);
        strcat(buf, "|");
    }
    closedir(d);
    return count;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void rm_rf(const char *dir) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int have_gnuplot(void) {
    return system("gnuplot --version >/dev/null 2>&1") == 0;
}

/* Every output of every command: after the run the directory holds exactly the outputs, complete. */
static void test_no_temporary_after_success(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-outfile-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace[96], gml[96], dot[96], csv[96], png[96], names[512];
    snprintf(trace, sizeof trace, "%s/t.json", dir);
    snprintf(gml, sizeof gml, "%s/x.graphml", dir);
    snprintf(dot, sizeof dot, "%s/x.dot", dir);
    snprintf(csv, sizeof csv, "%s/c.csv", dir);
    snprintf(png, sizeof png, "%s/c.png", dir);
    put(trace, "an older trace"); /* replaced whole */

    cli_run_t r = cli_run("run", SMALL, "--trace", trace, NULL);
    if (r.rc != 0)
        fail_msg("run: exit %d: %s", r.rc, r.err);
    cli_run_free(&r);
    size_t len = 0;
    char *text = slurp(trace, &len);
    assert_true(len > 2 && strcmp(text + len - 3, "}}\n") == 0);
    cJSON *doc = cJSON_Parse(text);
    assert_non_null(doc);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(doc, "metadata"));
    cJSON_Delete(doc);
    free(text);

    r = cli_run("topo", "--topology", "fat-tree", "--graphml", gml, "--dot", dot, NULL);
    assert_int_equal(r.rc, 0);
    cli_run_free(&r);
    text = slurp(gml, &len);
    assert_non_null(strstr(text, "</graphml>"));
    free(text);
    text = slurp(dot, &len);
    assert_true(len > 2 && text[len - 2] == '}');
    free(text);

    r = cli_run("compare", SMALL_CMP, "--topologies", "fat-tree", "--csv", csv, NULL);
    if (r.rc != 0)
        fail_msg("compare: exit %d: %s", r.rc, r.err);
    cli_run_free(&r);
    text = slurp(csv, &len);
    assert_true(strncmp(text, "topology,step_time_s", 20) == 0);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, 3); /* header, the ideal reference and fat-tree */
    free(text);
    int expect = 4;
    if (have_gnuplot()) {
        r = cli_run("compare", SMALL_CMP, "--topologies", "fat-tree", "--plot", png, NULL);
        if (r.rc != 0)
            fail_msg("compare --plot: exit %d: %s", r.rc, r.err);
        cli_run_free(&r);
        text = slurp(png, &len);
        assert_true(len > 8 && memcmp(text, "\x89PNG", 4) == 0);
        free(text);
        expect = 5;
    }
    const int n = entries(dir, names, sizeof names);
    if (n != expect)
        fail_msg("%d entries, want %d (no temporary file): %s", n, expect, names);
    rm_rf(dir);
}

/* A target that cannot be created: exit 2, one line naming the option and the path, no file. */
static void test_uncreatable_target(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-outfile-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char file[96], in_missing[128], under_file[128], names[512];
    snprintf(file, sizeof file, "%s/plain", dir);
    put(file, "x");
    snprintf(in_missing, sizeof in_missing, "%s/missing/out.png", dir);
    snprintf(under_file, sizeof under_file, "%s/plain/out.png",
             dir); /* a file as the directory (even root) */
    const char *targets[] = {in_missing, under_file};
    for (int t = 0; t < 2; t++) {
        const char *p = targets[t];
        struct {
            const char *option;
            cli_run_t r;
        } cases[] = {
            {"--trace", cli_run("run", SMALL, "--trace", p, NULL)},
            {"--graphml", cli_run("topo", "--topology", "fat-tree", "--graphml", p, NULL)},
            {"--dot", cli_run("topo", "--topology", "fat-tree", "--dot", p, NULL)},
            {"--csv", cli_run("compare", SMALL_CMP, "--topologies", "fat-tree", "--csv", p, NULL)},
            {"--plot", cli_run("compare", SMALL_CMP, "--topologies", "fat-tree", "--plot", p, NULL)},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char want[200];
            snprintf(want, sizeof want, "%s %s: cannot create", cases[i].option, p);
            if (cases[i].r.rc != 2 || cli_run_lines(cases[i].r.err) != 1 || !strstr(cases[i].r.err, want))
                fail_msg("%s %s: exit %d, stderr \"%s\"; want exit 2 and one line with \"%s\"",
                         cases[i].option, p, cases[i].r.rc, cases[i].r.err, want);
            cli_run_free(&cases[i].r);
        }
    }
    /* a destination that is a directory: exit 2, the temporary file removed */
    cli_run_t r = cli_run("topo", "--topology", "fat-tree", "--dot", dir, NULL);
    assert_int_equal(r.rc, 2);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "--dot"));
    cli_run_free(&r);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    r = cli_run("topo", "--topology", "fat-tree", "--dot", sub, NULL);
    assert_int_equal(r.rc, 2);
    assert_int_equal(cli_run_lines(r.err), 1);
    assert_non_null(strstr(r.err, "cannot rename into place"));
    cli_run_free(&r);
    const int n = entries(dir, names, sizeof names);
    if (n != 2) /* "plain" and "sub" only */
        fail_msg("left behind: %s", names);
    rm_rf(dir);
}

/* Two writers of one path get two temporary files; the one committed last wins whole. A temporary
 * name already in the directory (another run's, or the fixed PATH.tmp of older versions) is left
 * alone. */
static void test_unique_temporaries(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-outfile-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[96], names[512];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    cli_diag_t d;
    memset(&d, 0, sizeof d);
    outfile_t a, b;
    assert_int_equal(outfile_open(&a, "--csv", path, &d), CLI_OK);
    assert_int_equal(outfile_open(&b, "--csv", path, &d), CLI_OK);
    assert_string_not_equal(outfile_tmp_path(&a), outfile_tmp_path(&b));
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/.out.csv.", dir);
    assert_true(strncmp(outfile_tmp_path(&a), prefix, strlen(prefix)) == 0);
    assert_true(strncmp(outfile_tmp_path(&b), prefix, strlen(prefix)) == 0);
    fputs("from a\n", a.f);
    fputs("from b\n", b.f);
    assert_int_equal(access(path, F_OK), -1); /* nothing at the target before a commit */
    assert_int_equal(outfile_commit(&a, &d), CLI_OK);
    char *text = slurp(path, NULL);
    assert_string_equal(text, "from a\n");
    free(text);
    assert_int_equal(outfile_commit(&b, &d), CLI_OK);
    text = slurp(path, NULL);
    assert_string_equal(text, "from b\n");
    free(text);
    /* a discarded writer leaves the target as it was */
    outfile_t c;
    assert_int_equal(outfile_reserve(&c, "--plot", path, &d), CLI_OK);
    assert_null(c.f);
    assert_int_equal(access(outfile_tmp_path(&c), F_OK), 0);
    outfile_discard(&c);
    outfile_discard(&c); /* twice is harmless */
    text = slurp(path, NULL);
    assert_string_equal(text, "from b\n");
    free(text);
    assert_int_equal(entries(dir, names, sizeof names), 1);

    /* through the command line, with other runs' temporary files already there */
    char trace[96], other[128], old[128];
    snprintf(trace, sizeof trace, "%s/t.json", dir);
    snprintf(other, sizeof other, "%s/.t.json.AbC123", dir);
    snprintf(old, sizeof old, "%s/t.json.tmp", dir);
    put(other, "another run's");
    put(old, "an older run's");
    for (int k = 0; k < 2; k++) {
        cli_run_t r = cli_run("run", SMALL, "--trace", trace, NULL);
        assert_int_equal(r.rc, 0);
        cli_run_free(&r);
    }
    text = slurp(other, NULL);
    assert_string_equal(text, "another run's");
    free(text);
    text = slurp(old, NULL);
    assert_string_equal(text, "an older run's");
    free(text);
    cJSON *doc = cJSON_Parse(text = slurp(trace, NULL));
    assert_non_null(doc);
    cJSON_Delete(doc);
    free(text);
    if (entries(dir, names, sizeof names) != 4) /* out.csv, t.json and the two planted files */
        fail_msg("unexpected entries: %s", names);
    rm_rf(dir);
}

/* SIGTERM while the trace is being written: the process dies of the signal and the temporary file
 * is gone. The default scenario's whole trace (--trace-ranks all: some 420 MB; without it the trace
 * is cut to 26 MB and can be done in 0.3 s) takes seconds to write; the signal comes 0.3 s after the
 * temporary file appears. */
static void test_sigterm_removes_temporary(void **state) {
    (void)state;
    char dir[] = "/tmp/stepsim-outfile-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace[96], names[512];
    snprintf(trace, sizeof trace, "%s/t.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(STEPSIM_BIN, "stepsim", "run", "--trace", trace, "--trace-ranks", "all", (char *)NULL);
        _exit(127);
    }
    struct timespec ms = {0, 1000000};
    for (int waited = 0; entries(dir, names, sizeof names) == 0; waited++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            fail_msg("stepsim ended (status %d) before creating its temporary file", status);
        if (waited > 4000) {
            kill(pid, SIGKILL);
            fail_msg("no temporary file after 4 s");
        }
        nanosleep(&ms, NULL);
    }
    assert_true(strncmp(names, ".t.json.", 8) == 0);
    struct timespec wait = {0, 300000000};
    nanosleep(&wait, NULL);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM)
        fail_msg("stepsim did not die of SIGTERM mid-trace (status %d): it finished too early?", status);
    const int n = entries(dir, names, sizeof names);
    if (n != 0)
        fail_msg("left behind after SIGTERM: %s", names);
    rm_rf(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_temporary_after_success),
        cmocka_unit_test(test_uncreatable_target),
        cmocka_unit_test(test_unique_temporaries),
        cmocka_unit_test(test_sigterm_removes_temporary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
