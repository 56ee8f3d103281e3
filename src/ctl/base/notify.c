/*
 * notify.c - the notifications' queue and its worker thread (notify.h).
 *
 * The queue is a singly linked FIFO under one mutex; the worker sleeps on a
 * condition variable. Events cross threads as plain malloc'd blocks: the
 * loop's allocator (sl_x*) counts its blocks for the tests' leak checks
 * and belongs to the loop's thread alone.
 *
 * A command is started with fork and execve from the worker: the child
 * only calls async-signal-safe functions (setpgid, dup2, close, execve)
 * before it becomes /bin/sh, and its environment is built before the fork.
 * Descriptors above 2 are closed in it, so that a slow command holds no
 * socket of sluiced. The child is waited for by pid (WNOHANG, naps from
 * 0.2 ms doubling to 10 ms), never by waitpid(-1), which would reap children not its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/notify.h"
#include "log.h"

extern char **environ;

typedef struct item {
    struct item *next;
    char *json;
    char *env[4];        /* "SLUICE_EVENT=...", ... (NULL where absent) */
} item_t;

struct ctl_notifier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stop;
    item_t *head, *tail;
    size_t n, max;
    char *command;
    char *host, *port, *path; /* the webhook's parts; host NULL: none */
    int64_t timeout_ms;
    ctl_notify_stats_t st;
};

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static char *env_pair(const char *k, const char *v) {
    if (v == NULL)
        return NULL;
    size_t n = strlen(k) + strlen(v) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s=%s", k, v);
    return p;
}

static void item_free(item_t *it) {
    free(it->json);
    for (int i = 0; i < 4; i++)
        free(it->env[i]);
    free(it);
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the command ---- */

/* Writes all of buf to fd until the deadline; false on an error. */
static bool write_all(int fd, const char *buf, size_t len, int64_t deadline) {
    while (len > 0) {
        int64_t left = deadline - mono_ms();
        struct pollfd p = {fd, POLLOUT, 0};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return false;
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        buf += w;
        len -= (size_t)w;
    }
    return true;
}

static bool run_command(ctl_notifier_t *n, const item_t *it) {
    size_t ne = 0;
    while (environ && environ[ne])
        ne++;
    char **envp = malloc((ne + 5) * sizeof *envp);
    if (envp == NULL)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "SLUICE_", 7) != 0)
            envp[k++] = environ[i];
    for (int i = 0; i < 4; i++)
        if (it->env[i])
            envp[k++] = it->env[i];
    envp[k] = NULL;
    char *argv[] = {"/bin/sh", "-c", n->command, NULL};
    long maxfd = sysconf(_SC_OPEN_MAX);
    if (maxfd < 0 || maxfd > 65536)
        maxfd = 65536;
    int pfd[2];
    if (pipe(pfd) < 0) {
        free(envp);
        return false;
    }
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(pfd[0], 0);
        if (devnull >= 0) {
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        for (long fd = 3; fd < maxfd; fd++)
            close((int)fd);
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    free(envp);
    if (devnull >= 0)
        close(devnull);
    close(pfd[0]);
    if (pid < 0) {
        close(pfd[1]);
        return false;
    }
    int64_t deadline = mono_ms() + n->timeout_ms;
    fcntl(pfd[1], F_SETFL, O_NONBLOCK);
    write_all(pfd[1], it->json, strlen(it->json), deadline); /* a command may ignore stdin */
    close(pfd[1]);
    int status = 0;
    long nap_us = 200; /* doubles to 10 ms: a quick command costs no 10 ms nap */
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return false;
        if (mono_ms() >= deadline || __atomic_load_n(&n->stop, __ATOMIC_RELAXED)) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            sl_log(SL_LOG_WARN, "notify", "command killed: %s",
                   mono_ms() >= deadline ? "it ran past notify.timeout" : "sluiced stops");
            return false;
        }
        struct timespec ts = {0, nap_us * 1000};
        nanosleep(&ts, NULL);
        nap_us = nap_us < 5000 ? 2 * nap_us : 10000;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        sl_log(SL_LOG_WARN, "notify", "command failed: %s %d",
               WIFEXITED(status) ? "exit status" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return false;
    }
    return true;
}

/* ---- the webhook ---- */

static int connect_by(const char *host, const char *port, int64_t deadline) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
            close(fd);
            fd = -1;
            continue;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int64_t left = deadline - mono_ms();
        int err = 0;
        socklen_t el = sizeof err;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static bool post_webhook(ctl_notifier_t *n, const item_t *it) {
    int64_t deadline = mono_ms() + n->timeout_ms;
    int fd = connect_by(n->host, n->port, deadline);
    if (fd < 0) {
        sl_log(SL_LOG_WARN, "notify", "webhook %s:%s: cannot connect", n->host, n->port);
        return false;
    }
    size_t blen = strlen(it->json);
    char head[1024];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: sluiced\r\n\r\n",
                      n->path, n->host, n->port, blen);
    bool ok = hl > 0 && (size_t)hl < sizeof head && write_all(fd, head, (size_t)hl, deadline) &&
              write_all(fd, it->json, blen, deadline);
    char resp[64];
    size_t got = 0;
    while (ok && got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = deadline - mono_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
            ok = false;
            break;
        }
        ssize_t r = read(fd, resp + got, sizeof resp - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    resp[got] = '\0';
    int code = 0;
    if (ok && sscanf(resp, "HTTP/%*d.%*d %d", &code) == 1 && code >= 200 && code < 300)
        return true;
    sl_log(SL_LOG_WARN, "notify", "webhook %s:%s%s: %s %d", n->host, n->port, n->path,
           ok ? "answered" : "no answer within the timeout, status", code);
    return false;
}

/* ---- the worker ---- */

static void *worker(void *arg) {
    ctl_notifier_t *n = arg;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->stop && n->head == NULL)
            pthread_cond_wait(&n->cv, &n->mu);
        if (n->stop)
            break;
        item_t *it = n->head;
        n->head = it->next;
        if (n->head == NULL)
            n->tail = NULL;
        n->n--;
        pthread_mutex_unlock(&n->mu);
        int ok = 0, bad = 0;
        if (n->command)
            run_command(n, it) ? ok++ : bad++;
        if (n->host)
            post_webhook(n, it) ? ok++ : bad++;
        item_free(it);
        pthread_mutex_lock(&n->mu);
        n->st.delivered += (uint64_t)ok;
        n->st.failed += (uint64_t)bad;
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* http://HOST[:PORT][/PATH] into n's parts (sitecfg.c checked the form). */
static bool split_url(ctl_notifier_t *n, const char *url) {
    if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *h = url + 7;
    size_t hl = strcspn(h, ":/");
    const char *rest = h + hl;
    n->host = strndup(h, hl);
    if (*rest == ':') {
        size_t pl = strcspn(rest + 1, "/");
        n->port = strndup(rest + 1, pl);
        rest += 1 + pl;
    } else {
        n->port = strdup("80");
    }
    n->path = strdup(*rest ? rest : "/");
    return n->host && n->port && n->path && hl > 0;
}

static void free_parts(ctl_notifier_t *n) {
    free(n->command);
    free(n->host);
    free(n->port);
    free(n->path);
}

int ctl_notifier_start(ctl_notifier_t **out, const char *command, const char *webhook,
                       size_t queue_max, int64_t timeout_ms, char *err, size_t errlen) {
    *out = NULL;
    ctl_notifier_t *n = calloc(1, sizeof *n);
    if (n == NULL)
        abort();
    n->max = queue_max ? queue_max : 1;
    n->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    n->command = dup_or_null(command);
    if (webhook && !split_url(n, webhook)) {
        snprintf(err, errlen, "notify.webhook: \"%s\" is not http://HOST[:PORT]/PATH", webhook);
        free_parts(n);
        free(n);
        return -1;
    }
    pthread_mutex_init(&n->mu, NULL);
    pthread_cond_init(&n->cv, NULL);
    int rc = pthread_create(&n->thread, NULL, worker, n);
    if (rc != 0) {
        snprintf(err, errlen, "notify: cannot start its thread: %s", strerror(rc));
        pthread_mutex_destroy(&n->mu);
        pthread_cond_destroy(&n->cv);
        free_parts(n);
        free(n);
        return -1;
    }
    *out = n;
    return 0;
}

bool ctl_notifier_post(ctl_notifier_t *n, const char *json, const char *event, uint64_t job,
                       const char *mail_user, const char *subject) {
    pthread_mutex_lock(&n->mu);
    bool full = n->n >= n->max;
    if (full) {
        uint64_t d = ++n->st.dropped;
        pthread_mutex_unlock(&n->mu);
        if (d % 100 == 1)
            sl_log(SL_LOG_WARN, "notify", "queue full (%zu events): dropped job=%llu event=%s "
                   "(%llu dropped so far)", n->max, (unsigned long long)job, event,
                   (unsigned long long)d);
        return false;
    }
    pthread_mutex_unlock(&n->mu);
    item_t *it = calloc(1, sizeof *it);
    if (it == NULL)
        abort();
    char id[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)job);
    it->json = strdup(json);
    it->env[0] = env_pair("SLUICE_EVENT", event);
    it->env[1] = env_pair("SLUICE_JOB_ID", id);
    it->env[2] = env_pair("SLUICE_MAIL_USER", mail_user);
    it->env[3] = env_pair("SLUICE_SUBJECT", subject);
    if (it->json == NULL)
        abort();
    pthread_mutex_lock(&n->mu);
    if (n->tail)
        n->tail->next = it;
    else
        n->head = it;
    n->tail = it;
    n->n++;
    n->st.posted++;
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    return true;
}

void ctl_notifier_stats(ctl_notifier_t *n, ctl_notify_stats_t *out) {
    pthread_mutex_lock(&n->mu);
    *out = n->st;
    out->queued = n->n;
    pthread_mutex_unlock(&n->mu);
}

void ctl_notifier_stop(ctl_notifier_t *n) {
    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    __atomic_store_n(&n->stop, true, __ATOMIC_RELAXED); /* also read by a delivery under way */
    pthread_cond_signal(&n->cv);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    for (item_t *it = n->head, *next; it; it = next) {
        next = it->next;
        item_free(it);
    }
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->cv);
    free_parts(n);
    free(n);
}
