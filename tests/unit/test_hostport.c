/*
 * test_hostport.c - "HOST:PORT" and comma-separated lists of them
 * (src/common/hostport.h): an agent's --controller A,B,C, a redirect's
 * leader. Table-driven: what parses to what, and what is refused with
 * which words.
 */
#include <stdio.h>
#include <string.h>

#include "hostport.h"
#include "sluice/error.h"
#include "testutil.h"

static void test_hostport_lists(void **state) {
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *first_host, *first_port, *last_host, *last_port;
    } ok[] = {
        {"127.0.0.1:7071", 1, "127.0.0.1", "7071", "127.0.0.1", "7071"},
        {"ctl1:7071,ctl2:7072,ctl3:7073", 3, "ctl1", "7071", "ctl3", "7073"},
        {" ctl1:1 , [::1]:65535", 2, "ctl1", "1", "::1", "65535"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        sl_hostport_t hp[SL_HOSTPORT_MAX];
        size_t n;
        char err[400];
        if (sl_hostport_list_parse(ok[i].in, hp, SL_HOSTPORT_MAX, &n, err, sizeof err) != 0)
            fail_msg("%s: %s", ok[i].in, err);
        assert_int_equal(n, ok[i].n);
        assert_string_equal(hp[0].host, ok[i].first_host);
        assert_string_equal(hp[0].port, ok[i].first_port);
        assert_string_equal(hp[n - 1].host, ok[i].last_host);
        assert_string_equal(hp[n - 1].port, ok[i].last_port);
    }
    static const struct {
        const char *in;
        const char *err;
    } bad[] = {
        {"", "empty entry"},
        {"ctl1:7071,", "empty entry"},
        {"ctl1", "\"ctl1\" is not HOST:PORT"},
        {":7071", "is not HOST:PORT"},
        {"ctl1:", "is not HOST:PORT"},
        {"ctl1:0", "port \"0\" of \"ctl1:0\" is not a number from 1 to 65535"},
        {"ctl1:65536", "is not a number from 1 to 65535"},
        {"ctl1:70x", "is not a number"},
        {"::1:7071", "IPv6 address goes in brackets"},
        {"a:1,a:1,a:1", "more than 2 addresses"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_hostport_t hp[2];
        size_t n = 9;
        char err[400] = "";
        int rc = sl_hostport_list_parse(bad[i].in, hp, 2, &n, err, sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].err) == NULL || n != 0)
            fail_msg("\"%s\": rc %d n %zu \"%s\" lacks \"%s\"", bad[i].in, rc, n, err, bad[i].err);
    }
}

static void test_hostport_server_urls(void **state) {
    (void)state;
    static const struct {
        const char *in;
        int n;
        const char *out;
    } ok[] = {
        {"http://127.0.0.1:7070/", 1, "http://127.0.0.1:7070"},
        {"ctl1:7070, https://ctl2:7070 ,ctl3:7070//", 3,
         "http://ctl1:7070,https://ctl2:7070,http://ctl3:7070"},
        {"http://h:1/prefix/", 1, "http://h:1/prefix"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char out[512], err[400];
        int n = sl_url_list_normalize(ok[i].in, out, sizeof out, err, sizeof err);
        if (n != ok[i].n || strcmp(out, ok[i].out) != 0)
            fail_msg("\"%s\": %d \"%s\" (%s)", ok[i].in, n, out, n < 0 ? err : "");
    }
    static const struct {
        const char *in;
        const char *err;
    } bad[] = {
        {"", "empty entry"}, {"a:1,,b:1", "empty entry"}, {" / ", "empty entry"},
        {"a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1", "more than 16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[512], err[400] = "";
        int rc = sl_url_list_normalize(bad[i].in, out, sizeof out, err, sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].err) == NULL)
            fail_msg("\"%s\": rc %d \"%s\" lacks \"%s\"", bad[i].in, rc, err, bad[i].err);
    }
    char small[12], err[400];
    assert_int_equal(sl_url_list_normalize("ctl1:7070", small, sizeof small, err, sizeof err),
                     SL_EINVAL);
    assert_non_null(strstr(err, "too long"));
}

static void test_hostport_redirects(void **state) {
    (void)state;
    static const struct {
        const char *from, *loc;
        int rc;
        const char *base, *target;
    } cases[] = {
        {"http://a:7070", "http://b:7070/v1/jobs", 0, "http://b:7070", "/v1/jobs"},
        {"http://a:7070/p", "/p/v1/jobs?state=running", 0, "http://a:7070", "/p/v1/jobs?state=running"},
        {"https://a:7070", "https://b:7070/v1/jobs/3", 0, "https://b:7070", "/v1/jobs/3"},
        {"HTTP://a:1", "http://b:2", 0, "http://b:2", "/"},
        /* never another scheme */
        {"https://a:7070", "http://b:7070/v1/jobs", SL_EINVAL, NULL, NULL},
        {"http://a:7070", "https://b:7070/v1/jobs", SL_EINVAL, NULL, NULL},
        {"http://a:7070", "ftp://b/v1/jobs", SL_EINVAL, NULL, NULL},
        {"http://a:7070", "http:///v1/jobs", SL_EINVAL, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char base[256] = "", target[256] = "", err[400] = "";
        int rc = sl_url_redirect_target(cases[i].from, cases[i].loc, base, sizeof base, target,
                                        sizeof target, err, sizeof err);
        if (rc != cases[i].rc || (rc == 0 && (strcmp(base, cases[i].base) != 0 ||
                                              strcmp(target, cases[i].target) != 0)))
            fail_msg("%s -> %s: rc %d base %s target %s (%s)", cases[i].from, cases[i].loc, rc,
                     base, target, err);
        if (rc != 0 && err[0] == '\0') fail_msg("%s: no reason", cases[i].loc);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_hostport_lists, tu_teardown),
        cmocka_unit_test_teardown(test_hostport_server_urls, tu_teardown),
        cmocka_unit_test_teardown(test_hostport_redirects, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
