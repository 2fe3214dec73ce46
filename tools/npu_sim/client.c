/*
 * npu-sim-client: the thin client of a simulated node's resident simulator (tools/npu_sim/server.py).
 *
 * usage: npu-sim-client SOCKET N PYTHON ARG... TOOL [TOOL ARGS...]
 *
 * The N words after N are the command that runs the tool without the server (the interpreter and its
 * arguments up to, not including, TOOL). The client connects to SOCKET and hands the server its
 * standard input, output and error (SCM_RIGHTS), the tool's argv, its environment, working directory,
 * umask and the CPU it used so far; the server forks a copy of the simulator that runs the tool on
 * those descriptors as this user, and answers with the exit status, which the client exits with.
 * When nothing listens on SOCKET the client execs the command instead, so a call never depends on the
 * server. If the client is killed, the server kills the tool's process. docs/simulator-cost.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

#define MAGIC "npusim1"

static void run_without_server(char **command)
{
    execv(command[0], command);
    fprintf(stderr, "npu-sim-client: cannot run %s: %s\n", command[0], strerror(errno));
    _exit(127);
}

static size_t field(char *buf, size_t at, const char *text)
{
    size_t len = strlen(text) + 1;
    if (buf)
        memcpy(buf + at, text, len);
    return at + len;
}

/* The request after its 4-byte length: NUL-terminated fields (magic, client CPU, argc, argv, envc, env, cwd,
   umask). Called once without a buffer to size it. */
static size_t request(char *buf, int argc, char **argv, const char *cpu, const char *cwd, const char *mask)
{
    char count[32];
    size_t at = 0;
    int envc = 0;
    at = field(buf, at, MAGIC);
    at = field(buf, at, cpu);
    snprintf(count, sizeof(count), "%d", argc);
    at = field(buf, at, count);
    for (int i = 0; i < argc; i++)
        at = field(buf, at, argv[i]);
    for (char **e = environ; *e; e++)
        envc++;
    snprintf(count, sizeof(count), "%d", envc);
    at = field(buf, at, count);
    for (char **e = environ; *e; e++)
        at = field(buf, at, *e);
    at = field(buf, at, cwd);
    at = field(buf, at, mask);
    return at;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: npu-sim-client SOCKET N PYTHON ARG... TOOL [ARGS...]\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (n < 1 || 3 + n >= argc) {
        fprintf(stderr, "npu-sim-client: N must count the words of the command before the tool\n");
        return 2;
    }
    char **command = argv + 3;
    int tool_argc = argc - 3 - n;
    char **tool_argv = argv + 3 + n;

    struct sockaddr_un addr;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof(addr.sun_path))
        run_without_server(command);
    strcpy(addr.sun_path, argv[1]);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        run_without_server(command);

    /* descriptors 0-2 as they are; a closed one is handed over as /dev/null */
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = i;
        if (fcntl(i, F_GETFD) < 0)
            fds[i] = open("/dev/null", i == 0 ? O_RDONLY : O_WRONLY);
        if (fds[i] < 0)
            run_without_server(command);
    }

    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd)))
        strcpy(cwd, "/");
    mode_t old = umask(022);
    umask(old);
    char mask[16];
    snprintf(mask, sizeof(mask), "%o", (unsigned)old);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    char cpu[64];
    snprintf(cpu, sizeof(cpu), "%.6f",
             usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6);

    size_t size = request(NULL, tool_argc, tool_argv, cpu, cwd, mask);
    char *buf = malloc(4 + size);
    if (!buf)
        run_without_server(command);
    uint32_t length = (uint32_t)size;
    memcpy(buf, &length, 4);
    request(buf + 4, tool_argc, tool_argv, cpu, cwd, mask);

    struct iovec iov = {.iov_base = buf, .iov_len = 4 + size};
    union {
        char space[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                         .msg_controllen = sizeof(control.space)};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    ssize_t sent;
    do {
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0)
        run_without_server(command); /* nothing ran yet */
    size_t done = (size_t)sent;
    while (done < 4 + size) {
        ssize_t more = send(sock, buf + done, 4 + size - done, MSG_NOSIGNAL);
        if (more < 0 && errno == EINTR)
            continue;
        if (more <= 0) {
            fprintf(stderr, "npu-sim-client: %s: the request could not be sent: %s\n", argv[1], strerror(errno));
            return 1;
        }
        done += (size_t)more;
    }
    for (int i = 0; i < 3; i++)
        if (fds[i] != i)
            close(fds[i]);

    int32_t status;
    size_t got = 0;
    while (got < sizeof(status)) {
        ssize_t r = read(sock, (char *)&status + got, sizeof(status) - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "npu-sim-client: %s: the simulator's server closed the connection before the tool ended\n",
                    argv[1]);
            return 1;
        }
        got += (size_t)r;
    }
    if (status >= 0)
        return status & 0xff;
    /* the tool's process was killed by a signal: end the same way */
    signal(-status, SIG_DFL);
    kill(getpid(), -status);
    return 128 - status;
}
