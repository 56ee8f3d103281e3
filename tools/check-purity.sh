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
# What the core needs from outside: the symbols left undefined that no
# object of the archive defines (calls between the core's own files are not).
defined=$(nm -g --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
external=$(nm -u "$lib" | awk 'NF == 2 {print $2}' | sort -u | grep -vxF "$defined" | tr '\n' ' ')
echo "check-purity: $lib is pure; it needs from outside only: $external"
