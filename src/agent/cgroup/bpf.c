/*
 * bpf.c - the cgroup v2 device program (bpf.h).
 *
 * The kernel runs a BPF_PROG_TYPE_CGROUP_DEVICE program on every open or
 * mknod of a device file by a process of the cgroup, with a context of
 * three 32-bit words (struct bpf_cgroup_dev_ctx): access_type (access << 16
 * | type, type 1 block and 2 char), major and minor. The program returns 1
 * to allow, 0 to deny. Ours is a straight line of tests, one block per
 * allowed device, as runc and crun generate:
 *
 *     r2 = ctx->access_type & 0xffff      device type
 *     r4 = ctx->major
 *     r5 = ctx->minor
 *     per rule:  if r2 != TYPE goto next
 *                if r4 != MAJOR goto next
 *                if r5 != MINOR goto next      (left out for any minor)
 *                r0 = 1; exit
 *     r0 = 0; exit
 *
 * The verifier accepts it without loops or helpers. Its cost is a few
 * instructions per rule on each device open, nothing on other system calls.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup/bpf.h"

#define MAX_RULES 200

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    struct bpf_insn i;
    memset(&i, 0, sizeof i);
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

static long sys_bpf(int cmd, union bpf_attr *attr) {
    return syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

int cg_bpf_attach_devices(int dirfd, const cg_dev_rule_t *rules, size_t n) {
    if (n > MAX_RULES) return -E2BIG;
    struct bpf_insn prog[5 + MAX_RULES * 5 + 2];
    size_t k = 0;
    prog[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0);
    prog[k++] = insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    prog[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0);
    prog[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0);
    for (size_t r = 0; r < n; r++) {
        int32_t type = rules[r].type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
        bool any = rules[r].minor < 0;
        int16_t len = any ? 4 : 5;    /* the block's instructions */
        int16_t i = 0;
        prog[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, (int16_t)(len - ++i), type);
        prog[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, (int16_t)(len - ++i),
                         (int32_t)rules[r].major);
        if (!any)
            prog[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, (int16_t)(len - ++i),
                             (int32_t)rules[r].minor);
        prog[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
        prog[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    }
    prog[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    prog[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t)(uintptr_t)prog;
    attr.insn_cnt = (uint32_t)k;
    attr.license = (uint64_t)(uintptr_t)"GPL";
    int pfd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
    if (pfd < 0) return -errno;
    memset(&attr, 0, sizeof attr);
    attr.target_fd = (uint32_t)dirfd;
    attr.attach_bpf_fd = (uint32_t)pfd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    int rc = sys_bpf(BPF_PROG_ATTACH, &attr) == 0 ? 0 : -errno;
    /* The attachment holds the program; our descriptor is not needed. */
    close(pfd);
    return rc;
}
