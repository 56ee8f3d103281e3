#!/bin/sh
# check-purity.sh LIB - fails if the static library references any I/O,
# socket, thread, clock or rand symbol: the core must stay pure (DESIGN.md).
set -eu
lib=${1:?usage: check-purity.sh libsluice.a}
bad=$(nm -u "$lib" | awk '{print $2}' | grep -E '^(f?open|fopen64|open64|openat|f?read|f?write|fprintf|printf|vfprintf|puts|fputs|putchar|fputc|perror|f?close|fflush|fseek|ftell|stat|lstat|fstat|socket|connect|bind|listen|accept|accept4|send|recv|sendto|recvfrom|select|poll|epoll_.*|pthread_.*|thrd_.*|mtx_.*|time|clock|clock_gettime|gettimeofday|nanosleep|sleep|usleep|rand|srand|random|srandom|rand_r|drand48|lrand48|getrandom|getenv|syslog|system|fork|exec.*|dlopen|dlsym)$' || true)
if [ -n "$bad" ]; then
    echo "check-purity: $lib references forbidden symbols:" >&2
    echo "$bad" | sed 's/^/  /' >&2
    exit 1
fi
echo "check-purity: $lib is pure ($(nm -u "$lib" | awk '{print $2}' | sort -u | tr '\n' ' '))"
